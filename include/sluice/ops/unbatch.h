// Unbatch(): tf.data.Dataset.unbatch, the inverse of Batch: each batch split into its rows, in order.
//
// Contract:
// - Elements, by batch type (the inverse of Batched<T>, sluice/ops/batching.h):
//   * std::vector<T> -> its T elements (moved out).
//   * Tensor [n, ...] -> n Tensors [...]: views sharing the batch's buffer (SubTensor), no copy.
//   * std::tuple<Tensor...> / std::pair<Tensor, Tensor> -> tuples/pairs of rows (a stacked scalar
//     component comes back as a rank-0 Tensor, as in tf.data).
//   * ParsedExample -> one ParsedExample per record (fixed features lose dim 0; var-len values are the
//     record's own slice with row_lengths of shape [1]), views of the batch's buffers.
//   Empty batches yield nothing.
// - Errors: an error element passes through as one error element. A batch that is not one (a rank-0
//   tensor component; components with different dim 0; ragged row lengths that do not add up) is one
//   InvalidArgument element naming the op and the batch index, e.g. "Unbatch (element 2): Input element
//   must have the same batch size in each component. Component 0 had size 3 but component 1 had size 2.".
//   Errors do not end the stream.
// - Cardinality (tf.data): infinite and unknown inputs stay so; otherwise input * batch size when the batch
//   size is statically known (a Batch/PaddedBatch/Rebatch with drop_remainder just before), else unknown.
// - Threading/cancellation: synchronous; polls its input inline.
//
//   Dataset<Tensor> rows = Range(7).Map(ToTensor).Batch(3).Unbatch();  // 7 scalar tensors again
#ifndef SLUICE_OPS_UNBATCH_H_
#define SLUICE_OPS_UNBATCH_H_

#include <concepts>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "sluice/ops/batching.h"
#include "sluice/ops/cardinality.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/batch.h"
#include "sluice/ops/user_function.h"

