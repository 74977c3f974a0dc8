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
// - Destruction: stops the workers, waits for them (and for sub-streams they are waiting on), then
//   destroys the sub-streams and the input. Cardinality: unknown.
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
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/engine/async_event.h"
#include "sluice/engine/async_scope.h"
#include "sluice/ops/autotune.h"
#include "sluice/ops/detail/async_stream_owner.h"
#include "sluice/ops/cardinality.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/interleave.h"
#include "sluice/ops/parallel_map.h"
#include "sluice/ops/user_function.h"
#include "sluice/ops/user_function_stop.h"
#include "sluice/engine/thread_pool.h"

namespace sluice::ops {

template <class T, class F>
class ParallelInterleaveNode final
    : public Node<typename UnwrapStatusOrT<std::invoke_result_t<F&, T>>::element_type> {
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
  std::unique_ptr<Stream<U>> MakeStream(IteratorContextPtr context) const override {
    bool deterministic = deterministic_.value_or(context->options.deterministic);
    int cycle = static_cast<int>(cycle_length_);
    int initial = 0;
    int max_parallelism = 0;
    Tuner* tuner = nullptr;
    if (num_parallel_calls_ == kAutotune) {
      max_parallelism = std::min(cycle, std::max(1, CpuBudget(*context)));
      tuner = TunerFor(*context);
      initial = tuner != nullptr ? 1 : max_parallelism;
    } else {
      initial = max_parallelism = static_cast<int>(std::min<int64_t>(num_parallel_calls_, cycle_length_));
    }
    return detail_teardown::MakeAsyncStream<ParallelInterleaveStream>(context->teardowns, input_->MakeStream(context), f_,
                                                             context, cycle_length_, block_length_, initial,
                                                             max_parallelism, deterministic, tuner);
  }

 private:
  class ParallelInterleaveStream final : public Stream<U>, public Tunable {
   public:
    ParallelInterleaveStream(std::unique_ptr<Stream<T>> input, F f, IteratorContextPtr context, int64_t cycle_length,
            int64_t block_length, int parallelism, int max_parallelism, bool deterministic, Tuner* tuner)
        : input_(std::move(input)),
          f_(std::move(f)),
          context_(std::move(context)),
          pool_(context_->pool),
          block_length_(block_length),
          slot_capacity_(static_cast<size_t>(std::max<int64_t>(block_length, 8))),
          deterministic_(deterministic),
          max_parallelism_(std::max(1, max_parallelism)),
          target_(std::clamp(parallelism, 1, max_parallelism_)),
          slots_(static_cast<size_t>(cycle_length)),
          empty_(static_cast<size_t>(cycle_length)),
          ready_(/*initially_set=*/false, context_->pool),
          tuner_(tuner) {}

    // Joined here only when nothing runs any more: made under an AsyncStreamOwner, which joins (or, on
    // a pool worker, hands off) first.
    ~ParallelInterleaveStream() override {
      BeginShutdown();
      scope_.JoinBlocking();
    }
    AsyncScope& scope() { return scope_; }

    PollState Poll(absl::StatusOr<U>* out) override {
      if (!started_) Start();
      waiting_on_input_ = false;
      size_t misses = 0;  // sloppy: slots passed over without data in this call
      for (;;) {
        if (empty_ > 0 && !input_done_) Fill();
        size_t i = cursor_.load(std::memory_order_relaxed);
        Slot& slot = slots_[i];
        std::unique_ptr<Stream<U>> closed;
        std::coroutine_handle<> wake;
        bool kept_in_turn = false;
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (slot.error) {
            *out = std::move(*slot.error);
            slot.error.reset();
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
            if (++block_index_ == block_length_) AdvanceLocked();
            kept_in_turn = true;
          } else if (slot.ended) {
            closed = std::move(slot.stream);
            slot.ended = false;
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
      }
    }

    Task<void> WaitReady() override {
      if (waiting_on_input_) return input_->WaitReady();
      return Wait(this);
    }

    int parallelism() const override { return target_.load(std::memory_order_relaxed); }
    int max_parallelism() const override { return max_parallelism_; }
    void SetParallelism(int n) override {
      n = std::clamp(n, 1, max_parallelism_);
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

    struct Slot {
      std::unique_ptr<Stream<U>> stream;   // the open sub-dataset (null: empty, or an error waiting)
      std::optional<absl::Status> error;   // an input error or f failure, yielded in this slot's turn
      std::deque<absl::StatusOr<U>> buffer;
      bool busy = false;   // a worker owns `stream` (polling it or awaiting its WaitReady)
      bool ended = false;  // `stream` is over; the slot closes once `buffer` is drained
    };

    void Start() {
      started_ = true;
      {
        std::lock_guard<std::mutex> spawn_lock(spawn_mu_);
        spawning_ = true;
      }
      SetParallelism(target_.load(std::memory_order_relaxed));
      if (tuner_ != nullptr) registration_.emplace(tuner_, this);
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
        Slot& slot = slots_[(start + k) % n];
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (slot.stream != nullptr || slot.error) continue;
        }
        PollState state = input_->Poll(&in_);
        if (state == PollState::kPending) return;
        if (state == PollState::kEnd) {
          input_done_ = true;
          return;
        }
        int64_t index = input_index_++;
        std::unique_ptr<Stream<U>> stream;
        std::optional<absl::Status> error;
        if (!in_.ok()) {
          error = std::move(in_).status();
        } else {
          absl::StatusOr<SubDataset> sub = InvokeUserFunction("ParallelInterleave", index, f_, std::move(*in_));
          if (sub.ok()) {
            stream = sub->node()->MakeStream(context_);
          } else {
            error = std::move(sub).status();
          }
        }
        std::coroutine_handle<> wake;
        {
          std::lock_guard<std::mutex> lock(mu_);
          --empty_;
          if (error) {
            slot.error = std::move(error);
          } else {
            slot.stream = std::move(stream);
            slot.buffer.clear();
            slot.ended = false;
            wake = parked_.TakeOne();
          }
        }
        if (wake) pool_->Execute(wake);
      }
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
    bool ExitLocked() const { return stopping_ || running_ > target_.load(std::memory_order_relaxed); }
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
      absl::StatusOr<U> element;
      for (;;) {
        size_t index = 0;
        size_t room = 0;
        Stream<U>* stream = nullptr;
        bool park = false;
        {
          std::lock_guard<std::mutex> lock(s->mu_);
          if (s->ExitLocked()) {
            --s->running_;
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
        local.clear();
        {
          UserCallScope call(stop, s->context_->busy_tasks.get());  // synchronous only: no co_await inside
          while (local.size() < room) {
            PollState state = stream->Poll(&element);
            if (state == PollState::kReady) {
              local.push_back(std::move(element));
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
        if (s->ReadyLocked()) co_return;
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
    std::unique_ptr<Stream<T>> input_;
    F f_;
    IteratorContextPtr context_;
    ThreadPool* pool_;
    const int64_t block_length_;
    const size_t slot_capacity_;
    const bool deterministic_;
    const int max_parallelism_;
    std::atomic<int> target_;
    bool started_ = false;
    bool waiting_on_input_ = false;
    bool input_done_ = false;
    int64_t input_index_ = 0;
    int64_t block_index_ = 0;
    absl::StatusOr<T> in_;

    mutable std::mutex mu_;
    std::vector<Slot> slots_;
    size_t empty_;  // slots with neither a stream nor an error (mu_; the consumer also reads it)
    std::atomic<size_t> cursor_{0};
    int running_ = 0;
    bool stopping_ = false;
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
