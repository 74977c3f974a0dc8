// Batch(batch_size, drop_remainder, num_parallel_calls): tf.data.Dataset.batch; BatchVectors, the same
// grouping into std::vector<T> for any T.
//
// Contract:
// - Elements: batch_size consecutive input elements combined by the Batched<T> rule (sluice/ops/batching.h):
//   Tensors stacked into one contiguous [n, ...] tensor, numbers into a rank-1 tensor of their dtype,
//   tuples/pairs of tensors and numbers stacked per component, ParsedExamples stacked/concatenated as
//   tf.io.parse_example lays them out, anything else collected into a std::vector<T>. BatchVectors always
//   collects into std::vector<T> (Range(10).BatchVectors(4) gives std::vector<int64_t>). Input order is
//   kept.
// - Remainder: the last batch holds the remaining (fewer than batch_size) elements unless drop_remainder,
//   which drops it.
// - Errors: batch_size <= 0 (or num_parallel_calls < -1) makes the dataset one InvalidArgument element.
//   An error element from the input is yielded as that batch's result and the elements collected for it
//   are dropped, as tf.data does. Elements that cannot be stacked (different shapes or dtypes) make the
//   batch an InvalidArgument error "Batch (element i): Cannot batch tensors with different shapes in
//   component 0. First element had shape [3] and element 2 had shape [4]." where i is the batch's index.
//   Errors do not end the stream.
// - num_parallel_calls: 0 or 1 stack each batch inline in the consumer's poll; N >= 2 stack up to N batches
//   at once on the iterator's pool (groups are formed in order first, so the batches hold the same
//   elements); kAutotune (-1) lets the tuner pick. deterministic (unset = Options::deterministic) keeps
//   batch order; false returns batches as they are stacked.
// - Cardinality: input / batch_size, rounded up unless drop_remainder; infinite and unknown stay so.
// - Threading/cancellation: the inline form is synchronous; the parallel form is ParallelMap's machinery
//   (sluice/ops/parallel_map.h): destroying the stream cancels and awaits the stacking in flight.
// - Checkpoints (docs/checkpoint.md): both forms save and restore exactly; the parallel one pauses its
//   stacking as ParallelMap does and saves the stacked batches not yet returned.
//
//   Dataset<Tensor> images = ...;                 // each float[28,28]
//   Dataset<Tensor> batches = images.Batch(32);   // float[32,28,28], the last one possibly shorter
#ifndef SLUICE_OPS_BATCH_H_
#define SLUICE_OPS_BATCH_H_

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sluice/ops/autotune.h"
#include "sluice/ops/batching.h"
#include "sluice/ops/cardinality.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/parallel_map.h"
#include "sluice/ops/user_function.h"