namespace sluice::ops {

namespace detail_unbatch {

template <class B>
struct Rule;  // Element: the row type; a cursor over one validated batch

template <class U>
struct Rule<std::vector<U>> {
  using Element = U;
  struct Cursor {
    std::vector<U> batch;
    absl::Status Start() { return absl::OkStatus(); }
    int64_t Rows() const { return static_cast<int64_t>(batch.size()); }
    U Take(int64_t i) { return std::move(batch[static_cast<size_t>(i)]); }
  };
};

template <>
struct Rule<Tensor> {
  using Element = Tensor;
  struct Cursor {
    Tensor batch;
    absl::Status Start() { return BatchTraits<Tensor>::Validate(batch); }
    int64_t Rows() const { return BatchTraits<Tensor>::Rows(batch); }
    Tensor Take(int64_t i) { return *batch.SubTensor(i); }  // in range: Start validated the rank
  };
};

template <class B>
  requires sluice::detail::IsAllTensorTuple<B>::value
struct Rule<B> {
  using Element = B;
  struct Cursor {
    B batch;
    absl::Status Start() { return BatchTraits<B>::Validate(batch); }
    int64_t Rows() const { return BatchTraits<B>::Rows(batch); }
    B Take(int64_t i) {
      return std::apply([i](const auto&... parts) { return B(*parts.SubTensor(i)...); }, batch);
    }
  };
};

template <>
struct Rule<ParsedExample> {
  using Element = ParsedExample;
  struct Cursor {
    ParsedExample batch;
    std::vector<std::vector<int64_t>> offsets;  // per var-len feature: where each row's values start
    absl::Status Start() {
      absl::Status valid = BatchTraits<ParsedExample>::Validate(batch);
      if (!valid.ok()) return valid;
      offsets.assign(batch.var.size(), {});
      for (size_t v = 0; v < batch.var.size(); ++v) {
        std::vector<int64_t>& o = offsets[v];
        o.reserve(static_cast<size_t>(Rows()) + 1);
        o.push_back(0);
        for (int64_t length : batch.var[v].row_lengths.span<int64_t>()) o.push_back(o.back() + length);
      }
      return absl::OkStatus();
    }
    int64_t Rows() const { return BatchTraits<ParsedExample>::Rows(batch); }
    ParsedExample Take(int64_t i) {
      ParsedExample row;
      row.names = batch.names;
      row.fixed.reserve(batch.fixed.size());
      for (const Tensor& t : batch.fixed) row.fixed.push_back(*t.SubTensor(i));
      row.var.reserve(batch.var.size());
      for (size_t v = 0; v < batch.var.size(); ++v) {
        const size_t at = static_cast<size_t>(i);
        row.var.push_back(VarLenValues{*batch.var[v].values.Slice(offsets[v][at], offsets[v][at + 1]),
                                       *batch.var[v].row_lengths.Slice(i, i + 1)});
      }
      return row;
    }
  };
};

}  // namespace detail_unbatch

// Whether Unbatch() accepts elements of type B.
template <class B>
concept IsUnbatchable = requires { typename detail_unbatch::Rule<B>::Element; };

template <class B>
using Unbatched = typename detail_unbatch::Rule<B>::Element;

template <class B>
  requires IsUnbatchable<B>
class UnbatchNode final : public Node<Unbatched<B>> {
 public:
  using T = Unbatched<B>;
  explicit UnbatchNode(NodePtr<B> input) : input_(std::move(input)) {}
  std::string_view op_name() const override { return "Unbatch"; }
  DatasetSpec element_spec() const override { return UnbatchedSpec(input_->element_spec()); }
  std::vector<Param> params() const override { return {}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override {
    int64_t n = input_->cardinality();
    if (n < 0) return n;
    int64_t batch_size = StaticBatchSize(*input_);
    return batch_size >= 0 ? n * batch_size : kUnknownCardinality;
  }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<UnbatchStream>(input_->MakeStream(std::move(context)));
  }
  // State: the batch being split (when rows of it are left), the next row, and the batch index.
  absl::StatusOr<std::unique_ptr<Stream<T>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    if constexpr (!HasElementCodec<B>) {
      return reader.Unsupported(path);
    } else {
      int64_t index = 0;
      int64_t next = 0;
      std::optional<B> batch;
      if (absl::Status s = reader.ReadState(path, &index, &next, &batch); !s.ok()) return s;
      auto input = input_->RestoreStream(std::move(context), reader, ChildNodePath(path, 0));
      if (!input.ok()) return input.status();
      auto stream = std::make_unique<UnbatchStream>(std::move(*input));
      stream->index_ = index;
      if (batch.has_value()) {
        stream->cursor_.batch = std::move(*batch);
        absl::Status valid = stream->cursor_.Start();
        const int64_t rows = valid.ok() ? stream->cursor_.Rows() : 0;
        if (!valid.ok() || next < 0 || next >= rows) {
          return reader.Corrupt(path,
                                absl::DataLossError(absl::StrCat("row ", next, " of a batch of ", rows)));
        }
        stream->next_ = next;
        stream->rows_ = rows;
      }
      return stream;
    }
  }

 private:
  class UnbatchStream final : public Stream<T> {
   public:
    explicit UnbatchStream(std::unique_ptr<Stream<B>> input) : input_(std::move(input)) {}
    PollState Poll(absl::StatusOr<T>* out) override {
      while (next_ >= rows_) {
        PollState state = input_->Poll(&in_);
        if (state != PollState::kReady) return state;
        const int64_t index = index_++;
        if (!in_.ok()) {
          *out = std::move(in_).status();
          return PollState::kReady;
        }
        cursor_.batch = std::move(*in_);
        next_ = 0;
        rows_ = 0;
        absl::Status valid = cursor_.Start();
        if (!valid.ok()) {
          *out = AnnotateError(valid, "Unbatch", index);
          return PollState::kReady;
        }
        rows_ = cursor_.Rows();
      }
      *out = cursor_.Take(next_++);
      return PollState::kReady;
    }
    Task<void> WaitReady() override { return input_->WaitReady(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      if constexpr (!HasElementCodec<B>) {
        return Stream<T>::SaveResult(writer->Unsupported(path, "its batches have no ElementCodec"));
      } else {
        // Rows already taken were moved from; they are saved as they are and never read again.
        std::optional<B> batch;
        if (next_ < rows_) batch = cursor_.batch;
        writer->WriteState(path, index_, next_, batch);
        return input_->Save(std::move(writer), ChildNodePath(path, 0));
      }
    }

   private:
    std::unique_ptr<Stream<B>> input_;
    absl::StatusOr<B> in_;

   public:  // set by RestoreStream
    typename detail_unbatch::Rule<B>::Cursor cursor_;
    int64_t next_ = 0;
    int64_t rows_ = 0;
    int64_t index_ = 0;  // of the next input batch, for error messages
  };

  NodePtr<B> input_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_UNBATCH_H_
