// Parallel Interleave, as tf.data.Dataset.interleave(f, cycle_length, block_length, num_parallel_calls,
// deterministic).
//
// Contract:
// - Elements and order: with deterministic=true exactly the sequential Interleave's (sluice/ops/
//   interleave.h): cycle_length open sub-datasets, block_length consecutive elements from each in turn,
//   an exhausted slot refilled with the next input element's dataset when the cycle reaches it. The
//   parallelism only runs ahead: up to num_parallel_calls workers on the pool pull elements of the open
//   sub-datasets into a small buffer per slot (max(block_length, 8) elements), preferring the slots the
//   consumer reaches next. Empty slots are refilled eagerly, in the order the cycle would reach them,
//   which assigns every input element to the same slot as the sequential order does.
//   deterministic=false (sloppy): the consumer takes from whichever slot has data, moving on from a slot
//   that has none ready; the output is the same multiset in another order.
//   deterministic unset = Options::deterministic.
// - Errors: as the sequential form (an input error element or f failing is yielded in that slot's turn;
//   sub-dataset errors are elements). cycle_length or block_length <= 0, num_parallel_calls < -1, or
//   num_parallel_calls > cycle_length (as tf.data's op) are InvalidArgument. num_parallel_calls 0 is the
//   sequential Interleave (C++ has no None); kAutotune lets the iterator's tuner pick up to cycle_length.
// - Input elements and f run on the consumer's thread (f only builds a dataset); sub-dataset streams are
//   polled on the pool, one worker per slot at a time.
// - Inline (kAutotune with the tuner on): at parallelism 0 the consumer polls the slots' streams itself,
//   as the sequential Interleave does, with no buffer or hand-off per element. A new op starts inline (or
//   where the tuner left an earlier iterator of the same dataset, with what it learned); the tuner raises
//   it when workers pay and lowers it again when they stop paying (docs/autotune.md). Elements a worker
//   buffered before the op went inline are returned first.
// - Destruction: stops the workers, waits for them (and for sub-streams they are waiting on), then
//   destroys the sub-streams and the input. Cardinality: unknown.
// - Checkpoints (docs/checkpoint.md): Save pauses the workers as ParallelMap does (a flag under the lock
//   they already take, awaited without blocking a thread; a worker waiting on a sub-stream waits until it
//   is ready), then saves the cycle as the sequential Interleave does, plus each slot's buffered elements
//   (they need an ElementCodec), error and end. Workers start again at the next Poll.
//   Compact checkpoints (Options::compact_checkpoints), deterministic or not: as the sequential Interleave's
//   compact section (sluice/ops/detail/interleave_compact.h), plus the slots whose error waits for its
//   turn. A slot's mark is its stream's mark after the last element the consumer took from it: workers
//   mark the stream after each element they buffer, and the consumer keeps the mark of what it takes, so
//   a save pauses nothing and buffered elements are read again after a restore. Sloppy order restores
//   the same multiset.
//
//   Dataset<std::string> records = ListFiles({"/data/*.tfrecord"}).Interleave(
//       [](std::string file) { return TFRecord({file}); }, /*cycle_length=*/4, /*block_length=*/16,
//       /*num_parallel_calls=*/4);
#ifndef SLUICE_OPS_PARALLEL_INTERLEAVE_H_
#define SLUICE_OPS_PARALLEL_INTERLEAVE_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/engine/async_event.h"
#include "sluice/engine/async_scope.h"
#include "sluice/engine/thread_pool.h"
#include "sluice/ops/autotune.h"
#include "sluice/ops/cardinality.h"
#include "sluice/ops/detail/async_stream_owner.h"
#include "sluice/ops/detail/interleave_compact.h"
#include "sluice/ops/detail/value_ring.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/interleave.h"
#include "sluice/ops/nested_checkpoint.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/parallel_map.h"
#include "sluice/ops/stream_mark.h"
#include "sluice/ops/user_function.h"
#include "sluice/ops/user_function_stop.h"