namespace sluice::ops {

// Batches of `batch_size` rows made from `input_cardinality` elements (tf.data's batch rule).
inline int64_t BatchCardinality(int64_t input_cardinality, int64_t batch_size, bool drop_remainder) {
  if (input_cardinality < 0) return input_cardinality;
  return input_cardinality / batch_size + (!drop_remainder && input_cardinality % batch_size != 0 ? 1 : 0);
}

// The batch size every element of `node` is known to have without iterating (a Batch, BatchVectors,
// PaddedBatch or single-size Rebatch with drop_remainder, as tf.data's static batch dimension), or -1.
inline int64_t StaticBatchSize(const OpNode& node) {
  std::string_view op = node.op_name();
  if (op != "Batch" && op != "BatchVectors" && op != "PaddedBatch" && op != "Rebatch") return -1;
  int64_t size = -1;
  bool drop = false;
  for (const Param& p : node.params()) {
    if (p.name == "batch_size" && std::holds_alternative<int64_t>(p.value)) size = std::get<int64_t>(p.value);
    if (p.name == "batch_sizes" && std::holds_alternative<std::vector<int64_t>>(p.value)) {
      const auto& sizes = std::get<std::vector<int64_t>>(p.value);
      if (sizes.size() == 1) size = sizes[0];
    }
    if (p.name == "drop_remainder" && std::holds_alternative<bool>(p.value)) drop = std::get<bool>(p.value);
  }
  return drop ? size : -1;
}

// Consecutive input elements grouped into vectors of batch_size, the last one short unless drop_remainder;
// an input error drops the partial group and takes its place. The first half of Batch, shared by the
// inline and the parallel stacking.
template <class T>
class GroupStream final : public Stream<std::vector<T>> {
 public:
  GroupStream(std::unique_ptr<Stream<T>> input, int64_t batch_size, bool drop_remainder)
      : input_(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder) {}
  PollState Poll(absl::StatusOr<std::vector<T>>* out) override {
    if (ended_) return PollState::kEnd;
    // The partial group lives in a member, so a kPending return keeps what was collected.
    if (elements_.capacity() == 0) elements_.reserve(static_cast<size_t>(batch_size_));
    while (static_cast<int64_t>(elements_.size()) < batch_size_) {
      PollState state = input_->Poll(&in_);
      if (state == PollState::kPending) return state;
      if (state == PollState::kEnd) {
        ended_ = true;
        if (elements_.empty() || drop_remainder_) return PollState::kEnd;
        break;
      }
      if (!in_.ok()) {
        elements_.clear();
        *out = std::move(in_).status();
        return PollState::kReady;
      }
      elements_.push_back(std::move(*in_));
    }
    *out = std::move(elements_);
    elements_ = std::vector<T>();
    return PollState::kReady;
  }
  Task<void> WaitReady() override { return input_->WaitReady(); }
  // Under a parallel Batch only (the inline one writes its state itself): appends the partial group and
  // whether the input ended to the Batch's section, which the parallel stacking wrote first, then saves
  // the input at /0 unless it ended.
  Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
    if constexpr (!HasElementCodec<T>) {
      return Stream<std::vector<T>>::SaveResult(
          writer->Unsupported(path, "its elements have no ElementCodec"));
    } else {
      writer->AppendState(path, elements_, ended_);
      if (ended_) return Stream<std::vector<T>>::SaveResult(absl::OkStatus());
      return input_->Save(std::move(writer), ChildNodePath(path, 0));
    }
  }
  // Under a compact parallel Batch: its part of the Batch's section, as Save writes it.
  bool Mark(MarkWriter& mark) const override {
    if constexpr (!HasElementCodec<T>) {
      return false;
    } else {
      mark.Write(elements_, ended_);
      return ended_ || mark.Input(0, *input_);
    }
  }
  // A restored group (parallel Batch): `input` is null when the input had ended.
  void SetPartial(std::vector<T> elements, bool ended) {
    elements_ = std::move(elements);
    ended_ = ended;
  }

  // Checkpoint state (Batch's): the partial group and whether the input ended.
  template <class U = T>
  requires HasElementCodec<U>
  void WriteState(CheckpointWriter* writer, std::string_view path, int64_t batch_index) const {
    writer->WriteState(path, batch_index, elements_, ended_);
  }
  template <class U = T>
  requires HasElementCodec<U>
  void MarkState(MarkWriter& mark, int64_t batch_index) const { mark.Write(batch_index, elements_, ended_); }
  template <class U = T>
  requires HasElementCodec<U>
  static absl::StatusOr<std::unique_ptr<GroupStream>> Restore(NodePtr<T> input_node,
                                                              IteratorContextPtr context,
                                                              const CheckpointReader& reader,
                                                              const std::string& path, int64_t batch_size,
                                                              bool drop_remainder, int64_t* batch_index) {
    std::vector<T> elements;
    bool ended = false;
    if (absl::Status s = reader.ReadState(path, batch_index, &elements, &ended); !s.ok()) return s;
    if (static_cast<int64_t>(elements.size()) >= batch_size) {
      return reader.Corrupt(
          path, absl::DataLossError(absl::StrCat(elements.size(), " elements in a partial batch")));
    }
    auto input = input_node->RestoreStream(std::move(context), reader, ChildNodePath(path, 0));
    if (!input.ok()) return input.status();
    auto stream = std::make_unique<GroupStream>(std::move(*input), batch_size, drop_remainder);
    stream->elements_ = std::move(elements);
    stream->ended_ = ended;
    return stream;
  }
  Stream<T>& input() { return *input_; }
  const Stream<T>& input() const { return *input_; }

 private:
  std::unique_ptr<Stream<T>> input_;
  int64_t batch_size_;
  bool drop_remainder_;
  bool ended_ = false;
  std::vector<T> elements_;
  absl::StatusOr<T> in_;
};

// What a batch of T is: Batched<T> (Batch), or std::vector<T> whatever T is (BatchVectors).
template <class T, bool kIntoVectors>
using BatchOf = std::conditional_t<kIntoVectors, std::vector<T>, Batched<T>>;

// The second half: one group stacked by the Batched<T> rule (or kept as the vector it is, for
// BatchVectors); `index` is the batch's, for messages.
template <class T, bool kIntoVectors = false>
struct StackGroup {
  // The grouping under the parallel stacking is part of the same Batch node (see ParallelMapStream::Save).
  static constexpr bool kInputSharesNode = true;
  absl::StatusOr<BatchOf<T, kIntoVectors>> operator()(std::vector<T> elements, int64_t index) const {
    if constexpr (kIntoVectors) {
      return elements;
    } else {
      absl::StatusOr<Batched<T>> batch = StackBatch<T>(std::move(elements));
      if (!batch.ok()) return AnnotateError(batch.status(), "Batch", index);
      return batch;
    }
  }
};

