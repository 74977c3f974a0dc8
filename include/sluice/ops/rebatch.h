// Rebatch(batch_size, drop_remainder) / Rebatch(batch_sizes, drop_remainder): tf.data.Dataset.rebatch.
//
// Contract (tf.data's documentation: "rebatch(N) is functionally equivalent to unbatch().batch(N), but is
// more efficient, performing one copy instead of two"):
// - Input: a dataset of batches B of any type with BatchTraits<B> Rows/Slice/Concat (std::vector<T>,
//   Tensor, tuples/pairs of Tensors, ParsedExample; see sluice/ops/batching.h).
// - Elements: the input's rows, in order, regrouped into batches of batch_size rows; a new batch may take
//   rows from several input batches (merged with Concat) and one input batch may feed several outputs
//   (Slice: views for tensors, no copy). With a list of sizes the sizes are cycled through in order, as
//   tf's RebatchDatasetV2 does: range(8).batch(4).rebatch({2, 1, 1}) -> [0 1] [2] [3] [4 5] [6] [7].
//   A size of 0 yields an empty batch (a zero-row slice of the current input batch).
// - Remainder: when the input ends, the rows collected for an incomplete batch form a last, shorter batch
//   unless drop_remainder ("whether the last batch should be dropped in the case it has fewer than
//   batch_size[cycle_index] elements").
// - Errors: sizes < 0, an empty size list or one of only zeros make the dataset one InvalidArgument element.
//   An input error element passes through as one error element (rows already collected are kept for the
//   next batch). An input element that is not a batch (a rank-0 tensor, components of different lengths)
//   or batches that cannot be merged (different dtypes or row shapes) give an error element naming the
//   op and the output index: "Rebatch (element 3): ...". Errors do not end the stream.
// - Cardinality: infinite stays infinite, otherwise unknown (rows per input batch are not known statically).
// - Threading/cancellation: synchronous; polls its input inline.
// - Checkpoints (docs/checkpoint.md): saves and restores exactly: the input batch being split (whole,
//   with the next row), the slices collected for the next batch, and the input's state.
//
//   Dataset<Tensor> global = Range(8).Map(ToScalarTensor).Batch(4);   // int64[4] x 2
//   Dataset<Tensor> halves = global.Rebatch(2);                        // int64[2] x 4
#ifndef SLUICE_OPS_REBATCH_H_
#define SLUICE_OPS_REBATCH_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sluice/ops/batching.h"
#include "sluice/ops/cardinality.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/user_function.h"