namespace sluice::ops {

template <class T, class F>
class ParallelInterleaveNode final
    : public Node<typename UnwrapStatusOrT<std::invoke_result_t<F&, T>>::element_type>,
      public std::enable_shared_from_this<ParallelInterleaveNode<T, F>> {
 public:
  using SubDataset = UnwrapStatusOrT<std::invoke_result_t<F&, T>>;
  using U = typename SubDataset::element_type;

  ParallelInterleaveNode(NodePtr<T> input, F f, FunctionParam function, int64_t cycle_length,
                         int64_t block_length, int64_t num_parallel_calls, std::optional<bool> deterministic)
      : input_(std::move(input)),
        f_(std::move(f)),
        function_(std::move(function)),
        cycle_length_(cycle_length),
        block_length_(block_length),
        num_parallel_calls_(num_parallel_calls),
        deterministic_(deterministic) {}
  std::string_view op_name() const override { return "ParallelInterleave"; }
  std::vector<Param> params() const override {
    std::vector<Param> params = {{"f", function_},
                                 {"cycle_length", cycle_length_},
                                 {"block_length", block_length_},
                                 {"num_parallel_calls", num_parallel_calls_}};
    if (deterministic_) params.push_back({"deterministic", *deterministic_});
    return params;
  }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override { return kUnknownCardinality; }
  // The datasets f makes are checked when their slots open; slot seeds derive from this op's.
  bool keeps_compact_state(const Options&) const override { return true; }
  // Sloppy order restores the same multiset, in an order of its own.
  bool keeps_order(const Options& options) const override {
    return deterministic_.value_or(options.deterministic);
  }
  bool rereads_input_by_position() const override { return true; }
  bool draws_seed() const override { return true; }

 private:
  class ParallelInterleaveStream;
  IteratorState::NodeKey Key() const { return IteratorState::NodeKey{this, this->weak_from_this()}; }
  std::unique_ptr<ParallelInterleaveStream> MakeImpl(const IteratorContextPtr& context,
                                                     std::unique_ptr<Stream<T>> input) const {
    bool deterministic = deterministic_.value_or(context->options.deterministic);
    int cycle = static_cast<int>(cycle_length_);
    int initial = 0;
    int max_parallelism = 0;
    Tuner* tuner = nullptr;
    TuningHistory remembered;
    if (num_parallel_calls_ == kAutotune) {
      max_parallelism = std::min(cycle, std::max(1, CpuBudget(*context)));
      tuner = TunerFor(*context);
      // Tuned: inline (0: the sequential Interleave's step, on the consumer's thread) until the tuner
      // finds that workers pay, unless an earlier iterator of this node was tuned: then where that one
      // was left.
      if (tuner != nullptr) remembered = tuning_memory_->Load();
      initial =
          tuner != nullptr ? std::min(max_parallelism, std::max(0, remembered.parallelism)) : max_parallelism;
    } else {
      initial = max_parallelism = static_cast<int>(std::min<int64_t>(num_parallel_calls_, cycle_length_));
    }
    return std::make_unique<ParallelInterleaveStream>(
        std::move(input), f_, context, cycle_length_, block_length_, initial, max_parallelism, deterministic,
        tuner, Key(), tuner != nullptr ? tuning_memory_ : nullptr, remembered);
  }

 public:
  std::unique_ptr<Stream<U>> MakeStream(IteratorContextPtr context) const override {
    std::unique_ptr<Stream<T>> input = input_->MakeStream(context);
    return std::make_unique<detail_teardown::AsyncStreamOwner<ParallelInterleaveStream>>(
        MakeImpl(context, std::move(input)), context->teardowns);
  }
  // State: input index, cursor, block index, input ended, then per slot: its error (an input error or f
  // failure waiting for its turn), its open stream (input element and the stream's own checkpoint, as
  // Interleave), its buffered elements and whether its stream ended. The input at /0 unless it ended.
  absl::StatusOr<std::unique_ptr<Stream<U>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    detail_interleave::CompactSection compact;
    detail_interleave::ErrorSlots errors;
    if (reader
            .ReadState(path, &compact.input_index, &compact.cycle_index, &compact.block_index,
                       &compact.input_done, &compact.marker, &compact.base_index, &compact.has_input,
                       &compact.slots, &errors)
            .ok() &&
        compact.marker.empty()) {
      if (absl::Status bad =
              detail_interleave::CheckCompactSection(compact, errors, cycle_length_, block_length_);
          !bad.ok()) {
        return reader.Corrupt(path, bad);
      }
      std::unique_ptr<Stream<T>> input;
      if (compact.has_input) {
        auto restored = input_->RestoreStream(context, reader, ChildNodePath(path, 0));
        if (!restored.ok()) return restored.status();
        input = std::move(*restored);
      }
      std::unique_ptr<ParallelInterleaveStream> impl = MakeImpl(context, std::move(input));
      impl->BeginRefill(std::move(compact), std::move(errors));
      return std::make_unique<detail_teardown::AsyncStreamOwner<ParallelInterleaveStream>>(
          std::move(impl), context->teardowns);
    }
    if constexpr (!HasElementCodec<T> || !HasElementCodec<U>) {
      return reader.Unsupported(path);
    } else {
      int64_t input_index = 0;
      int64_t cursor = 0;
      int64_t block_index = 0;
      bool input_done = false;
      std::vector<SavedSlot> slots;
      if (absl::Status s = reader.ReadState(path, &input_index, &cursor, &block_index, &input_done, &slots);
          !s.ok()) {
        return s;
      }
      bool valid = slots.size() == static_cast<size_t>(cycle_length_) && cursor >= 0 &&
                   cursor < cycle_length_ && block_index >= 0 && block_index < block_length_ &&
                   input_index >= 0;
      for (const SavedSlot& slot : slots) {
        valid = valid && !(std::get<0>(slot).has_value() && std::get<1>(slot).has_value()) &&
                (std::get<1>(slot).has_value() || (std::get<2>(slot).empty() && !std::get<3>(slot)));
      }
      if (!valid) {
        return reader.Corrupt(path, absl::DataLossError(absl::StrCat("a cycle of ", slots.size(), " at ",
                                                                     cursor, ", block ", block_index)));
      }
      std::unique_ptr<Stream<T>> input;
      if (!input_done) {
        auto restored = input_->RestoreStream(context, reader, ChildNodePath(path, 0));
        if (!restored.ok()) return restored.status();
        input = std::move(*restored);
      }
      std::unique_ptr<ParallelInterleaveStream> impl = MakeImpl(context, std::move(input));
      absl::Status restored = impl->RestoreCycle(input_index, static_cast<size_t>(cursor), block_index,
                                                 input_done, std::move(slots));
      if (!restored.ok()) {
        return absl::Status(restored.code(),
                            absl::StrCat("restoring ParallelInterleave at ", path, ", ", restored.message()));
      }
      return std::make_unique<detail_teardown::AsyncStreamOwner<ParallelInterleaveStream>>(
          std::move(impl), context->teardowns);
    }
  }

 private:
  // A slot as Save writes it: error, stream (input element, checkpoint), buffered elements, ended.
  using SavedSlot = std::tuple<std::optional<absl::Status>, std::optional<std::pair<T, std::string>>,
                               std::vector<absl::StatusOr<U>>, bool>;
  class ParallelInterleaveStream final : public Stream<U>, public RememberingTunable {
   public:
    ParallelInterleaveStream(std::unique_ptr<Stream<T>> input, F f, IteratorContextPtr context,
                             int64_t cycle_length, int64_t block_length, int parallelism, int max_parallelism,
                             bool deterministic, Tuner* tuner, IteratorState::NodeKey key,
                             std::shared_ptr<TuningMemory> memory, TuningHistory remembered)
        : RememberingTunable(std::move(memory), remembered),
          key_(std::move(key)),
          input_(std::move(input)),
          f_(std::move(f)),
          context_(std::move(context)),
          pool_(context_->pool),
          block_length_(block_length),
          slot_capacity_(static_cast<size_t>(std::max<int64_t>(block_length, 8))),
          deterministic_(deterministic),
          max_parallelism_(std::max(1, max_parallelism)),
          min_parallelism_(tuner != nullptr ? 0 : 1),
          target_(std::clamp(parallelism, min_parallelism_, max_parallelism_)),
          compact_(context_->options.compact_checkpoints),
          slots_(static_cast<size_t>(cycle_length)),
          empty_(static_cast<size_t>(cycle_length)),
          ready_(/*initially_set=*/false, context_->pool),
          tuner_(tuner) {
      if (compact_) {
        if (input_ != nullptr) next_mark_ok_ = MarkInput(&next_mark_);
        // Drawn now, so that a state saved before the first slot opens holds it too.
        context_->state->Seed(key_);
      }
    }

