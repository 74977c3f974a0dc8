// Interleave(f, cycle_length, block_length), sequential form, as tf.data.Dataset.interleave:
// f maps each input element to a Dataset<U>. Up to cycle_length of those are open at once; the op takes
// block_length consecutive elements from one, then moves to the next slot of the cycle. A slot whose
// dataset ends is emptied and the cycle moves on; an empty slot is refilled with the next input
// element's dataset when the cycle reaches it. FlatMap(f) is Interleave(f, 1, 1).
// Errors: an error element of the input, or f failing (error or exception), is yielded in that slot's
// turn; error elements of a sub-dataset are yielded as elements and count toward its block.
// cycle_length <= 0 or block_length <= 0 are InvalidArgument. Cardinality: unknown.
// Checkpoints (docs/checkpoint.md): the state is the cycle (index, block position, input index, input
// ended) and, per open slot, the input element its dataset was made from and that dataset's stream saved
// as a checkpoint of its own (its graph is not part of this one). A restore calls f on the element again
// and restores the stream from it. So each opened dataset keeps a copy of its input element (when the
// element has an ElementCodec) and its node, for as long as it is open.
#ifndef SLUICE_OPS_INTERLEAVE_H_
#define SLUICE_OPS_INTERLEAVE_H_

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sluice/ops/cardinality.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/user_function.h"

namespace sluice::ops {

template <class T, class F>
class InterleaveNode final : public Node<typename UnwrapStatusOrT<std::invoke_result_t<F&, T>>::element_type> {
 public:
  using SubDataset = UnwrapStatusOrT<std::invoke_result_t<F&, T>>;
  using U = typename SubDataset::element_type;

