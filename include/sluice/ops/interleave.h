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
// Compact checkpoints (Options::compact_checkpoints): the cycle and, per open slot, the index of its input
// element, the records its dataset's nodes had when it opened and its stream's mark; the input's mark is
// the one from before the oldest open slot's element. A restore re-reads the input from there, calls f
// again on the elements that opened the slots and restores their streams from their marks
// (sluice/ops/nested_checkpoint.h). A dataset f makes that cannot keep a compact state is an error
// element in its slot's turn, naming the node.
#ifndef SLUICE_OPS_INTERLEAVE_H_
#define SLUICE_OPS_INTERLEAVE_H_

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sluice/ops/cardinality.h"
#include "sluice/ops/detail/interleave_compact.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/nested_checkpoint.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/stream_mark.h"
#include "sluice/ops/user_function.h"

namespace sluice::ops {

template <class T, class F>
class InterleaveNode final : public Node<typename UnwrapStatusOrT<std::invoke_result_t<F&, T>>::element_type>,
                             public std::enable_shared_from_this<InterleaveNode<T, F>> {
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
  // The datasets f makes are checked when their slots open.
  bool keeps_compact_state(const Options&) const override { return true; }
  bool rereads_input_by_position() const override { return true; }
  // Compact checkpoints: the seeds of unseeded random ops in the slots derive from this one
  // (sluice/ops/nested_checkpoint.h).
  bool draws_seed() const override { return true; }
  std::unique_ptr<Stream<U>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<InterleaveStream>(op_, input_->MakeStream(context), f_, context, cycle_length_,
                                              block_length_, Key());
  }
  // State: input index, cycle index, block index, input ended, and per slot nothing (empty) or the input
  // element and the slot stream's own checkpoint. The input at /0 unless it ended.
  absl::StatusOr<std::unique_ptr<Stream<U>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    CompactSection compact;
    if (reader
            .ReadState(path, &compact.input_index, &compact.cycle_index, &compact.block_index,
                       &compact.input_done, &compact.marker, &compact.base_index, &compact.has_input,
                       &compact.slots)
            .ok() &&
        compact.marker.empty()) {
      return RestoreCompact(std::move(context), reader, path, std::move(compact));
    }
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
                                                       block_length_, Key());
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
  IteratorState::NodeKey Key() const { return IteratorState::NodeKey{this, this->weak_from_this()}; }

  using CompactSlot = detail_interleave::CompactSlot;
  using CompactSection = detail_interleave::CompactSection;

  absl::StatusOr<std::unique_ptr<Stream<U>>> RestoreCompact(IteratorContextPtr context,
                                                            const CheckpointReader& reader,
                                                            const std::string& path, CompactSection c) const {
    if (absl::Status bad = detail_interleave::CheckCompactSection(c, {}, cycle_length_, block_length_);
        !bad.ok()) {
      return reader.Corrupt(path, bad);
    }
    std::unique_ptr<Stream<T>> input;
    if (c.has_input) {
      auto restored = input_->RestoreStream(context, reader, ChildNodePath(path, 0));
      if (!restored.ok()) return restored.status();
      input = std::move(*restored);
    }
    auto stream = std::make_unique<InterleaveStream>(op_, std::move(input), f_, std::move(context),
                                                     cycle_length_, block_length_, Key());
    stream->BeginRefill(std::move(c));
    return stream;
  }

  class InterleaveStream final : public Stream<U> {
   public:
    InterleaveStream(std::string op, std::unique_ptr<Stream<T>> input, F f, IteratorContextPtr context,
                     int64_t cycle_length, int64_t block_length, IteratorState::NodeKey key)
        : key_(std::move(key)),
          op_(std::move(op)),
          input_(std::move(input)),
          f_(std::move(f)),
          context_(std::move(context)),
          slots_(static_cast<size_t>(cycle_length)),
          slot_nodes_(slots_.size()),
          slot_inputs_(slots_.size()),
          block_length_(block_length),
          marking_(context_->options.compact_checkpoints) {
      if (marking_) {
        slot_index_.resize(slots_.size());
        slot_input_marks_.resize(slots_.size());
        slot_records_.resize(slots_.size());
        slot_unmarked_.resize(slots_.size());
        if (input_ != nullptr) next_mark_ok_ = MarkInput(&next_mark_);
        // Drawn now, so that a state saved before the first slot opens holds it too.
        context_->state->Seed(key_);
      }
    }

    PollState Poll(absl::StatusOr<U>* out) override {
      if (refill_.active) {
        bool yielded = false;
        PollState state = PollRefill(out, &yielded);
        if (state == PollState::kPending || yielded) return state;
      }
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
          if (marking_) {
            slot_input_marks_[cycle_index_].Clear();
            slot_records_[cycle_index_].clear();
            slot_unmarked_[cycle_index_] = 0;
          }
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
          if (marking_) {
            std::swap(pulled_mark_, next_mark_);
            pulled_mark_ok_ = next_mark_ok_;
            next_mark_ok_ = MarkInput(&next_mark_);
          }
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
          if (marking_) {
            if (absl::Status compact = CheckCompactCheckpoints(*sub->node(), context_->options);
                !compact.ok()) {
              *out = absl::InvalidArgumentError(
                  absl::StrCat(op_, ": the dataset f made from input element ", index,
                               " cannot be saved compactly: ", compact.message()));
              if constexpr (HasElementCodec<T>) slot_inputs_[cycle_index_] = SavedInput{};
              Advance();
              return PollState::kReady;
            }
          }
          if (marking_) {
            const uint64_t slot_seed = NestedSlotSeed(context_->state->Seed(key_), index);
            PrepareNestedSeeds(sub->node(), context_->state.get(), slot_seed);
          }
          slot = sub->node()->MakeStream(context_);
          slot_nodes_[cycle_index_] = sub->node();
          ++open_;
          if (marking_) {
            slot_index_[cycle_index_] = index;
            std::swap(slot_input_marks_[cycle_index_], pulled_mark_);
            slot_unmarked_[cycle_index_] = pulled_mark_ok_ ? 0 : 1;
            slot_records_[cycle_index_] = CaptureNestedRecords(sub->node(), context_->state.get());
          }
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
      if (refill_.active || marking_) {
        absl::Status made = CompactSectionNow();
        if (!made.ok()) return Stream<U>::SaveResult(writer->Unsupported(path, std::string(made.message())));
        writer->WriteRaw(path, *section_now_);
        if (input_mark_now_ != nullptr) input_mark_now_->WriteTo(writer.get(), ChildNodePath(path, 0));
        return Stream<U>::SaveResult(absl::OkStatus());
      }
      if constexpr (!HasElementCodec<T>) {
        return Stream<U>::SaveResult(writer->Unsupported(path, "its input elements have no ElementCodec"));
      } else {
        return SaveCycle(this, std::move(writer), std::move(path));
      }
    }

    bool Mark(MarkWriter& mark) const override {
      if (!refill_.active && !marking_) return false;
      if (!CompactSectionNow().ok()) return false;
      mark.WriteRaw(*section_now_);
      if (input_mark_now_ != nullptr) mark.AppendInputMark(0, *input_mark_now_);
      return true;
    }

    // A compact restore (the node's RestoreCompact): the input stands before input element
    // c.base_index; re-read it up to c.input_index before anything else, reopening the slots.
    void BeginRefill(CompactSection c) {
      input_index_ = c.input_index;
      cycle_index_ = static_cast<size_t>(c.cycle_index);
      block_index_ = c.block_index;
      StreamMark input_mark;
      bool input_mark_ok = true;
      if (input_ != nullptr) {
        input_mark_ok = MarkInput(&input_mark);
        if (marking_) {
          next_mark_ = input_mark;
          next_mark_ok_ = input_mark_ok;
        }
      }
      refill_.Begin(std::move(c), {}, std::move(input_mark), input_mark_ok);
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
      if (marking_) slot_unmarked_[i] = 1;  // its input's mark is not known: compact saves wait for its end
      return absl::OkStatus();
    }

    int64_t input_index_ = 0;  // set by RestoreStream, as the four below
    size_t cycle_index_ = 0;
    int64_t block_index_ = 0;
    bool input_done_ = false;

   private:
    // What a slot keeps of its input element for a save: a copy when it has a codec, else nothing.
    using SavedInput = std::conditional_t<HasElementCodec<T>, T, bool>;

    // False when the input cannot mark its place (restored from a full state, as a Shuffle refilling).
    bool MarkInput(StreamMark* out) const { return MarkStream(*input_, out); }

    // The compact section of this stream now into section_now_, and the input's mark to write at /0
    // (null: none); FailedPrecondition's message says why when it cannot be written.
    absl::Status CompactSectionNow() const {
      if (refill_.active) return refill_.SectionNow(&section_now_, &input_mark_now_);
      CompactSection head;
      head.input_index = input_index_;
      head.cycle_index = static_cast<int64_t>(cycle_index_);
      head.block_index = block_index_;
      head.input_done = input_done_;
      head.base_index = input_index_;
      const StreamMark* input_mark = input_done_ ? nullptr : &next_mark_;
      for (size_t i = 0; i < slots_.size(); ++i) {
        if (!slots_[i]) continue;
        if (slot_unmarked_[i]) {
          return absl::FailedPreconditionError(
              absl::StrCat("cycle slot ", i,
                           " was opened where its input could not mark its place (a full state restored): "
                           "compact saves wait for its end"));
        }
        if (slot_index_[i] < head.base_index) {
          head.base_index = slot_index_[i];
          input_mark = &slot_input_marks_[i];
        }
      }
      if (input_mark == &next_mark_ && !next_mark_ok_) {
        return absl::FailedPreconditionError("its input cannot mark its place");
      }
      head.has_input = input_mark != nullptr;
      detail_interleave::EncodeCompactHead(head, &section_);
      detail_interleave::AppendSlotCount(slots_.size(), &section_);
      for (size_t i = 0; i < slots_.size(); ++i) {
        if (!slots_[i]) {
          detail_interleave::AppendEmptySlot(&section_);
          continue;
        }
        slot_writer_.Begin(&slot_mark_);
        if (!slots_[i]->Mark(slot_writer_)) {
          return absl::FailedPreconditionError(absl::StrCat("cycle slot ", i, " cannot mark its place"));
        }
        detail_interleave::AppendOpenSlot(slot_index_[i], slot_records_[i], slot_mark_.bytes(), &section_);
      }
      section_now_ = &section_;
      input_mark_now_ = input_mark;
      return absl::OkStatus();
    }

    // Re-reads input elements [refill_.next, refill_.end), reopening the saved slots from theirs. An
    // error (the input ends early, f or a slot's restore fails) is yielded once (*yielded) and the
    // re-read goes on at the next Poll.
    PollState PollRefill(absl::StatusOr<U>* out, bool* yielded) {
      while (refill_.next < refill_.end) {
        PollState state = input_->Poll(&in_);
        if (state == PollState::kPending) {
          waiting_on_ = nullptr;
          return state;
        }
        if (state == PollState::kEnd) {
          *out = refill_.EndedEarly(op_);
          *yielded = true;
          FinishRefill();
          return PollState::kReady;
        }
        const int64_t index = refill_.next++;
        if (marking_) {
          std::swap(pulled_mark_, next_mark_);
          pulled_mark_ok_ = next_mark_ok_;
          next_mark_ok_ = MarkInput(&next_mark_);
        }
        for (size_t i = 0; i < refill_.slots.size(); ++i) {
          if (!refill_.slots[i] || std::get<0>(*refill_.slots[i]) != index) continue;
          auto& [slot_index, records, mark] = *refill_.slots[i];
          absl::Status opened =
              in_.ok() ? RestoreCompactSlot(i, std::move(*in_), index, records, mark) : in_.status();
          if (!opened.ok()) {
            *out = absl::Status(opened.code(),
                                absl::StrCat("restoring ", op_, ", cycle slot ", i, " (input element ",
                                             slot_index, "): ", opened.message()));
            *yielded = true;
            return PollState::kReady;
          }
          if (marking_) {
            std::swap(slot_input_marks_[i], pulled_mark_);
            slot_unmarked_[i] = pulled_mark_ok_ ? 0 : 1;
          }
          break;
        }
      }
      FinishRefill();
      return PollState::kReady;
    }
    void FinishRefill() {
      refill_.Finish();
      input_done_ = refill_.input_done;
      if (input_done_) input_.reset();
    }
    absl::Status RestoreCompactSlot(size_t i, T element, int64_t index, const std::string& records,
                                    const std::string& mark) {
      if constexpr (HasElementCodec<T>) slot_inputs_[i] = element;
      absl::StatusOr<SubDataset> sub = InvokeUserFunction(op_, index, f_, std::move(element));
      if (!sub.ok()) return sub.status();
      std::shared_ptr<const Node<U>> node = sub->node();
      absl::StatusOr<CheckpointReader> reader = RestoreNestedMark(node, context_->state.get(), records, mark);
      if (!reader.ok()) return reader.status();
      auto stream = node->RestoreStream(context_, *reader, std::string(kRootNodePath));
      if (!stream.ok()) return stream.status();
      slots_[i] = std::move(*stream);
      slot_nodes_[i] = std::move(node);
      ++open_;
      if (marking_) {
        slot_index_[i] = index;
        slot_records_[i] = records;
        slot_unmarked_[i] = 0;
      }
      return absl::OkStatus();
    }

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

    IteratorState::NodeKey key_;  // the node's, for its seed
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

    // Compact checkpoints (marking_): per slot, the input index of its element, the input's mark before
    // that element, the records of its dataset's nodes at its opening, and whether it came from a full
    // state (no mark; char, not vector<bool>).
    bool marking_;
    StreamMark next_mark_;    // the input's mark before its next element
    StreamMark pulled_mark_;  // ... before the element just pulled
    bool next_mark_ok_ = true;
    bool pulled_mark_ok_ = true;
    std::vector<int64_t> slot_index_;
    std::vector<StreamMark> slot_input_marks_;
    std::vector<std::string> slot_records_;
    std::vector<char> slot_unmarked_;
    detail_interleave::Refill refill_;  // a compact restore's re-read
    // Scratch of CompactSectionNow (Save and Mark run on the consumer's thread, one at a time).
    mutable std::string section_;
    mutable MarkWriter slot_writer_;
    mutable StreamMark slot_mark_;
    mutable const std::string* section_now_ = nullptr;
    mutable const StreamMark* input_mark_now_ = nullptr;
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