    // Joined here only when nothing runs any more: made under an AsyncStreamOwner, which joins (or, on
    // a pool worker, hands off) first.
    ~ParallelInterleaveStream() override {
      BeginShutdown();
      scope_.JoinBlocking();
    }
    AsyncScope& scope() { return scope_; }

    PollState Poll(absl::StatusOr<U>* out) override {
      inline_waits_.Resumed(this);
      const bool timed = inline_ && (++inline_polls_ & (kInlineSampleEvery - 1)) == 0;
      const auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
      PollState state = PollOnce(out);
      if (state == PollState::kReady) CountOutput();
      // Inline, the consumer's time here is its wait on this op (sampled: clock reads stay off the
      // per-element path).
      if (timed) {
        AddConsumerWait(kInlineSampleEvery * std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                 std::chrono::steady_clock::now() - start)
                                                 .count());
      }
      return state;
    }

   private:
    PollState PollOnce(absl::StatusOr<U>* out) {
      if (!started_) Start();
      waiting_on_input_ = false;
      inline_waiting_ = nullptr;
      if (inline_ || (tuner_ != nullptr && target_.load(std::memory_order_relaxed) == 0 && EnterInline())) {
        if (target_.load(std::memory_order_relaxed) != 0) LeaveInline();
      }
      if (refill_.active) [[unlikely]] {
        bool yielded = false;
        PollState state = PollRefill(out, &yielded);
        if (state == PollState::kPending || yielded) return state;
      }
      size_t misses = 0;  // sloppy: slots passed over without data in this call
      for (;;) {
        if (empty_ > 0 && !input_done_) Fill();
        size_t i = cursor_.load(std::memory_order_relaxed);
        Slot& slot = slots_[i];
        if (inline_ && slot.stream != nullptr && slot.buffer.empty() && !slot.ended && !slot.error) {
          // Inline: no worker exists or starts meanwhile, so the consumer polls the slot's stream itself
          // and touches the slot without the lock (the tuner reads only under mu_ what this leaves alone).
          PollState state = slot.stream->Poll(out);
          if (state == PollState::kReady) {
            if (compact_) {
              mark_writer_.Begin(&slot.returned);
              if (!slot.stream->Mark(mark_writer_)) {
                std::lock_guard<std::mutex> lock(mu_);
                slot.unmarked = true;
              }
            }
            if (++block_index_ == block_length_) AdvanceLocked();
            return PollState::kReady;
          }
          if (state == PollState::kEnd) {
            std::lock_guard<std::mutex> lock(mu_);
            slot.ended = true;  // closed below, as a worker's end is
          } else if (!deterministic_ && ++misses <= slots_.size()) {
            AdvanceLocked();
            continue;
          } else {
            inline_waiting_ = slot.stream.get();
            return PollState::kPending;
          }
        }
        std::unique_ptr<Stream<U>> closed;
        NodePtr<U> closed_node;  // kept for a save while open; freed with the stream
        std::coroutine_handle<> wake;
        bool kept_in_turn = false;
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (slot.error) {
            *out = std::move(*slot.error);
            slot.error.reset();
            if (compact_) slot.ClearMarks();
            ++empty_;
            AdvanceLocked();
            return PollState::kReady;
          }
          if (slot.stream == nullptr) {
            if (!input_done_) {
              // Fill stopped on a pending input: wait for it (sloppy: try the other slots first).
              if (!deterministic_ && ++misses <= slots_.size()) {
                AdvanceLocked();
                continue;
              }
              waiting_on_input_ = true;
              return PollState::kPending;
            }
            if (empty_ == slots_.size()) return PollState::kEnd;
            AdvanceLocked();
            continue;
          }
          if (!slot.buffer.empty()) {
            if (slot.buffer.size() == slot_capacity_ && !slot.ended && !slot.busy) wake = parked_.TakeOne();
            *out = std::move(slot.buffer.front());
            slot.buffer.pop_front();
            if (compact_) {
              std::swap(slot.returned, slot.marks.front());
              slot.marks.pop_front();
            }
            if (++block_index_ == block_length_) AdvanceLocked();
            kept_in_turn = true;
          } else if (slot.ended) {
            closed = std::move(slot.stream);
            closed_node = std::move(slot.node);
            slot.input = SavedInput{};
            slot.ended = false;
            if (compact_) slot.ClearMarks();
            ++empty_;
            AdvanceLocked();
          } else if (!deterministic_ && ++misses <= slots_.size()) {
            AdvanceLocked();
            continue;
          } else {
            return PollState::kPending;
          }
        }
        if (kept_in_turn) {
          if (wake) pool_->Execute(wake);
          return PollState::kReady;
        }
        closed.reset();  // outside the lock: a sub-stream's destructor may join work of its own
        closed_node.reset();
      }
    }

   public:
    Task<void> WaitReady() override {
      if (waiting_on_input_) return input_->WaitReady();
      if (inline_waiting_ != nullptr) {
        // The slot stream's own wait, with no frame of ours around it (only the consumer closes a slot, so
        // the stream lives on); its time is sampled from this pending Poll to the next one.
        inline_waits_.Pending();
        return inline_waiting_->WaitReady();
      }
      return Wait(this);
    }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      if (refill_.active || compact_) {
        absl::Status made = CompactSectionNow();
        if (!made.ok()) return Stream<U>::SaveResult(writer->Unsupported(path, std::string(made.message())));
        writer->WriteRaw(path, *section_now_);
        if (input_mark_now_ != nullptr) input_mark_now_->WriteTo(writer.get(), ChildNodePath(path, 0));
        return Stream<U>::SaveResult(absl::OkStatus());
      }
      if constexpr (!HasElementCodec<T> || !HasElementCodec<U>) {
        return Stream<U>::SaveResult(writer->Unsupported(path, "its elements have no ElementCodec"));
      } else {
        return SavePaused(this, std::move(writer), std::move(path));
      }
    }

    bool Mark(MarkWriter& mark) const override {
      if (!refill_.active && !compact_) return false;
      if (!CompactSectionNow().ok()) return false;
      mark.WriteRaw(*section_now_);
      if (input_mark_now_ != nullptr) mark.AppendInputMark(0, *input_mark_now_);
      return true;
    }

    // A compact restore: the input stands before input element c.base_index; the first Polls re-read it
    // up to c.input_index, reopening the saved slots (and their errors) from their elements.
    void BeginRefill(detail_interleave::CompactSection c, detail_interleave::ErrorSlots errors) {
      input_index_ = c.input_index;
      cursor_.store(static_cast<size_t>(c.cycle_index), std::memory_order_relaxed);
      block_index_ = c.block_index;
      StreamMark input_mark;
      bool input_mark_ok = true;
      if (input_ != nullptr) {
        input_mark_ok = MarkInput(&input_mark);
        if (compact_) {
          next_mark_ = input_mark;
          next_mark_ok_ = input_mark_ok;
        }
      }
      std::string trailing;
      ElementCodec<detail_interleave::ErrorSlots>::Encode(errors, &trailing);
      refill_errors_ = std::move(errors);
      refill_.Begin(std::move(c), trailing, std::move(input_mark), input_mark_ok);
    }

    // Before the first Poll of a restored stream: the cycle as Save wrote it.
    absl::Status RestoreCycle(int64_t input_index, size_t cursor, int64_t block_index, bool input_done,
                              std::vector<SavedSlot> saved) {
      input_index_ = input_index;
      cursor_.store(cursor, std::memory_order_relaxed);
      block_index_ = block_index;
      input_done_ = input_done;
      empty_ = 0;
      for (size_t i = 0; i < saved.size(); ++i) {
        Slot& slot = slots_[i];
        slot.error = std::move(std::get<0>(saved[i]));
        std::optional<std::pair<T, std::string>>& open = std::get<1>(saved[i]);
        if (open.has_value()) {
          absl::StatusOr<SubDataset> sub =
              InvokeUserFunction("ParallelInterleave", input_index, f_, SavedInput(open->first));
          if (!sub.ok()) return Annotated(i, sub.status());
          NodePtr<U> node = sub->node();
          absl::StatusOr<CheckpointReader> reader = CheckpointReader::Parse(open->second, node);
          if (!reader.ok()) return Annotated(i, reader.status());
          if (absl::Status s = reader->RestoreRecords(context_->state.get()); !s.ok()) return Annotated(i, s);
          auto stream = node->RestoreStream(context_, *reader, std::string(kRootNodePath));
          if (!stream.ok()) return Annotated(i, stream.status());
          slot.stream = std::move(*stream);
          slot.node = std::move(node);
          slot.input = std::move(open->first);
        }
        for (absl::StatusOr<U>& x : std::get<2>(saved[i])) slot.buffer.push_back(std::move(x));
        slot.ended = std::get<3>(saved[i]);
        if (compact_) {  // a full state has no marks: compact saves wait until this slot closes
          for (size_t k = 0; k < slot.buffer.size(); ++k) slot.marks.emplace_back();
          slot.unmarked = slot.stream != nullptr || slot.error.has_value();
        }
        if (slot.stream == nullptr && !slot.error) ++empty_;
      }
      return absl::OkStatus();
    }

    int parallelism() const override { return target_.load(std::memory_order_relaxed); }
    int max_parallelism() const override { return max_parallelism_; }
    int min_parallelism() const override { return min_parallelism_; }
    bool counts_output() const override { return tuner_ != nullptr; }
    void SetParallelism(int n) override {
      n = std::clamp(n, min_parallelism_, max_parallelism_);
      target_.store(n, std::memory_order_relaxed);
      std::lock_guard<std::mutex> spawn_lock(spawn_mu_);
      if (spawn_closed_ || !spawning_) return;
      int to_spawn = 0;
      std::vector<std::coroutine_handle<>> wake;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return;
        to_spawn = std::max(0, n - running_);
        running_ += to_spawn;
        parked_.TakeAll(&wake);
      }
      for (int i = 0; i < to_spawn; ++i) scope_.Spawn(Worker(this));
      detail_parallel::ResumeAllOn(pool_, &wake);
    }
    BufferStats buffer_stats() const override {
      std::lock_guard<std::mutex> lock(mu_);
      BufferStats stats;
      for (const Slot& s : slots_) stats.size += static_cast<int64_t>(s.buffer.size());
      stats.capacity = static_cast<int64_t>(slots_.size() * slot_capacity_);
      return stats;
    }

   private:
    template <class Owner>
    friend class detail_parallel::ParkAwaiter;

    // What a slot keeps of its input element for a save: a copy when it has a codec, else nothing.
    using SavedInput = std::conditional_t<HasElementCodec<T>, T, bool>;

    struct Slot {
      std::unique_ptr<Stream<U>> stream;   // the open sub-dataset (null: empty, or an error waiting)
      NodePtr<U> node;                     // its dataset's node, and the input element it came from
      SavedInput input{};
      std::optional<absl::Status> error;   // an input error or f failure, yielded in this slot's turn
      detail_ring::ValueRing<absl::StatusOr<U>> buffer;  // no allocation or free per element (value_ring.h)
      bool busy = false;   // a worker owns `stream` (polling it or awaiting its WaitReady)
      bool ended = false;  // `stream` is over; the slot closes once `buffer` is drained
      // Compact checkpoints: the input index of the element that opened the slot (or failed), the input's
      // mark before it, the records of its dataset's nodes at its opening, its stream's mark after the
      // last element the consumer took and after each buffered one (`marks`, beside `buffer`); unmarked:
      // one of them is unknown (a full state restored), so compact saves wait until the slot closes.
      int64_t index = 0;
      StreamMark input_mark;
      std::string records;
      StreamMark returned;
      detail_ring::ValueRing<StreamMark> marks;
      bool unmarked = false;

      void ClearMarks() {
        input_mark.Clear();
        records.clear();
        returned.Clear();
        marks.clear();
        unmarked = false;
      }
    };

    // A slot's contents as the consumer makes them, before they are published under mu_.
    struct Opened {
      std::unique_ptr<Stream<U>> stream;
      NodePtr<U> node;
      SavedInput input{};
      std::optional<absl::Status> error;
      std::string records;
      StreamMark returned;
      bool marked = true;
    };

    static constexpr uint32_t kInlineSampleEvery = 64;  // a power of two

    void Start() {
      started_ = true;
      if (!inline_) {  // inline, the consumer starts the workers when it leaves
        {
          std::lock_guard<std::mutex> spawn_lock(spawn_mu_);
          spawning_ = true;
        }
        SetParallelism(target_.load(std::memory_order_relaxed));
      }
      if (tuner_ != nullptr && !registration_) registration_.emplace(tuner_, this);  // kept across a pause
    }

    // Enters inline once the workers have exited (consumer only); what they buffered is returned first.
    bool EnterInline() {
      std::lock_guard<std::mutex> spawn_lock(spawn_mu_);
      std::lock_guard<std::mutex> lock(mu_);
      if (running_ != 0 || pausing_) return false;
      spawning_ = false;  // the tuner's SetParallelism now only sets the target; the consumer starts workers
      inline_ = true;
      return true;
    }
    void LeaveInline() {
      inline_ = false;
      {
        std::lock_guard<std::mutex> spawn_lock(spawn_mu_);
        spawning_ = !spawn_closed_;
      }
      SetParallelism(target_.load(std::memory_order_relaxed));
    }
    bool InlineDueLocked() const {
      return tuner_ != nullptr && running_ == 0 && target_.load(std::memory_order_relaxed) == 0;
    }

    static absl::Status Annotated(size_t slot, const absl::Status& status) {
      return absl::Status(status.code(), absl::StrCat("cycle slot ", slot, ": ", status.message()));
    }

    // A save's pause: no new spawns, and every worker exits at its next check under mu_ (parked ones are
    // woken to see it). A worker waiting on a sub-stream's WaitReady waits until it is ready (cancelling
    // it could end a file reader), then exits; its slot is free again then.
    static Task<absl::Status> SavePaused(ParallelInterleaveStream* s,
                                         std::shared_ptr<CheckpointWriter> writer, std::string path) {
      if (s->started_) {
        std::vector<std::coroutine_handle<>> wake;
        {
          std::lock_guard<std::mutex> spawn_lock(s->spawn_mu_);
          s->spawning_ = false;
          std::lock_guard<std::mutex> lock(s->mu_);
          s->pausing_ = true;
          s->parked_.TakeAll(&wake);
        }
        detail_parallel::ResumeAllOn(s->pool_, &wake);
        co_await s->scope_.Join();  // resumed by the last worker to exit, on its thread: nothing blocks
        std::lock_guard<std::mutex> lock(s->mu_);
        s->pausing_ = false;
        s->started_ = false;  // the next Poll starts new workers
      }
      // No worker runs now; the tuner only reads under mu_, so reading the slots needs no lock.
      std::vector<SavedSlot> slots(s->slots_.size());
      for (size_t i = 0; i < s->slots_.size(); ++i) {
        Slot& slot = s->slots_[i];
        std::get<0>(slots[i]) = slot.error;
        if (slot.stream != nullptr) {
          // The slot's dataset is not a node of this graph: its stream goes into a checkpoint of its own.
          auto inner = std::make_shared<CheckpointWriter>(slot.node.get());
          absl::Status saved = co_await slot.stream->Save(inner, std::string(kRootNodePath));
          absl::StatusOr<std::string> state =
              saved.ok() ? EncodeCheckpoint(slot.node, *s->context_->state, *inner) : saved;
          if (!state.ok()) {
            co_return absl::Status(
                state.status().code(),
                absl::StrCat("ParallelInterleave at ", path, ", ", Annotated(i, state.status()).message()));
          }
          std::get<1>(slots[i]).emplace(slot.input, *std::move(state));
        }
        for (size_t k = 0; k < slot.buffer.size(); ++k) std::get<2>(slots[i]).push_back(slot.buffer[k]);
        std::get<3>(slots[i]) = slot.ended;
      }
      writer->WriteState(path, s->input_index_,
                         static_cast<int64_t>(s->cursor_.load(std::memory_order_relaxed)), s->block_index_,
                         s->input_done_, slots);
      if (s->input_done_) co_return absl::OkStatus();
      co_return co_await s->input_->Save(std::move(writer), ChildNodePath(path, 0));
    }

   public:
    void BeginShutdown() {
      registration_.reset();
      std::vector<std::coroutine_handle<>> wake;
      {
        std::lock_guard<std::mutex> spawn_lock(spawn_mu_);
        spawn_closed_ = true;
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
        parked_.TakeAll(&wake);
      }
      scope_.RequestStop();
      detail_parallel::ResumeAllOn(pool_, &wake);
    }

   private:

    // Consumer, under mu_ (workers read the cursor to choose what to fill first).
    void AdvanceLocked() {
      block_index_ = 0;
      size_t i = cursor_.load(std::memory_order_relaxed);
      cursor_.store(i + 1 == slots_.size() ? 0 : i + 1, std::memory_order_relaxed);
    }

    // Opens every empty slot, in the order the cycle reaches them, while the input has elements ready.
    void Fill() {
      size_t n = slots_.size();
      size_t start = cursor_.load(std::memory_order_relaxed);
      for (size_t k = 0; k < n && empty_ > 0 && !input_done_; ++k) {
        const size_t i = (start + k) % n;
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (slots_[i].stream != nullptr || slots_[i].error) continue;
        }
        PollState state = input_->Poll(&in_);
        if (state == PollState::kPending) return;
        if (state == PollState::kEnd) {
          input_done_ = true;
          return;
        }
        int64_t index = input_index_++;
        PulledInput();
        Install(i, index, Open(index, std::move(in_)));
      }
    }

    // The input's marks after it yielded an element (compact checkpoints).
    void PulledInput() {
      if (!compact_) return;
      std::swap(pulled_mark_, next_mark_);
      pulled_mark_ok_ = next_mark_ok_;
      next_mark_ok_ = MarkInput(&next_mark_);
    }
    // False when the input cannot mark its place (restored from a full state, as a Shuffle refilling).
    bool MarkInput(StreamMark* out) const { return MarkStream(*input_, out); }

    // The slot input element `index` opens: f's dataset and its stream, or the error to yield in its turn.
    Opened Open(int64_t index, absl::StatusOr<T> in) {
      Opened o;
      if (!in.ok()) {
        o.error = std::move(in).status();
        return o;
      }
      if constexpr (HasElementCodec<T>) o.input = *in;  // for a full save
      absl::StatusOr<SubDataset> sub = InvokeUserFunction("ParallelInterleave", index, f_, std::move(*in));
      if (!sub.ok()) {
        o.error = std::move(sub).status();
        return o;
      }
      o.node = sub->node();
      if (compact_) {
        if (absl::Status compact = CheckCompactCheckpoints(*o.node, context_->options); !compact.ok()) {
          o.error = absl::InvalidArgumentError(
              absl::StrCat("ParallelInterleave: the dataset f made from input element ", index,
                           " cannot be saved compactly: ", compact.message()));
          o.node.reset();
          return o;
        }
        PrepareNestedSeeds(o.node, context_->state.get(), NestedSlotSeed(context_->state->Seed(key_), index));
      }
      o.stream = o.node->MakeStream(context_);
      if (compact_) {
        o.records = CaptureNestedRecords(o.node, context_->state.get());
        o.marked = MarkStream(*o.stream, &o.returned);
      }
      return o;
    }

    // Publishes what Open made into empty slot i (the input's mark before its element in pulled_mark_).
    void Install(size_t i, int64_t index, Opened o) {
      std::coroutine_handle<> wake;
      {
        std::lock_guard<std::mutex> lock(mu_);
        Slot& slot = slots_[i];
        --empty_;
        if (o.error) {
          slot.error = std::move(o.error);
        } else {
          slot.stream = std::move(o.stream);
          slot.node = std::move(o.node);
          slot.input = std::move(o.input);
          slot.buffer.clear();
          slot.ended = false;
          wake = parked_.TakeOne();
        }
        if (compact_) {
          slot.index = index;
          std::swap(slot.input_mark, pulled_mark_);
          slot.records = std::move(o.records);
          slot.returned = std::move(o.returned);
          slot.marks.clear();
          slot.unmarked = !pulled_mark_ok_ || !o.marked;
        }
      }
      if (wake) pool_->Execute(wake);
    }

    // The compact section of this stream now into section_now_, and the input's mark to write at /0
    // (null: none); FailedPrecondition's message says why when it cannot be written. Consumer only: it
    // reads what the consumer alone changes (the cycle, the slots' streams, errors and returned marks).
    absl::Status CompactSectionNow() const {
      if (refill_.active) return refill_.SectionNow(&section_now_, &input_mark_now_);
      std::lock_guard<std::mutex> lock(mu_);  // slot.unmarked is also set by workers
      detail_interleave::CompactSection head;
      head.input_index = input_index_;
      head.cycle_index = static_cast<int64_t>(cursor_.load(std::memory_order_relaxed));
      head.block_index = block_index_;
      head.input_done = input_done_;
      head.base_index = input_index_;
      const StreamMark* input_mark = input_done_ ? nullptr : &next_mark_;
      errors_now_.clear();
      for (size_t i = 0; i < slots_.size(); ++i) {
        const Slot& slot = slots_[i];
        if (slot.stream == nullptr && !slot.error) continue;
        if (slot.unmarked) {
          return absl::FailedPreconditionError(
              absl::StrCat("cycle slot ", i,
                           " has no mark (opened from a full state, or its dataset cannot mark its place): "
                           "compact saves wait until it closes"));
        }
        if (slot.index < head.base_index) {
          head.base_index = slot.index;
          input_mark = &slot.input_mark;
        }
        if (slot.error) errors_now_.emplace_back(static_cast<int64_t>(i), slot.index);
      }
      if (input_mark == &next_mark_ && !next_mark_ok_) {
        return absl::FailedPreconditionError("its input cannot mark its place");
      }
      head.has_input = input_mark != nullptr;
      detail_interleave::EncodeCompactHead(head, &section_);
      detail_interleave::AppendSlotCount(slots_.size(), &section_);
      for (const Slot& slot : slots_) {
        if (slot.stream == nullptr) {
          detail_interleave::AppendEmptySlot(&section_);
        } else {
          detail_interleave::AppendOpenSlot(slot.index, slot.records, slot.returned.bytes(), &section_);
        }
      }
      ElementCodec<detail_interleave::ErrorSlots>::Encode(errors_now_, &section_);
      section_now_ = &section_;
      input_mark_now_ = input_mark;
      return absl::OkStatus();
    }

    // Re-reads input elements [refill_.next, refill_.end), reopening the saved slots from theirs. An error
    // (the input ends early, f or a slot's restore fails) is yielded once (*yielded) and the re-read goes
    // on at the next Poll.
    PollState PollRefill(absl::StatusOr<U>* out, bool* yielded) {
      while (refill_.next < refill_.end) {
        PollState state = input_->Poll(&in_);
        if (state == PollState::kPending) {
          waiting_on_input_ = true;
          return state;
        }
        if (state == PollState::kEnd) {
          *out = refill_.EndedEarly("ParallelInterleave");
          *yielded = true;
          FinishRefill();
          return PollState::kReady;
        }
        const int64_t index = refill_.next++;
        PulledInput();
        for (size_t i = 0; i < refill_.slots.size(); ++i) {
          if (!refill_.slots[i] || std::get<0>(*refill_.slots[i]) != index) continue;
          const auto& [slot_index, records, mark] = *refill_.slots[i];
          absl::StatusOr<Opened> reopened =
              in_.ok() ? Reopen(index, std::move(*in_), records, mark) : absl::StatusOr<Opened>(in_.status());
          if (!reopened.ok()) {
            *out =
                absl::Status(reopened.status().code(),
                             absl::StrCat("restoring ParallelInterleave, cycle slot ", i, " (input element ",
                                          slot_index, "): ", reopened.status().message()));
            *yielded = true;
            return PollState::kReady;
          }
          Install(i, index, *std::move(reopened));
          break;
        }
        for (const auto& [slot, error_index] : refill_errors_) {
          if (error_index != index) continue;
          Opened o = Open(index, std::move(in_));
          if (!o.error) {
            o.error = absl::DataLossError(
                absl::StrCat("ParallelInterleave: restoring a compact checkpoint, input element ", index,
                             " opened a dataset where the saved iterator had an error"));
          }
          o.stream.reset();
          Install(static_cast<size_t>(slot), index, std::move(o));
          break;
        }
      }
      FinishRefill();
      return PollState::kReady;
    }
    void FinishRefill() {
      refill_.Finish();
      refill_errors_.clear();
      input_done_ = refill_.input_done;
      std::vector<std::coroutine_handle<>> wake;
      {
        std::lock_guard<std::mutex> lock(mu_);
        empty_ = 0;
        for (const Slot& slot : slots_) empty_ += slot.stream == nullptr && !slot.error ? 1 : 0;
        parked_.TakeAll(&wake);
      }
      detail_parallel::ResumeAllOn(pool_, &wake);
    }
    // A saved slot's dataset made again from its re-read element, its stream restored from its mark.
    absl::StatusOr<Opened> Reopen(int64_t index, T element, const std::string& records,
                                  const std::string& mark) {
      Opened o;
      if constexpr (HasElementCodec<T>) o.input = element;
      absl::StatusOr<SubDataset> sub =
          InvokeUserFunction("ParallelInterleave", index, f_, std::move(element));
      if (!sub.ok()) return sub.status();
      o.node = sub->node();
      absl::StatusOr<CheckpointReader> reader =
          RestoreNestedMark(o.node, context_->state.get(), records, mark);
      if (!reader.ok()) return reader.status();
      auto stream = o.node->RestoreStream(context_, *reader, std::string(kRootNodePath));
      if (!stream.ok()) return stream.status();
      o.stream = std::move(*stream);
      o.records = records;
      if (compact_) o.marked = MarkStream(*o.stream, &o.returned);
      return o;
    }

    bool SlotReadyLocked(const Slot& s) const {
      return s.error || s.stream == nullptr || !s.buffer.empty() || s.ended;
    }
    bool ReadyLocked() const {
      if (deterministic_) return SlotReadyLocked(slots_[cursor_.load(std::memory_order_relaxed)]);
      for (const Slot& s : slots_) {
        if (s.error || !s.buffer.empty() || s.ended) return true;
      }
      return false;
    }
    bool ExitLocked() const {
      return stopping_ || pausing_ || running_ > target_.load(std::memory_order_relaxed);
    }
    // The slot a worker should fill next: the first, from the consumer's cursor, that has room.
    std::optional<size_t> PickLocked() const {
      size_t n = slots_.size();
      size_t start = cursor_.load(std::memory_order_relaxed);
      for (size_t k = 0; k < n; ++k) {
        size_t i = (start + k) % n;
        const Slot& s = slots_[i];
        if (s.stream != nullptr && !s.busy && !s.ended && s.buffer.size() < slot_capacity_) return i;
      }
      return std::nullopt;
    }
    bool ShouldParkLocked() const { return !ExitLocked() && !PickLocked().has_value(); }

    void NotifyConsumerLocked(bool* set) {
      if (consumer_waiting_ && ReadyLocked()) {
        consumer_waiting_ = false;
        *set = true;
      }
    }

    static Task<void> Worker(ParallelInterleaveStream* s) {
      co_await s->pool_->Schedule();
      const std::stop_token stop = s->scope_.stop_token();  // what the inner pipelines' functions see
      std::vector<absl::StatusOr<U>> local;
      std::vector<StreamMark> local_marks;  // compact: the stream's mark after each element of `local`
      MarkWriter mark_writer;
      absl::StatusOr<U> element;
      for (;;) {
        size_t index = 0;
        size_t room = 0;
        Stream<U>* stream = nullptr;
        bool park = false;
        {
          std::unique_lock<std::mutex> lock(s->mu_);
          if (s->ExitLocked()) {
            --s->running_;
            // The last worker of an op tuned to inline: a consumer asleep on ready_ goes inline now.
            const bool set = s->consumer_waiting_ && s->InlineDueLocked();
            if (set) s->consumer_waiting_ = false;
            lock.unlock();
            if (set) s->ready_.Set();
            co_return;
          }
          std::optional<size_t> pick = s->PickLocked();
          if (pick) {
            index = *pick;
            Slot& slot = s->slots_[index];
            slot.busy = true;
            room = s->slot_capacity_ - slot.buffer.size();
            stream = slot.stream.get();
          } else {
            park = true;
          }
        }
        if (park) {
          detail_parallel::ParkAwaiter<ParallelInterleaveStream> awaiter(s);
          co_await awaiter;
          continue;
        }
        // The slot is ours while busy: the consumer neither polls nor closes a busy stream.
        bool ended = false;
        bool pending = false;
        bool marked = true;
        local.clear();
        {
          UserCallScope call(stop, s->context_->busy_tasks.get());  // synchronous only: no co_await inside
          while (local.size() < room) {
            PollState state = stream->Poll(&element);
            if (state == PollState::kReady) {
              local.push_back(std::move(element));
              if (s->compact_) {
                if (local_marks.size() < local.size()) local_marks.resize(local.size());
                mark_writer.Begin(&local_marks[local.size() - 1]);
                marked = stream->Mark(mark_writer) && marked;
              }
            } else {
              ended = state == PollState::kEnd;
              pending = state == PollState::kPending;
              break;
            }
          }
        }
        bool set = false;
        {
          std::lock_guard<std::mutex> lock(s->mu_);
          Slot& slot = s->slots_[index];
          for (absl::StatusOr<U>& x : local) slot.buffer.push_back(std::move(x));
          if (s->compact_) {
            for (size_t k = 0; k < local.size(); ++k) slot.marks.push_back(std::move(local_marks[k]));
            if (!marked) slot.unmarked = true;
          }
          slot.ended = ended;
          if (!pending) slot.busy = false;
          s->NotifyConsumerLocked(&set);
        }
        if (set) {
          s->ready_.Set();
          co_await s->pool_->Yield();  // let the consumer, queued behind this worker, run now
        }
        if (pending) {
          co_await stream->WaitReady();  // cancelled through the scope's token at shutdown
          std::lock_guard<std::mutex> lock(s->mu_);
          s->slots_[index].busy = false;
        }
      }
    }

    static Task<void> Wait(ParallelInterleaveStream* s) {
      {
        std::lock_guard<std::mutex> lock(s->mu_);
        if (s->ReadyLocked() || s->InlineDueLocked()) co_return;
        s->consumer_waiting_ = true;
        s->ready_.Reset();
      }
      auto start = std::chrono::steady_clock::now();
      absl::Status waited = co_await s->ready_.Wait();
      (void)waited;  // cancelled: Poll reports pending again
      s->AddConsumerWait(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
    }

    // Consumer-only state first; destroyed after the scope (declared last) has joined the workers.
    IteratorState::NodeKey key_;  // the node's, for its seed
    std::unique_ptr<Stream<T>> input_;
    F f_;
    IteratorContextPtr context_;
    ThreadPool* pool_;
    const int64_t block_length_;
    const size_t slot_capacity_;
    const bool deterministic_;
    const int max_parallelism_;
    const int min_parallelism_;  // 0 when tuned: inline at 0
    std::atomic<int> target_;
    bool started_ = false;
    bool waiting_on_input_ = false;
    // Inline (consumer only): the consumer polls the slots itself; spawning_ is off meanwhile.
    bool inline_ = false;
    Stream<U>* inline_waiting_ = nullptr;  // the slot stream the last inline Poll found pending
    uint32_t inline_polls_ = 0;
    detail_parallel::SampledWaits inline_waits_;
    MarkWriter mark_writer_;  // inline compact marks
    bool input_done_ = false;
    int64_t input_index_ = 0;
    int64_t block_index_ = 0;
    absl::StatusOr<T> in_;

    // Compact checkpoints (compact_): the input's mark before its next element and before the one just
    // pulled (the slots keep theirs, see Slot).
    const bool compact_;
    StreamMark next_mark_;
    StreamMark pulled_mark_;
    bool next_mark_ok_ = true;
    bool pulled_mark_ok_ = true;
    detail_interleave::Refill refill_;  // a compact restore's re-read, and the saved slots' errors
    detail_interleave::ErrorSlots refill_errors_;
    // Scratch of CompactSectionNow (Save and Mark run on the consumer's thread, one at a time).
    mutable std::string section_;
    mutable detail_interleave::ErrorSlots errors_now_;
    mutable const std::string* section_now_ = nullptr;
    mutable const StreamMark* input_mark_now_ = nullptr;

    mutable std::mutex mu_;
    std::vector<Slot> slots_;
    size_t empty_;  // slots with neither a stream nor an error (mu_; the consumer also reads it)
    std::atomic<size_t> cursor_{0};
    int running_ = 0;
    bool stopping_ = false;
    bool pausing_ = false;  // a save waits for the workers to exit
    bool consumer_waiting_ = false;
    detail_parallel::ParkList parked_;

    std::mutex spawn_mu_;
    bool spawning_ = false;
    bool spawn_closed_ = false;
    AsyncEvent ready_;
    Tuner* tuner_;
    std::optional<TunerRegistration> registration_;
    AsyncScope scope_;
  };

  NodePtr<T> input_;
  F f_;
  FunctionParam function_;
  int64_t cycle_length_;
  int64_t block_length_;
  int64_t num_parallel_calls_;
  std::optional<bool> deterministic_;
  // What the tuners of this node's iterators learned (the next iterator starts from it).
  std::shared_ptr<TuningMemory> tuning_memory_ = std::make_shared<TuningMemory>();
};

