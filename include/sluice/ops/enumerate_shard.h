// Enumerate(start): (start + i, x_i) pairs; errors pass through and take an index, as in tf.data.
// Shard(num_shards, index): keeps element i when i mod num_shards == index; num_shards <= 0 or an index
// outside [0, num_shards) is InvalidArgument. Shard(kShardHint, any index) is a placeholder that
// AutoShardPolicy HINT (Dataset::AutoShard, a MirroredStrategy) replaces with Shard(num_workers,
// worker_index), as tf.data's SHARD_HINT; iterated without that policy it is FailedPrecondition. Errors, as
// in tf.data's ShardDataset (which skips up to its next element, then takes it): every error the shard meets
// is passed on and takes no position, and an error met while skipping also drops the count of the elements
// that skip had passed, so the skip starts over after it. Cardinality: Enumerate keeps the input's; Shard
// gives input / num_shards plus one when index < input mod num_shards.
#ifndef SLUICE_OPS_ENUMERATE_SHARD_H_
#define SLUICE_OPS_ENUMERATE_SHARD_H_

#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/ops/cardinality.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/op_node.h"

namespace sluice {

// tf.data.experimental.SHARD_HINT: Shard(kShardHint, ...) is replaced under AutoShardPolicy HINT.
inline constexpr int64_t kShardHint = -1;

}  // namespace sluice

namespace sluice::ops {

template <class T>
class EnumerateNode final : public Node<std::pair<int64_t, T>> {
 public:
  using Pair = std::pair<int64_t, T>;
  EnumerateNode(NodePtr<T> input, int64_t start) : input_(std::move(input)), start_(start) {}
  std::string_view op_name() const override { return "Enumerate"; }
  DatasetSpec element_spec() const override {
    return element_spec_detail::Join({StaticElementSpec<int64_t>(), input_->element_spec()});
  }
  bool keeps_compact_state(const Options&) const override { return true; }
  std::vector<Param> params() const override { return {{"start", start_}}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<Stream<Pair>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<EnumerateStream>(input_->MakeStream(std::move(context)), start_);
  }
  // State: the next count.
  absl::StatusOr<std::unique_ptr<Stream<Pair>>> RestoreStream(IteratorContextPtr context,
                                                              const CheckpointReader& reader,
                                                              const std::string& path) const override {
    int64_t next = 0;
    if (absl::Status s = reader.ReadState(path, &next); !s.ok()) return s;
    auto input = input_->RestoreStream(std::move(context), reader, ChildNodePath(path, 0));
    if (!input.ok()) return input.status();
    return std::make_unique<EnumerateStream>(std::move(*input), next);
  }

 private:
  class EnumerateStream final : public Stream<Pair> {
   public:
    EnumerateStream(std::unique_ptr<Stream<T>> input, int64_t start) : input_(std::move(input)), next_(start) {}
    PollState Poll(absl::StatusOr<Pair>* out) override {
      PollState state = input_->Poll(&in_);
      if (state != PollState::kReady) return state;
      int64_t index = next_++;
      if (!in_.ok()) {
        *out = std::move(in_).status();
      } else {
        *out = Pair(index, std::move(*in_));
      }
      return PollState::kReady;
    }
    Task<void> WaitReady() override { return input_->WaitReady(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      writer->WriteState(path, next_);
      return input_->Save(std::move(writer), ChildNodePath(path, 0));
    }
    bool Mark(MarkWriter& mark) const override {
      mark.Write(next_);
      return mark.Input(0, *input_);
    }

   private:
    std::unique_ptr<Stream<T>> input_;
    int64_t next_;
    absl::StatusOr<T> in_;
  };

  NodePtr<T> input_;
  int64_t start_;
};

template <class T>
class ShardNode final : public Node<T> {
 public:
  ShardNode(NodePtr<T> input, int64_t num_shards, int64_t index)
      : input_(std::move(input)), num_shards_(num_shards), index_(index) {}
  std::string_view op_name() const override { return "Shard"; }
  DatasetSpec element_spec() const override { return input_->element_spec(); }
  bool keeps_compact_state(const Options&) const override { return true; }
  std::vector<Param> params() const override { return {{"num_shards", num_shards_}, {"index", index_}}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override {
    int64_t n = input_->cardinality();
    if (n < 0) return n;
    if (num_shards_ == kShardHint) return kUnknownCardinality;
    return n / num_shards_ + (index_ < n % num_shards_ ? 1 : 0);
  }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    absl::StatusOr<IteratorContext::ShardHint> shard = Resolve(*context);
    if (!shard.ok()) return ErrorSourceNode<T>("Shard", shard.status()).MakeStream(std::move(context));
    return std::make_unique<ShardStream>(input_->MakeStream(std::move(context)), shard->num_shards,
                                         shard->index);
  }
  // State: the input index mod num_shards, and the elements a call left pending has skipped (-1: no call
  // pending). A consumer that pauses between a kPending and the next Poll (a parallel map's worker, a
  // prefetch's producer) saves a Shard in the middle of a call.
  absl::StatusOr<std::unique_ptr<Stream<T>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    absl::StatusOr<IteratorContext::ShardHint> shard = Resolve(*context);
    if (!shard.ok()) return shard.status();
    int64_t position = 0;
    int64_t skipped = -1;
    if (absl::Status s = reader.ReadState(path, &position, &skipped); !s.ok()) return s;
    if (position < 0 || position >= shard->num_shards || skipped < -1 || skipped >= shard->num_shards) {
      return reader.Corrupt(path,
                            absl::DataLossError(absl::StrCat("position ", position, ", skipped ", skipped)));
    }
    auto input = input_->RestoreStream(std::move(context), reader, ChildNodePath(path, 0));
    if (!input.ok()) return input.status();
    auto stream = std::make_unique<ShardStream>(std::move(*input), shard->num_shards, shard->index);
    stream->position_ = position;
    if (skipped >= 0) stream->ResumeCall(skipped);
    return stream;
  }