namespace sluice::ops {

template <class B>
  requires IsConcatenable<B>
class RebatchNode final : public Node<B> {
 public:
  RebatchNode(NodePtr<B> input, std::vector<int64_t> batch_sizes, bool drop_remainder)
      : input_(std::move(input)), batch_sizes_(std::move(batch_sizes)), drop_remainder_(drop_remainder) {}
  std::string_view op_name() const override { return "Rebatch"; }
  DatasetSpec element_spec() const override {
    return BatchedSpec(UnbatchedSpec(input_->element_spec()), StaticBatchSize(*this));
  }
  std::vector<Param> params() const override {
    return {{"batch_sizes", batch_sizes_}, {"drop_remainder", drop_remainder_}};
  }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override {
    return input_->cardinality() == kInfiniteCardinality ? kInfiniteCardinality : kUnknownCardinality;
  }
  std::unique_ptr<Stream<B>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<RebatchStream>(input_->MakeStream(std::move(context)), batch_sizes_, drop_remainder_);
  }
  // State: the size in use, the input batch rows are taken from and the next row, the slices collected
  // and their rows, the output index, input ended; the input at /0 unless it ended.
  absl::StatusOr<std::unique_ptr<Stream<B>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    if constexpr (!HasElementCodec<B>) {
      return reader.Unsupported(path);
    } else {
      uint64_t which = 0;
      std::optional<B> current;
      int64_t offset = 0;
      std::vector<B> pieces;
      int64_t have = 0;
      int64_t index = 0;
      bool ended = false;
      if (absl::Status s = reader.ReadState(path, &which, &current, &offset, &pieces, &have, &index, &ended);
          !s.ok()) {
        return s;
      }
      const int64_t rows = current ? BatchTraits<B>::Rows(*current) : 0;
      int64_t collected = 0;
      for (const B& piece : pieces) collected += BatchTraits<B>::Rows(piece);
      if (which >= batch_sizes_.size() || offset < 0 || offset > rows || have != collected || index < 0 ||
          (have > batch_sizes_[which] && batch_sizes_[which] > 0)) {
        return reader.Corrupt(path, absl::DataLossError(absl::StrCat("size ", which, ", row ", offset, " of ",
                                                                     rows, ", ", have, " rows collected")));
      }
      std::unique_ptr<Stream<B>> input;
      if (!ended) {
        auto restored = input_->RestoreStream(std::move(context), reader, ChildNodePath(path, 0));
        if (!restored.ok()) return restored.status();
        input = std::move(*restored);
      }
      auto stream = std::make_unique<RebatchStream>(std::move(input), batch_sizes_, drop_remainder_);
      stream->which_ = static_cast<size_t>(which);
      stream->current_ = std::move(current);
      stream->offset_ = offset;
      stream->rows_ = rows;
      stream->pieces_ = std::move(pieces);
      stream->have_ = have;
      stream->index_ = index;
      stream->ended_ = ended;
      return stream;
    }
  }

 private:
  class RebatchStream final : public Stream<B> {
   public:
    RebatchStream(std::unique_ptr<Stream<B>> input, std::vector<int64_t> batch_sizes, bool drop_remainder)
        : input_(std::move(input)), batch_sizes_(std::move(batch_sizes)), drop_remainder_(drop_remainder) {}

    PollState Poll(absl::StatusOr<B>* out) override {
      if (ended_) return PollState::kEnd;
      const int64_t target = batch_sizes_[which_];
      while (have_ < target || (target == 0 && !current_)) {
        if (!current_ || offset_ == rows_) {
          PollState state = input_->Poll(&in_);
          if (state == PollState::kPending) return state;
          if (state == PollState::kEnd) {
            ended_ = true;
            if (have_ == 0 || drop_remainder_) {
              pieces_.clear();
              have_ = 0;  // a save after the end writes no rows, and counts none
              return PollState::kEnd;
            }
            break;
          }
          if (!in_.ok()) {
            *out = std::move(in_).status();
            return PollState::kReady;
          }
          absl::Status valid = Validate(*in_);
          if (!valid.ok()) {
            *out = AnnotateError(valid, "Rebatch", index_++);
            return PollState::kReady;
          }
          current_ = std::move(*in_);
          offset_ = 0;
          rows_ = BatchTraits<B>::Rows(*current_);
          continue;
        }
        const int64_t take = std::min(target - have_, rows_ - offset_);
        absl::StatusOr<B> piece = BatchTraits<B>::Slice(*current_, offset_, offset_ + take);
        if (!piece.ok()) return Fail(piece.status(), out);
        pieces_.push_back(std::move(*piece));
        offset_ += take;
        have_ += take;
      }
      if (target == 0 && pieces_.empty()) {
        absl::StatusOr<B> empty = BatchTraits<B>::Slice(*current_, offset_, offset_);
        if (!empty.ok()) return Fail(empty.status(), out);
        pieces_.push_back(std::move(*empty));
      }
      absl::StatusOr<B> batch = BatchTraits<B>::Concat(std::move(pieces_));
      pieces_ = std::vector<B>();
      have_ = 0;
      which_ = (which_ + 1) % batch_sizes_.size();
      if (!batch.ok()) return Fail(batch.status(), out);
      *out = std::move(batch);
      ++index_;
      return PollState::kReady;
    }
    Task<void> WaitReady() override { return input_ ? input_->WaitReady() : Stream<B>::WaitReady(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      if constexpr (!HasElementCodec<B>) {
        return Stream<B>::SaveResult(writer->Unsupported(path, "its batches have no ElementCodec"));
      } else {
        writer->WriteState(path, static_cast<uint64_t>(which_), current_, offset_, pieces_, have_, index_,
                           ended_);
        if (ended_) return Stream<B>::SaveResult(absl::OkStatus());
        return input_->Save(std::move(writer), ChildNodePath(path, 0));
      }
    }

   private:
    static absl::Status Validate(const B& batch) {
      if constexpr (requires { BatchTraits<B>::Validate(batch); }) {
        return BatchTraits<B>::Validate(batch);
      } else {
        return absl::OkStatus();
      }
    }
    // The batch being built is lost; the next one starts afresh.
    PollState Fail(const absl::Status& status, absl::StatusOr<B>* out) {
      pieces_.clear();
      have_ = 0;
      *out = AnnotateError(status, "Rebatch", index_++);
      return PollState::kReady;
    }

    std::unique_ptr<Stream<B>> input_;  // null in a stream restored after its input ended
    std::vector<int64_t> batch_sizes_;
    bool drop_remainder_;

   public:  // set by RestoreStream
    bool ended_ = false;
    size_t which_ = 0;           // index into batch_sizes_ of the batch being built
    std::optional<B> current_;   // the input batch rows are being taken from
    int64_t offset_ = 0;         // first row of current_ not yet taken
    int64_t rows_ = 0;           // rows in current_
    std::vector<B> pieces_;      // slices collected for the batch being built
    int64_t have_ = 0;           // rows in pieces_
    int64_t index_ = 0;          // of the next output, for error messages

   private:
    absl::StatusOr<B> in_;
  };

  NodePtr<B> input_;
  std::vector<int64_t> batch_sizes_;
  bool drop_remainder_;
};

// Dataset::Rebatch's node, or an error source for invalid sizes.
template <class B>
  requires IsConcatenable<B>
NodePtr<B> MakeRebatch(NodePtr<B> input, std::vector<int64_t> batch_sizes, bool drop_remainder) {
  bool any_positive = false;
  for (int64_t size : batch_sizes) {
    if (size < 0) {
      return MakeErrorSource<B>("Rebatch", absl::InvalidArgumentError(absl::StrCat(
                                               "Rebatch: batch sizes must be >= 0, got [",
                                               absl::StrJoin(batch_sizes, ", "), "]")));
    }
    any_positive = any_positive || size > 0;
  }
  if (!any_positive) {
    return MakeErrorSource<B>("Rebatch", absl::InvalidArgumentError(absl::StrCat(
                                             "Rebatch: batch_size must be > 0 (or a list with a positive size), "
                                             "got [", absl::StrJoin(batch_sizes, ", "), "]")));
  }
  return std::make_shared<RebatchNode<B>>(std::move(input), std::move(batch_sizes), drop_remainder);
}

}  // namespace sluice::ops

#endif  // SLUICE_OPS_REBATCH_H_