  InterleaveNode(std::string op, NodePtr<T> input, F f, FunctionParam function, int64_t cycle_length,
                 int64_t block_length)
      : op_(std::move(op)),
        input_(std::move(input)),
        f_(std::move(f)),
        function_(std::move(function)),
        cycle_length_(cycle_length),
        block_length_(block_length) {}
  std::string_view op_name() const override { return op_; }
  std::vector<Param> params() const override {
    return {{"f", function_}, {"cycle_length", cycle_length_}, {"block_length", block_length_}};
  }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override { return kUnknownCardinality; }
  std::unique_ptr<Stream<U>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<InterleaveStream>(op_, input_->MakeStream(context), f_, context, cycle_length_,
                                              block_length_);
  }
  // State: input index, cycle index, block index, input ended, and per slot nothing (empty) or the input
  // element and the slot stream's own checkpoint. The input at /0 unless it ended.
  absl::StatusOr<std::unique_ptr<Stream<U>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    if constexpr (!HasElementCodec<T>) {
      return reader.Unsupported(path);
    } else {
      int64_t input_index = 0;
      int64_t cycle_index = 0;
      int64_t block_index = 0;
      bool input_done = false;
      std::vector<std::optional<std::pair<T, std::string>>> slots;
      if (absl::Status s =
              reader.ReadState(path, &input_index, &cycle_index, &block_index, &input_done, &slots);
          !s.ok()) {
        return s;
      }
      if (slots.size() != static_cast<size_t>(cycle_length_) || cycle_index < 0 ||
          cycle_index >= cycle_length_ || block_index < 0 || block_index >= block_length_ ||
          input_index < 0) {
        return reader.Corrupt(path, absl::DataLossError(absl::StrCat("a cycle of ", slots.size(), " at ",
                                                                     cycle_index, ", block ", block_index)));
      }
      std::unique_ptr<Stream<T>> input;
      if (!input_done) {
        auto restored = input_->RestoreStream(context, reader, ChildNodePath(path, 0));
        if (!restored.ok()) return restored.status();
        input = std::move(*restored);
      }
      auto stream = std::make_unique<InterleaveStream>(op_, std::move(input), f_, context, cycle_length_,
                                                       block_length_);
      stream->input_index_ = input_index;
      stream->cycle_index_ = static_cast<size_t>(cycle_index);
      stream->block_index_ = block_index;
      stream->input_done_ = input_done;
      for (size_t i = 0; i < slots.size(); ++i) {
        if (!slots[i].has_value()) continue;
        absl::Status opened = stream->RestoreSlot(i, std::move(slots[i]->first), slots[i]->second);
        if (!opened.ok()) {
          return absl::Status(opened.code(), absl::StrCat("restoring ", op_, " at ", path, ", cycle slot ", i,
                                                          ": ", opened.message()));
        }
      }
      return stream;
    }
  }

 private:
  class InterleaveStream final : public Stream<U> {
   public:
    InterleaveStream(std::string op, std::unique_ptr<Stream<T>> input, F f, IteratorContextPtr context,
                     int64_t cycle_length, int64_t block_length)
        : op_(std::move(op)),
          input_(std::move(input)),
          f_(std::move(f)),
          context_(std::move(context)),
          slots_(static_cast<size_t>(cycle_length)),
          slot_nodes_(slots_.size()),
          slot_inputs_(slots_.size()),
          block_length_(block_length) {}

    PollState Poll(absl::StatusOr<U>* out) override {
      while (!input_done_ || open_ > 0) {
        std::unique_ptr<Stream<U>>& slot = slots_[cycle_index_];
        if (slot) {
          PollState state = slot->Poll(out);
          if (state == PollState::kPending) {
            waiting_on_ = slot.get();
            return state;
          }
          if (state == PollState::kReady) {
            if (++block_index_ == block_length_) Advance();
            return PollState::kReady;
          }
          slot.reset();
          slot_nodes_[cycle_index_].reset();
          slot_inputs_[cycle_index_] = SavedInput{};
          --open_;
          Advance();
        } else if (!input_done_) {
          PollState state = input_->Poll(&in_);
          if (state == PollState::kPending) {
            waiting_on_ = nullptr;
            return state;
          }
          if (state == PollState::kEnd) {
            input_done_ = true;
            continue;
          }
          int64_t index = input_index_++;
          if (!in_.ok()) {
            *out = std::move(in_).status();
            Advance();
            return PollState::kReady;
          }
          if constexpr (HasElementCodec<T>) slot_inputs_[cycle_index_] = *in_;  // for a save
          absl::StatusOr<SubDataset> sub = InvokeUserFunction(op_, index, f_, std::move(*in_));
          if (!sub.ok()) {
            *out = std::move(sub).status();
            Advance();
            return PollState::kReady;
          }
          slot = sub->node()->MakeStream(context_);
          slot_nodes_[cycle_index_] = sub->node();
          ++open_;
        } else {
          Advance();
        }
      }
      return PollState::kEnd;
    }
    Task<void> WaitReady() override {
      if (waiting_on_ != nullptr) return waiting_on_->WaitReady();
      return input_->WaitReady();
    }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      if constexpr (!HasElementCodec<T>) {
        return Stream<U>::SaveResult(writer->Unsupported(path, "its input elements have no ElementCodec"));
      } else {
        return SaveCycle(this, std::move(writer), std::move(path));
      }
    }

    // Restore: the slot's dataset made again from `element` and its stream restored from `state`.
    absl::Status RestoreSlot(size_t i, T element, const std::string& state) {
      absl::StatusOr<SubDataset> sub = InvokeUserFunction(op_, input_index_, f_, SavedInput(element));
      if (!sub.ok()) return sub.status();
      std::shared_ptr<const Node<U>> node = sub->node();
      absl::StatusOr<CheckpointReader> reader = CheckpointReader::Parse(state, node);
      if (!reader.ok()) return reader.status();
      if (absl::Status s = reader->RestoreRecords(context_->state.get()); !s.ok()) return s;
      auto stream = node->RestoreStream(context_, *reader, std::string(kRootNodePath));
      if (!stream.ok()) return stream.status();
      slots_[i] = std::move(*stream);
      slot_nodes_[i] = std::move(node);
      slot_inputs_[i] = std::move(element);
      ++open_;
      return absl::OkStatus();
    }

    int64_t input_index_ = 0;  // set by RestoreStream, as the four below
    size_t cycle_index_ = 0;
    int64_t block_index_ = 0;
    bool input_done_ = false;

   private:
    // What a slot keeps of its input element for a save: a copy when it has a codec, else nothing.
    using SavedInput = std::conditional_t<HasElementCodec<T>, T, bool>;

    static Task<absl::Status> SaveCycle(InterleaveStream* s, std::shared_ptr<CheckpointWriter> writer,
                                        std::string path) {
      std::vector<std::optional<std::pair<T, std::string>>> slots(s->slots_.size());
      for (size_t i = 0; i < s->slots_.size(); ++i) {
        if (!s->slots_[i]) continue;
        // The slot's dataset is not a node of this graph: its stream goes into a checkpoint of its own.
        auto inner = std::make_shared<CheckpointWriter>(s->slot_nodes_[i].get());
        absl::Status saved = co_await s->slots_[i]->Save(inner, std::string(kRootNodePath));
        absl::StatusOr<std::string> state =
            saved.ok() ? EncodeCheckpoint(s->slot_nodes_[i], *s->context_->state, *inner) : saved;
        if (!state.ok()) {
          co_return absl::Status(state.status().code(), absl::StrCat(s->op_, " at ", path, ", cycle slot ", i,
                                                                     ": ", state.status().message()));
        }
        slots[i].emplace(s->slot_inputs_[i], *std::move(state));
      }
      writer->WriteState(path, s->input_index_, static_cast<int64_t>(s->cycle_index_), s->block_index_,
                         s->input_done_, slots);
      if (s->input_done_) co_return absl::OkStatus();
      co_return co_await s->input_->Save(std::move(writer), ChildNodePath(path, 0));
    }

    void Advance() {
      block_index_ = 0;
      cycle_index_ = cycle_index_ + 1 == slots_.size() ? 0 : cycle_index_ + 1;
    }

    std::string op_;
    std::unique_ptr<Stream<T>> input_;
    F f_;
    IteratorContextPtr context_;
    std::vector<std::unique_ptr<Stream<U>>> slots_;
    // Per slot, for a save: the dataset's node (its stream's checkpoint names it) and its input element.
    std::vector<NodePtr<U>> slot_nodes_;
    std::vector<SavedInput> slot_inputs_;
    int64_t block_length_;
    int64_t open_ = 0;
    absl::StatusOr<T> in_;
    Stream<U>* waiting_on_ = nullptr;
  };

  std::string op_;
  NodePtr<T> input_;
  F f_;
  FunctionParam function_;
  int64_t cycle_length_;
  int64_t block_length_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_INTERLEAVE_H_