// Dataset::Interleave(f, cycle_length, block_length, num_parallel_calls, deterministic, name).
template <class T, class F>
auto MakeParallelInterleave(NodePtr<T> input, F f, int64_t cycle_length, int64_t block_length,
                            int64_t num_parallel_calls, std::optional<bool> deterministic, FunctionParam function)
    -> NodePtr<typename InterleaveNode<T, F>::U> {
  using U = typename InterleaveNode<T, F>::U;
  if (cycle_length <= 0 || block_length <= 0 || (num_parallel_calls < 0 && num_parallel_calls != kAutotune)) {
    return MakeErrorSource<U>(
        "ParallelInterleave",
        absl::InvalidArgumentError(absl::StrCat("Interleave: cycle_length (", cycle_length, ") and block_length (",
                                                block_length, ") must be > 0 and num_parallel_calls (",
                                                num_parallel_calls, ") >= 0 or kAutotune")));
  }
  if (num_parallel_calls > cycle_length) {
    return MakeErrorSource<U>("ParallelInterleave", absl::InvalidArgumentError(absl::StrCat(
                                                        "Interleave: num_parallel_calls (", num_parallel_calls,
                                                        ") must be <= cycle_length (", cycle_length, ")")));
  }
  if (num_parallel_calls == 0) {
    return std::make_shared<InterleaveNode<T, F>>("Interleave", std::move(input), std::move(f), std::move(function),
                                                  cycle_length, block_length);
  }
  return std::make_shared<ParallelInterleaveNode<T, F>>(std::move(input), std::move(f), std::move(function),
                                                        cycle_length, block_length, num_parallel_calls,
                                                        deterministic);
}

}  // namespace sluice::ops

#endif  // SLUICE_OPS_PARALLEL_INTERLEAVE_H_