// Batch (kIntoVectors false) and BatchVectors (true): the same grouping, inline or parallel stacking,
// checkpoints and params; only the combining rule and the op's name differ.
template <class T, bool kIntoVectors = false>
class BatchNode final : public Node<BatchOf<T, kIntoVectors>> {
 public:
  using B = BatchOf<T, kIntoVectors>;
  BatchNode(NodePtr<T> input, int64_t batch_size, bool drop_remainder, int64_t num_parallel_calls = 0,
            std::optional<bool> deterministic = std::nullopt)
      : input_(std::move(input)),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder),
        num_parallel_calls_(num_parallel_calls),
        deterministic_(deterministic) {}
  std::string_view op_name() const override { return kIntoVectors ? "BatchVectors" : "Batch"; }
  DatasetSpec element_spec() const override {
    return BatchedSpec(input_->element_spec(), drop_remainder_ ? batch_size_ : -1);
  }
  // A parallel Batch marks when it keeps order: its results come out in batch order, each with the mark
  // of the grouping right after its group was formed.
  bool keeps_compact_state(const Options& options) const override {
    if (num_parallel_calls_ == 0 || num_parallel_calls_ == 1) return HasElementCodec<T>;
    return HasElementCodec<T> && HasElementCodec<B> && deterministic_.value_or(options.deterministic);
  }
  std::vector<Param> params() const override {
    std::vector<Param> params = {{"batch_size", batch_size_},
                                 {"drop_remainder", drop_remainder_},
                                 {"num_parallel_calls", num_parallel_calls_}};
    if (deterministic_) params.push_back({"deterministic", *deterministic_});
    return params;
  }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override {
    return BatchCardinality(input_->cardinality(), batch_size_, drop_remainder_);
  }
  std::unique_ptr<Stream<B>> MakeStream(IteratorContextPtr context) const override {
    auto groups = std::make_unique<GroupStream<T>>(input_->MakeStream(context), batch_size_, drop_remainder_);
    if (num_parallel_calls_ == 0 || num_parallel_calls_ == 1) {
      return std::make_unique<InlineBatchStream>(std::move(groups));
    }
    return std::make_unique<detail_teardown::AsyncStreamOwner<Parallel>>(
        MakeParallel(context, std::move(groups)), context->teardowns);
  }
  // State, inline: batch index, partial batch, input ended. Parallel: the stacking's (next batch index,
  // stacked batches not yet returned, groups ended), then the grouping's (partial batch, input ended).
  // The input at /0 unless it ended.
  absl::StatusOr<std::unique_ptr<Stream<B>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    if constexpr (!HasElementCodec<T>) {
      return reader.Unsupported(path);
    } else {
      if (num_parallel_calls_ != 0 && num_parallel_calls_ != 1) {
        if constexpr (HasElementCodec<B>) {
          return RestoreParallel(context, reader, path);
        } else {
          return reader.Unsupported(path);
        }
      }
      int64_t index = 0;
      auto groups = GroupStream<T>::Restore(input_, std::move(context), reader, path, batch_size_,
                                            drop_remainder_, &index);
      if (!groups.ok()) return groups.status();
      auto stream = std::make_unique<InlineBatchStream>(std::move(*groups));
      stream->index_ = index;
      return stream;
    }
  }

 private:
  // Parallel stacking: the groups are cheap to form (moves), the copies into one buffer are not.
  using Parallel = detail_parallel::ParallelMapStream<std::vector<T>, B, StackGroup<T, kIntoVectors>>;

  std::unique_ptr<Parallel> MakeParallel(const IteratorContextPtr& context,
                                         std::unique_ptr<GroupStream<T>> groups) const {
    const bool deterministic = deterministic_.value_or(context->options.deterministic);
    const int limit = std::max(1, CpuBudget(*context));
    const bool tuned = num_parallel_calls_ == kAutotune;
    int initial = tuned ? 1 : static_cast<int>(num_parallel_calls_);
    int max_parallelism = tuned ? limit : initial;
    if (tuned && !context->options.autotune) initial = max_parallelism = limit;
    return std::make_unique<Parallel>(std::move(groups), StackGroup<T, kIntoVectors>{}, context->pool,
                                      initial, max_parallelism, deterministic,
                                      tuned ? TunerFor(*context) : nullptr,
                                      /*caller_runs=*/false, /*busy_tasks=*/nullptr,
                                      /*compact=*/context->options.compact_checkpoints && deterministic);
  }

  template <class V = T>
  requires HasElementCodec<V> && HasElementCodec<B>
  absl::StatusOr<std::unique_ptr<Stream<B>>> RestoreParallel(const IteratorContextPtr& context,
                                                             const CheckpointReader& reader,
                                                             const std::string& path) const {
    int64_t next_index = 0;
    std::vector<absl::StatusOr<B>> batches;
    bool groups_ended = false;
    std::vector<T> partial;
    bool input_ended = false;
    if (absl::Status s = reader.ReadState(path, &next_index, &batches, &groups_ended, &partial, &input_ended);
        !s.ok()) {
      return s;
    }
    if (next_index < 0 || batches.size() > static_cast<uint64_t>(next_index) ||
        static_cast<int64_t>(partial.size()) >= batch_size_ || (groups_ended && !input_ended)) {
      return reader.Corrupt(path,
                            absl::DataLossError(absl::StrCat(batches.size(), " batches of ", next_index, ", ",
                                                             partial.size(), " in a partial one")));
    }
    std::unique_ptr<Stream<T>> input;
    if (!input_ended) {
      auto restored = input_->RestoreStream(context, reader, ChildNodePath(path, 0));
      if (!restored.ok()) return restored.status();
      input = std::move(*restored);
    }
    auto groups = std::make_unique<GroupStream<T>>(std::move(input), batch_size_, drop_remainder_);
    groups->SetPartial(std::move(partial), input_ended);
    std::unique_ptr<Parallel> impl = MakeParallel(context, std::move(groups));
    impl->RestoreBuffered(next_index, std::move(batches), groups_ended);
    return std::make_unique<detail_teardown::AsyncStreamOwner<Parallel>>(std::move(impl), context->teardowns);
  }

  class InlineBatchStream final : public Stream<B> {
   public:
    explicit InlineBatchStream(std::unique_ptr<GroupStream<T>> groups) : groups_(std::move(groups)) {}
    PollState Poll(absl::StatusOr<B>* out) override {
      PollState state = groups_->Poll(&group_);
      if (state != PollState::kReady) return state;
      if (group_.ok()) {
        *out = StackGroup<T, kIntoVectors>{}(std::move(*group_), index_);
      } else {
        *out = std::move(group_).status();
      }
      ++index_;
      return PollState::kReady;
    }
    Task<void> WaitReady() override { return groups_->WaitReady(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      if constexpr (!HasElementCodec<T>) {
        return Stream<B>::SaveResult(writer->Unsupported(path, "its elements have no ElementCodec"));
      } else {
        groups_->WriteState(writer.get(), path, index_);
        return groups_->input().Save(std::move(writer), ChildNodePath(path, 0));
      }
    }
    bool Mark(MarkWriter& mark) const override {
      if constexpr (!HasElementCodec<T>) {
        return false;
      } else {
        groups_->MarkState(mark, index_);
        return mark.Input(0, groups_->input());
      }
    }

    int64_t index_ = 0;  // of the next output batch, for error messages

   private:
    std::unique_ptr<GroupStream<T>> groups_;
    absl::StatusOr<std::vector<T>> group_;
  };

  NodePtr<T> input_;
  int64_t batch_size_;
  bool drop_remainder_;
  int64_t num_parallel_calls_;
  std::optional<bool> deterministic_;
};

// Dataset::Batch's (or, kIntoVectors, BatchVectors') node, or an error source for invalid arguments.
template <class T, bool kIntoVectors = false>
NodePtr<BatchOf<T, kIntoVectors>> MakeBatch(NodePtr<T> input, int64_t batch_size, bool drop_remainder,
                                            int64_t num_parallel_calls,
                                            std::optional<bool> deterministic = std::nullopt) {
  using B = BatchOf<T, kIntoVectors>;
  const std::string op = kIntoVectors ? "BatchVectors" : "Batch";
  if (batch_size <= 0) {
    return MakeErrorSource<B>(
        op, absl::InvalidArgumentError(absl::StrCat(op, ": batch_size must be > 0, got ", batch_size)));
  }
  if (num_parallel_calls < -1) {
    return MakeErrorSource<B>(
        op, absl::InvalidArgumentError(absl::StrCat(
                op, ": num_parallel_calls must be >= 0 or kAutotune (-1), got ", num_parallel_calls)));
  }
  return std::make_shared<BatchNode<T, kIntoVectors>>(std::move(input), batch_size, drop_remainder,
                                                      num_parallel_calls, deterministic);
}

}  // namespace sluice::ops

#endif  // SLUICE_OPS_BATCH_H_
