// AutoShard(num_workers, worker_index, policy): this worker's share of a dataset, decided on the graph
// below the op when it is built, as tf.data's auto-shard rewrite (AutoShardDataset) does. Usable without a
// MirroredStrategy; the policies are those of sluice/distribute/shard_policy.h:
// - FILE: every file source the walk reaches keeps files i with i mod num_workers == worker_index.
// - DATA: Shard(num_workers, worker_index) over the elements (on top of the input, terminal Prefetch
//   included: tf.data puts its shard below such a Prefetch, which yields the same elements).
// - AUTO: FILE when the walk reaches a file source on every branch, else DATA; decision() says which and
//   why.
// - HINT: the Shard(kShardHint, ...) placeholders below become Shard(num_workers, worker_index); nothing
//   else is sharded.
// - OFF, or one worker: the input unchanged.
// num_workers < 1, worker_index outside [0, num_workers) and a policy that cannot apply (FILE on a branch
// without a file source, fewer files than workers) are the one error element of every iterator, as tf.data
// fails the iterator. The walk of an outer AutoShard or MirroredStrategy stops at this op, as tf.data's
// does at AutoShardDataset, so an outer AUTO shards by DATA on top. Checkpoints: the op keeps no state of its
// own (FILE and HINT shard inside the input's streams; DATA saves its Shard's position), compact when its
// input is.
#ifndef SLUICE_OPS_AUTO_SHARD_H_
#define SLUICE_OPS_AUTO_SHARD_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/distribute/shard_policy.h"
#include "sluice/export.h"
#include "sluice/ops/cardinality.h"
#include "sluice/ops/enumerate_shard.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/op_node.h"

namespace sluice::ops {

// What every AutoShard node tells about itself, whatever its element type.
class AutoShardOp {
 public:
  virtual ~AutoShardOp() = default;
  // The policy that applies and, for FILE, the sources it cuts (paths below this op's input); or why
  // none can.
  virtual const absl::StatusOr<distribute::ShardDecision>& decision() const = 0;
};

// The decision of the first AutoShard op of the graph (depth first from `root`), or NotFound.
SLUICE_EXPORT absl::StatusOr<distribute::ShardDecision> FindAutoShardDecision(const OpNode& root);

template <class T>
class AutoShardNode final : public Node<T>, public AutoShardOp {
 public:
  AutoShardNode(NodePtr<T> input, int64_t num_workers, int64_t index, AutoShardPolicy policy)
      : input_(std::move(input)), num_workers_(num_workers), index_(index), policy_(policy) {
    decision_ = Decide();
    if (!decision_.ok()) {
      delegate_ = MakeErrorSource<T>("AutoShard", decision_.status());
    } else if (decision_->applied == AutoShardPolicy::kData) {
      delegate_ = std::make_shared<ShardNode<T>>(input_, num_workers_, index_);
    } else if (decision_->applied == AutoShardPolicy::kFile) {
      // Decide resolved these paths against input_ already.
      file_shard_ = *distribute::MakeFileShard(*input_, decision_->file_sources, num_workers_, index_);
    }
  }

  std::string_view op_name() const override { return "AutoShard"; }
  DatasetSpec element_spec() const override { return input_->element_spec(); }
  bool keeps_compact_state(const Options& options) const override {
    return input_->keeps_compact_state(options);
  }
  std::vector<Param> params() const override {
    return {{"num_workers", num_workers_},
            {"index", index_},
            {"policy", std::string(AutoShardPolicyName(policy_))}};
  }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override {
    if (delegate_ != nullptr) return delegate_->cardinality();
    // HINT: the placeholders' own cardinality is already unknown.
    const int64_t n = input_->cardinality();
    return decision_->applied == AutoShardPolicy::kFile && n >= 0 ? kUnknownCardinality : n;
  }
  const absl::StatusOr<distribute::ShardDecision>& decision() const override { return decision_; }

  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    if (delegate_ != nullptr) return delegate_->MakeStream(std::move(context));
    return std::make_unique<PassStream>(input_->MakeStream(Narrow(std::move(context))));
  }
  absl::StatusOr<std::unique_ptr<Stream<T>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    if (delegate_ != nullptr) return delegate_->RestoreStream(std::move(context), reader, path);
    // No state of its own: the input's streams hold it (FILE and HINT shard in there).
    if (absl::Status s = reader.ReadState(path); !s.ok()) return s;
    auto input = input_->RestoreStream(Narrow(std::move(context)), reader, ChildNodePath(path, 0));
    if (!input.ok()) return input.status();
    return std::make_unique<PassStream>(std::move(*input));
  }

 private:
  // OFF, FILE and HINT: the input's elements as they come; the input's state one level down, as in the
  // graph.
  class PassStream final : public Stream<T> {
   public:
    explicit PassStream(std::unique_ptr<Stream<T>> input) : input_(std::move(input)) {}
    PollState Poll(absl::StatusOr<T>* out) override { return input_->Poll(out); }
    Task<void> WaitReady() override { return input_->WaitReady(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      writer->WriteState(path);
      return input_->Save(std::move(writer), ChildNodePath(path, 0));
    }
    bool Mark(MarkWriter& mark) const override { return mark.Input(0, *input_); }

   private:
    std::unique_ptr<Stream<T>> input_;
  };

  absl::StatusOr<distribute::ShardDecision> Decide() const {
    if (num_workers_ < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("AutoShard: num_workers must be >= 1, got ", num_workers_));
    }
    if (index_ < 0 || index_ >= num_workers_) {
      return absl::InvalidArgumentError(
          absl::StrCat("AutoShard: worker_index must be in [0, ", num_workers_, "), got ", index_));
    }
    return distribute::DecideShardPolicy(*input_, policy_, num_workers_);
  }

  // The context for the input's streams: what FILE or HINT tells the ops below.
  IteratorContextPtr Narrow(IteratorContextPtr context) const {
    const AutoShardPolicy applied = decision_->applied;
    if (applied != AutoShardPolicy::kFile && applied != AutoShardPolicy::kHint) return context;
    std::shared_ptr<IteratorContext> narrowed = context->Derive();
    if (applied == AutoShardPolicy::kFile) {
      narrowed->file_shard = file_shard_;
    } else {
      narrowed->shard_hint = IteratorContext::ShardHint{num_workers_, index_};
    }
    return narrowed;
  }

  NodePtr<T> input_;
  int64_t num_workers_;
  int64_t index_;
  AutoShardPolicy policy_;
  absl::StatusOr<distribute::ShardDecision> decision_;
  NodePtr<T> delegate_;  // DATA's Shard, or the error source when no policy applies; else null
  IteratorContext::FileShard file_shard_;
};

template <class T>
NodePtr<T> MakeAutoShard(NodePtr<T> input, int64_t num_workers, int64_t index, AutoShardPolicy policy) {
  return std::make_shared<AutoShardNode<T>>(std::move(input), num_workers, index, policy);
}

}  // namespace sluice::ops

#endif  // SLUICE_OPS_AUTO_SHARD_H_
