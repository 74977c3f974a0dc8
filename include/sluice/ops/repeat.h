// Repeat(count): the input `count` times over (endlessly when count < 0), each epoch a fresh stream of
// the input, so shuffles with reshuffle_each_iteration reshuffle. Repeat(0) is empty. An input that
// yields nothing ends the repetition, so Repeat(-1) over an empty input ends instead of spinning.
// Cardinality as tf.data: count < 0 gives infinite (0 for an empty input); count * input otherwise.
// Each epoch's streams get a context whose IteratorState is the epoch's (IteratorState::ForEpoch), so
// the passes below are numbered by epoch, not by how many streams began before (a parallel op running
// ahead through an inner Repeat would otherwise shift the numbers of the outer Repeat's next epoch).
// Checkpoints: besides its counters and epoch, a Repeat saves the epoch's pass counters of the nodes below
// it that number their passes (OpNode::begins_passes). A compact mark can be older than the save (a
// Prefetch or Shuffle above keeps the mark of an element it pulled earlier), and the passes begun after a
// restore from it must get the indices they had, not the counters the save found.
#ifndef SLUICE_OPS_REPEAT_H_
#define SLUICE_OPS_REPEAT_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sluice/ops/cardinality.h"
#include "sluice/ops/iterator_state.h"
#include "sluice/ops/op_node.h"

namespace sluice::ops {

template <class T>
class RepeatNode final : public Node<T> {
 public:
  RepeatNode(NodePtr<T> input, int64_t count) : input_(std::move(input)), count_(count) {}
  std::string_view op_name() const override { return "Repeat"; }
  DatasetSpec element_spec() const override { return input_->element_spec(); }
  bool keeps_compact_state(const Options&) const override { return true; }
  std::vector<Param> params() const override { return {{"count", count_}}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override {
    int64_t n = input_->cardinality();
    if (count_ < 0) return n == 0 ? 0 : kInfiniteCardinality;
    if (count_ == 0) return 0;
    if (n < 0) return n;
    return n * count_;
  }
  // The first epoch's input is made here, not at the first Poll, so that a compact mark taken before the
  // first Poll holds the input's own mark (its pass) rather than "not started", which a restore would
  // begin as a new pass.
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    auto stream = std::make_unique<RepeatStream>(input_, std::move(context), count_, 0);
    if (count_ != 0) stream->input_ = input_->MakeStream(stream->BeginEpoch());
    return stream;
  }
  // State: epochs still to start, whether this epoch yielded, whether its input is open, the epoch's
  // index, and the epoch's pass counters; then the open input's state.
  absl::StatusOr<std::unique_ptr<Stream<T>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    int64_t remaining = 0;
    bool yielded = false;
    bool open = false;
    uint64_t epoch = 0;
    std::vector<uint64_t> next_passes;
    if (absl::Status s = reader.ReadState(path, &remaining, &yielded, &open, &epoch, &next_passes); !s.ok()) {
      return s;
    }
    auto stream = std::make_unique<RepeatStream>(input_, std::move(context), remaining, epoch);
    if (next_passes.size() != stream->pass_nodes_.size()) {
      return reader.Corrupt(path, absl::DataLossError(absl::StrCat(next_passes.size(), " pass counters for ",
                                                                   stream->pass_nodes_.size(), " nodes")));
    }
    if (open) {
      IteratorContextPtr epoch_context = stream->BeginEpoch();
      epoch_context->state->SetNextPasses(stream->pass_nodes_, next_passes);
      auto input = input_->RestoreStream(std::move(epoch_context), reader, ChildNodePath(path, 0));
      if (!input.ok()) return input.status();
      stream->input_ = std::move(*input);
    }
    stream->yielded_this_epoch_ = yielded;
    return stream;
  }

 private:
  class RepeatStream final : public Stream<T> {
   public:
    RepeatStream(NodePtr<T> input, IteratorContextPtr context, int64_t count, uint64_t epoch)
        : input_node_(std::move(input)), context_(std::move(context)), remaining_(count), epoch_(epoch) {
      CollectPassNodes(input_node_, &pass_nodes_);
    }
    PollState Poll(absl::StatusOr<T>* out) override {
      for (;;) {
        if (!input_) {
          if (remaining_ == 0) return PollState::kEnd;
          input_ = input_node_->MakeStream(BeginEpoch());
          yielded_this_epoch_ = false;
        }
        PollState state = input_->Poll(out);
        if (state == PollState::kReady) yielded_this_epoch_ = true;
        if (state != PollState::kEnd) return state;
        input_.reset();
        ++epoch_;
        if (remaining_ > 0) --remaining_;
        if (!yielded_this_epoch_) return PollState::kEnd;
      }
    }
    Task<void> WaitReady() override { return input_ ? input_->WaitReady() : Stream<T>::WaitReady(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      writer->WriteState(path, remaining_, yielded_this_epoch_, input_ != nullptr, epoch_, EpochPasses());
      if (!input_) return Stream<T>::SaveResult(absl::OkStatus());
      return input_->Save(std::move(writer), ChildNodePath(path, 0));
    }
    bool Mark(MarkWriter& mark) const override {
      mark.Write(remaining_, yielded_this_epoch_, input_ != nullptr, epoch_, EpochPasses());
      return !input_ || mark.Input(0, *input_);
    }

    // The context of epoch `epoch_`'s streams (made at its start). The last epoch's context and state
    // are reused when nothing else holds them any more (its streams are gone), so that an epoch of a
    // small input (FromTensors(x).Repeat()) costs no allocation.
    IteratorContextPtr BeginEpoch() {
      if (epoch_context_ != nullptr && epoch_context_.use_count() == 1 && epoch_state_.use_count() == 2) {
        epoch_state_->ReuseForEpoch(*context_->state, epoch_);
      } else {
        epoch_context_ = context_->Derive();
        epoch_state_ = context_->state->ForEpoch(epoch_);
        epoch_context_->state = epoch_state_;
      }
      return epoch_context_;
    }

   private:
    std::vector<uint64_t> EpochPasses() const {
      if (!input_) return std::vector<uint64_t>(pass_nodes_.size(), 0);  // between epochs
      return epoch_state_->NextPasses(pass_nodes_);
    }

    NodePtr<T> input_node_;
    IteratorContextPtr context_;
    int64_t remaining_;  // epochs still to start; < 0: endless
    uint64_t epoch_;     // the epoch input_ reads, or the next one to start
    std::shared_ptr<IteratorContext> epoch_context_;  // the latest epoch's
    std::shared_ptr<IteratorState> epoch_state_;      // ... and its state

   public:
    std::vector<IteratorState::NodeKey> pass_nodes_;  // see the file comment

   public:  // set by RestoreStream; declared last, so the input goes before the context
    std::unique_ptr<Stream<T>> input_;
    bool yielded_this_epoch_ = false;
  };

  NodePtr<T> input_;
  int64_t count_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_REPEAT_H_