 private:
  class ShardStream final : public Stream<T> {
   public:
    ShardStream(std::unique_ptr<Stream<T>> input, int64_t num_shards, int64_t index)
        : input_(std::move(input)), num_shards_(num_shards), index_(index) {}
    // One call of tf.data's GetNext: skip to this shard's next element, then take it. A pending input
    // keeps the call's progress for the next Poll.
    PollState Poll(absl::StatusOr<T>* out) override {
      if (!in_call_) {
        in_call_ = true;
        skipped_ = 0;
        to_skip_ = index_ - position_;
        if (to_skip_ < 0) to_skip_ += num_shards_;
      }
      for (;;) {
        PollState state = input_->Poll(out);
        if (state != PollState::kReady) {
          if (state != PollState::kPending) in_call_ = false;
          return state;
        }
        if (skipped_ < to_skip_) {
          if (!out->ok()) {
            in_call_ = false;  // the skip failed: its count is dropped
            return PollState::kReady;
          }
          ++skipped_;
          continue;
        }
        in_call_ = false;
        position_ = (position_ + skipped_ + (out->ok() ? 1 : 0)) % num_shards_;
        return PollState::kReady;
      }
    }
    Task<void> WaitReady() override { return input_->WaitReady(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      writer->WriteState(path, position_, in_call_ ? skipped_ : int64_t{-1});
      return input_->Save(std::move(writer), ChildNodePath(path, 0));
    }
    bool Mark(MarkWriter& mark) const override {
      mark.Write(position_, in_call_ ? skipped_ : int64_t{-1});
      return mark.Input(0, *input_);
    }
    // A restored call left pending after `skipped` elements.
    void ResumeCall(int64_t skipped) {
      in_call_ = true;
      skipped_ = skipped;
      to_skip_ = index_ - position_;
      if (to_skip_ < 0) to_skip_ += num_shards_;
    }

    int64_t position_ = 0;  // input index mod num_shards, errors not counted

   private:
    bool in_call_ = false;  // between the first Poll of a call and its element (only while pending)
    int64_t to_skip_ = 0;
    int64_t skipped_ = 0;
    std::unique_ptr<Stream<T>> input_;
    int64_t num_shards_;
    int64_t index_;
  };

  // The shard this node keeps: its own, or for a kShardHint placeholder the iterator's hint.
  absl::StatusOr<IteratorContext::ShardHint> Resolve(const IteratorContext& context) const {
    if (num_shards_ != kShardHint) return IteratorContext::ShardHint{num_shards_, index_};
    if (context.shard_hint.num_shards > 0) return context.shard_hint;
    return absl::FailedPreconditionError(
        "Shard(kShardHint, ...) is a placeholder: it can only be iterated under AutoShardPolicy HINT "
        "(Dataset::AutoShard or MirroredStrategy::DistributeDataset with auto_shard_policy = kHint)");
  }

  NodePtr<T> input_;
  int64_t num_shards_;
  int64_t index_;
};

template <class T>
NodePtr<T> MakeShard(NodePtr<T> input, int64_t num_shards, int64_t index) {
  if (num_shards == kShardHint) return std::make_shared<ShardNode<T>>(std::move(input), kShardHint, index);
  if (num_shards <= 0) {
    return MakeErrorSource<T>("Shard", absl::InvalidArgumentError(
                                           absl::StrCat("Shard: num_shards must be > 0, got ", num_shards)));
  }
  if (index < 0 || index >= num_shards) {
    return MakeErrorSource<T>("Shard", absl::InvalidArgumentError(absl::StrCat(
                                           "Shard: index must be in [0, ", num_shards, "), got ", index)));
  }
  return std::make_shared<ShardNode<T>>(std::move(input), num_shards, index);
}

}  // namespace sluice::ops

#endif  // SLUICE_OPS_ENUMERATE_SHARD_H_
