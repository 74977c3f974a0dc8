// Parallel Map, as tf.data.Dataset.map(f, num_parallel_calls, deterministic), and the reusable machinery
// that runs any per-element function on the pool with the same ordering guarantees.
//
// Contract (ParallelMapNode / Dataset::Map(f, num_parallel_calls, deterministic)):
// - Elements: f(x) for each input element x. f runs on the iterator's pool, at most num_parallel_calls
//   calls at once (kAutotune: also on the consumer's thread, see caller runs); f must be safe to call
//   concurrently (it is one object shared by the workers).
// - Order: deterministic=true returns the results in input order; false returns them in completion
//   order (whatever finished first), which keeps a slow element from holding back the others.
//   deterministic unset = Options::deterministic.
// - Errors: an error element of the input passes through in its position (f is not called); f failing
//   (an error Status or an exception) fails that element only, as "ParallelMap (element i): ...", and
//   the stream goes on. num_parallel_calls < -1 is InvalidArgument; 0 and 1 are the sequential Map;
//   kAutotune (-1) lets the iterator's tuner choose (see sluice/ops/autotune.h).
// - Buffering: at most `capacity` elements (4 x the maximum parallelism) are taken from the input and not
//   yet returned, so memory stays bounded however slow the consumer.
// - Cancellation / destruction: destroying the stream stops taking input, waits for the calls in flight
//   (f cannot be interrupted) and for every worker, then frees the buffers. A consumer's WaitReady()
//   observes its stop token.
// - Caller runs (kAutotune only; a number the user chose stays the bound on concurrent calls): a consumer
//   whose next result is not ready runs an unstarted input element itself (on its own thread, as a
//   worker would) while the buffer has room and the input is ready, so a tuned parallelism n uses n
//   workers plus the consumer; order and exactly-once hold as above.
// - Inline (kAutotune only): at parallelism 0 the op runs as the sequential Map does, on the consumer's
//   thread with no lock, buffer or hand-off per element, for pipelines whose elements cost less than a
//   hand-off between threads. A new op starts inline (or where the tuner left an earlier iterator of the
//   same dataset, with what it learned there); the tuner raises it when workers pay and lowers it again
//   when they stop paying (docs/autotune.md). Switching either way happens on the consumer's thread
//   between elements: leaving starts the workers; entering waits until the workers have exited and every
//   result taken from the input was returned.
// - Threading: one consumer; workers resume the consumer through the pool, never inline.
// - Cardinality: the input's.
//
//   Dataset<int64_t> squares = Range(1000).Map([](int64_t x) { return x * x; }, /*num_parallel_calls=*/4);
//
// - Checkpoints (docs/checkpoint.md): the saved position is the element the consumer last received.
//   Save pauses the workers (a flag read under the lock they already take per element, so nothing is
//   added to the per-element path), awaits their scope without blocking a thread (the calls in flight
//   finish), saves the results not yet returned (they need an ElementCodec) and the input after the last
//   element taken. The results come out first, then new workers start at the next Poll. Deterministic
//   streams restore element for element, nondeterministic ones as the same multiset.
//
// Reuse: detail_parallel::ParallelMapStream<T, U, Fn> takes a Stream<T> and any Fn with
// `absl::StatusOr<U> fn(T value, int64_t index) const` and gives a Stream<U> with the guarantees above;
// a parallel Batch is a synchronous "group into std::vector<T>" stream under a ParallelMapStream whose
// Fn stacks one group.
#ifndef SLUICE_OPS_PARALLEL_MAP_H_
#define SLUICE_OPS_PARALLEL_MAP_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/engine/async_event.h"
#include "sluice/engine/async_scope.h"
#include "sluice/engine/task.h"
#include "sluice/engine/thread_pool.h"
#include "sluice/ops/autotune.h"
#include "sluice/ops/detail/async_stream_owner.h"
#include "sluice/ops/detail/value_ring.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/map.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/prefetch.h"
#include "sluice/ops/user_function.h"
#include "sluice/ops/user_function_stop.h"

namespace sluice::ops {
namespace detail_parallel {

// Coroutines parked until a condition guarded by their owner's mutex may have changed. Woken handles
// resume through the pool, outside the lock: a worker never runs inside its waker's stack.
class ParkList {
 public:
  // Under the owner's lock.
  void Add(std::coroutine_handle<> h) { parked_.push_back(h); }
  bool empty() const { return parked_.empty(); }
  void TakeAll(std::vector<std::coroutine_handle<>>* out) {
    out->insert(out->end(), parked_.begin(), parked_.end());
    parked_.clear();
  }
  std::coroutine_handle<> TakeOne() {
    if (parked_.empty()) return nullptr;
    std::coroutine_handle<> h = parked_.back();
    parked_.pop_back();
    return h;
  }

 private:
  std::vector<std::coroutine_handle<>> parked_;
};

// Parks the awaiting coroutine on owner->parked_ unless owner->ShouldParkLocked() turned false; both
// checked under owner->mu_, so a waker that changes the condition under that lock cannot be missed.
template <class Owner>
class ParkAwaiter {
 public:
  explicit ParkAwaiter(Owner* owner) : owner_(owner) {}
  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> h) {
    std::lock_guard<std::mutex> lock(owner_->mu_);
    if (!owner_->ShouldParkLocked()) return false;
    owner_->parked_.Add(h);
    return true;
  }
  void await_resume() const noexcept {}

 private:
  Owner* owner_;
};

// An inline op's consumer waits on the op's input without a frame of the op's own: the time from a
// pending Poll to the next Poll is counted as the consumer's wait, for one wait in kEvery (clock reads
// stay off a path that may see a wait per element).
class SampledWaits {
 public:
  void Pending() {
    if ((++waits_ & (kEvery - 1)) == 0) {
      since_ = std::chrono::steady_clock::now();
      timing_ = true;
    }
  }
  void Resumed(Tunable* tunable) {
    if (!timing_) [[likely]] {
      return;
    }
    timing_ = false;
    tunable->AddConsumerWait(kEvery * std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now() - since_)
                                          .count());
  }

 private:
  static constexpr uint32_t kEvery = 64;  // a power of two
  uint32_t waits_ = 0;
  bool timing_ = false;
  std::chrono::steady_clock::time_point since_;
};

inline void ResumeAllOn(ThreadPool* pool, std::vector<std::coroutine_handle<>>* handles) {
  for (std::coroutine_handle<> h : *handles) pool->Execute(h);
  handles->clear();
}

// See the file comment. `parallelism` workers start on the first Poll; SetParallelism (the tuner's
// knob, thread-safe) changes their number between 1 and `max_parallelism` while the stream runs.
template <class T, class U, class Fn>
class ParallelMapStream final : public Stream<U>, public RememberingTunable {
 public:
  // `tuner` (may be null) samples this stream and calls SetParallelism while it runs. `caller_runs`: the
  // consumer runs elements itself while it would otherwise wait (see the file comment).
  // `compact` (deterministic only): keeps the input's mark with every `mark_every`-th result, so that a
  // save writes the newest mark at or before the last result returned, and how many results lie between,
  // instead of pausing and saving the results (compact checkpoints). `mark_every` > 1 needs an input that
  // replays in order (ReplaysInOrder) and one that does not share the node.
  // `memory` (caller runs only; may be null): what the tuner learned about this op, shared with the other
  // iterators of the same node; `remembered`: what it held when the node made this stream.
  ParallelMapStream(std::unique_ptr<Stream<T>> input, Fn fn, ThreadPool* pool, int parallelism,
                    int max_parallelism, bool deterministic, Tuner* tuner = nullptr, bool caller_runs = false,
                    std::atomic<int64_t>* busy_tasks = nullptr, bool compact = false, int64_t mark_every = 1,
                    std::shared_ptr<TuningMemory> memory = nullptr, TuningHistory remembered = {})
      : RememberingTunable(caller_runs ? std::move(memory) : nullptr,
                           caller_runs ? remembered : TuningHistory{}),
        input_(std::move(input)),
        fn_(std::move(fn)),
        pool_(pool),
        deterministic_(deterministic),
        max_parallelism_(std::max(1, max_parallelism)),
        capacity_(4 * static_cast<size_t>(max_parallelism_)),
        wake_run_(std::max<size_t>(1, capacity_ / 2)),
        min_parallelism_(caller_runs ? 0 : 1),
        target_(std::clamp(parallelism, min_parallelism_, max_parallelism_)),
        ring_(deterministic ? capacity_ : 0),
        ready_(/*initially_set=*/false, pool),
        tuner_(tuner),
        caller_runs_(caller_runs),
        busy_tasks_(busy_tasks),
        compact_(compact && deterministic),
        mark_every_(kInputSharesNode ? 1 : std::max<int64_t>(1, mark_every)) {
    if (compact_) {
      marks_.resize(capacity_);
      MarkReturnedStart();
    }
  }

  // Joined here only when nothing runs any more: streams are made under an AsyncStreamOwner, which
  // joins (or, on a pool worker, hands off) first.
  ~ParallelMapStream() override {
    BeginShutdown();
    scope_.JoinBlocking();
  }

  // Stops new work: workers exit at their next check, parked ones are woken to see it.
  void BeginShutdown() {
    registration_.reset();  // first: after this the tuner no longer calls SetParallelism
    std::vector<std::coroutine_handle<>> wake;
    {
      std::lock_guard<std::mutex> spawn_lock(spawn_mu_);
      spawn_closed_ = true;
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      parked_.TakeAll(&wake);
    }
    scope_.RequestStop();
    ResumeAllOn(pool_, &wake);
  }
  AsyncScope& scope() { return scope_; }

  PollState Poll(absl::StatusOr<U>* out) override {
    inline_waits_.Resumed(this);
    PollState state = PollOnce(out);
    if (state == PollState::kReady) CountOutput();
    return state;
  }

  Task<void> WaitReady() override {
    if (inline_pending_) {
      // The input's own wait, with no frame of ours around it (inline pulls may find it pending once per
      // element); its time is sampled from the pending Poll to the next one.
      inline_pending_ = false;
      inline_waits_.Pending();
      return input_->WaitReady();
    }
    return Wait(this);
  }

 private:
  PollState PollOnce(absl::StatusOr<U>* out) {
    if (!started_) Start();
    if (carry_next_ < carry_.size()) [[unlikely]] {  // results saved by a save or a restore: they come first
      *out = std::move(carry_[carry_next_++]);
      if (carry_next_ == carry_.size()) {
        carry_.clear();
        carry_next_ = 0;
      }
      return PollState::kReady;
    }
    if (inline_ || (caller_runs_ && target_.load(std::memory_order_relaxed) == 0 && EnterInline())) {
      if (target_.load(std::memory_order_relaxed) == 0) [[likely]] {
        return PollInline(out);
      }
      LeaveInline();
    }
    std::coroutine_handle<> wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (deterministic_) {
        std::optional<absl::StatusOr<U>>& slot = ring_[consumed_ % capacity_];
        if (!slot.has_value()) return EndOrPendingLocked();
        *out = std::move(*slot);
        slot.reset();
        if (compact_) {
          returned_next_ = static_cast<int64_t>(consumed_) + 1;
          returned_ended_ = false;
          if (MarksAfter(static_cast<int64_t>(consumed_))) {
            // Under mu_, before the slot's reservation is given back: a puller reuses this mark only after.
            std::swap(returned_mark_, marks_[consumed_ % capacity_]);
            returned_mark_next_ = returned_next_;
          }
        }
      } else {
        if (completed_.empty()) return EndOrPendingLocked();
        *out = std::move(completed_.front());
        completed_.pop_front();
      }
      ++consumed_;
      --outstanding_;
      wake = parked_.TakeOne();
    }
    if (wake) pool_->Execute(wake);
    return PollState::kReady;
  }

  // Inline: the sequential Map's step. No worker exists or starts meanwhile (spawning_ is off), so the
  // consumer owns the input and the index; consumed_ catches up when the op leaves inline. The time spent
  // here is the consumer's wait on this op (sampled, one call in kInlineSampleEvery, to keep clock reads
  // off the per-element path).
  PollState PollInline(absl::StatusOr<U>* out) {
    if (input_ended_) return PollState::kEnd;
    const bool timed = (++inline_polls_ & (kInlineSampleEvery - 1)) == 0;
    const auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    PollState state = PollInput(&inline_element_);
    if (state == PollState::kPending) {
      inline_pending_ = true;
    } else if (state == PollState::kEnd) {
      input_ended_ = true;
      std::lock_guard<std::mutex> lock(mu_);
      input_done_ = true;
    } else {
      const int64_t index = next_index_++;
      if (compact_) {
        returned_next_ = index + 1;
        returned_ended_ = false;
        if (MarksAfter(index)) {
          mark_writer_.Begin(&returned_mark_);
          input_->Mark(mark_writer_);
          returned_mark_next_ = returned_next_;
        }
      }
      if (inline_element_.ok()) {
        *out = fn_(std::move(*inline_element_), index);
      } else {
        *out = absl::StatusOr<U>(std::move(inline_element_).status());
      }
    }
    if (timed) {
      AddConsumerWait(kInlineSampleEvery * std::chrono::duration_cast<std::chrono::nanoseconds>(
                                               std::chrono::steady_clock::now() - start)
                                               .count());
    }
    return state;
  }

  // Enters inline once the workers have exited and every result taken was returned (consumer only).
  bool EnterInline() {
    std::lock_guard<std::mutex> spawn_lock(spawn_mu_);
    std::lock_guard<std::mutex> lock(mu_);
    if (running_ != 0 || outstanding_ != 0 || pausing_ || input_awaiting_.load(std::memory_order_seq_cst)) {
      return false;
    }
    spawning_ = false;  // the tuner's SetParallelism now only sets the target; the consumer starts workers
    inline_ = true;
    return true;
  }
  void LeaveInline() {
    inline_ = false;
    {
      std::lock_guard<std::mutex> spawn_lock(spawn_mu_);
      spawning_ = !spawn_closed_;
      std::lock_guard<std::mutex> lock(mu_);
      consumed_ = static_cast<size_t>(next_index_);
    }
    SetParallelism(target_.load(std::memory_order_relaxed));
  }

 public:
  // State: the next input element's index, the results taken from the input and not yet returned (in
  // the order they come out), whether the input ended; then the input at /0 unless it ended. A Fn with
  // kInputSharesNode (Batch's stacking) has an input that is part of the same op: it appends its state
  // to this op's section (CheckpointWriter::AppendState) and saves its own input.
  //
  // Unless the input shares the node, the section ends with `skip`: the input stands that many elements
  // before the next index (a restore drops them first).
  //
  // Compact: the same layout without pausing anything: the index after the last result returned, the
  // carried results not yet returned (only a full state restored into a compact iterator has any), and
  // the input's newest mark at or before that index (kMarkInterval), `skip` elements before it.
  Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
    if constexpr (!HasElementCodec<U>) {
      return Stream<U>::SaveResult(writer->Unsupported(path, "its elements have no ElementCodec"));
    } else {
      if (compact_) {
        if (kInputSharesNode) {
          writer->WriteState(path, returned_next_, CarryLeft(), returned_ended_);
          returned_mark_.WriteTo(writer.get(), path, /*shares_base=*/true);
        } else {
          writer->WriteState(path, returned_next_, CarryLeft(), returned_ended_, ReturnedSkip());
          if (!returned_ended_) returned_mark_.WriteTo(writer.get(), ChildNodePath(path, 0));
        }
        return Stream<U>::SaveResult(absl::OkStatus());
      }
      return SavePaused(this, std::move(writer), std::move(path));
    }
  }
  bool Mark(MarkWriter& mark) const override {
    if constexpr (!HasElementCodec<U>) {
      return false;
    } else {
      if (!compact_) return false;
      if (kInputSharesNode) {
        mark.WriteWithShared(returned_mark_, returned_next_, CarryLeft(), returned_ended_);
      } else {
        mark.Write(returned_next_, CarryLeft(), returned_ended_, ReturnedSkip());
        if (!returned_ended_) mark.AppendInputMark(0, returned_mark_);
      }
      return true;
    }
  }

  // Before the first Poll of a restored stream: what Save wrote (`input_ended`: the input is null; `skip`:
  // the input stands that many elements before `next_index`).
  void RestoreBuffered(int64_t next_index, std::vector<absl::StatusOr<U>> results, bool input_ended,
                       int64_t skip = 0) {
    next_index_ = next_index;
    skip_left_ = skip;
    consumed_ = static_cast<size_t>(next_index);
    carry_ = std::move(results);
    input_ended_ = input_ended;
    input_done_ = input_ended;
    if (compact_) MarkReturnedStart();
  }

  // Tunable: the number of workers (calls in flight).
  int parallelism() const override { return target_.load(std::memory_order_relaxed); }
  int max_parallelism() const override { return max_parallelism_; }
  int min_parallelism() const override { return min_parallelism_; }
  bool counts_output() const override { return caller_runs_; }
  void SetParallelism(int n) override {
    n = std::clamp(n, min_parallelism_, max_parallelism_);
    target_.store(n, std::memory_order_relaxed);
    std::lock_guard<std::mutex> spawn_lock(spawn_mu_);
    if (spawn_closed_ || !spawning_) return;
    int to_spawn = 0;
    std::vector<std::coroutine_handle<>> wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_ || input_done_) return;
      to_spawn = std::max(0, n - running_);
      running_ += to_spawn;
      parked_.TakeAll(&wake);  // a lower target may have parked some that should now run, or exit
    }
    // Spawning under spawn_mu_ keeps the destructor's join from passing a worker about to start; a
    // worker touches nothing of ours before it has hopped onto the pool.
    for (int i = 0; i < to_spawn; ++i) scope_.Spawn(Worker(this));
    ResumeAllOn(pool_, &wake);
  }
  BufferStats buffer_stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return BufferStats{static_cast<int64_t>(deterministic_ ? ReadyCountLocked() : completed_.size()),
                       static_cast<int64_t>(capacity_)};
  }

 private:
  template <class Owner>
  friend class ParkAwaiter;

  enum class Step : uint8_t { kGo, kPark, kExit };
  static constexpr bool kInputSharesNode = requires { Fn::kInputSharesNode; };
  static constexpr uint32_t kInlineSampleEvery = 64;  // a power of two

  // Compact: where the input stands before any result is returned (made or restored), or with a null
  // input (a non-shared input that ended).
  void MarkReturnedStart() {
    returned_next_ = next_index_;
    returned_mark_next_ = next_index_ - skip_left_;
    returned_ended_ = input_ended_ && !kInputSharesNode;
    returned_mark_.Clear();
    if (input_ && !returned_ended_) {
      mark_writer_.Begin(&returned_mark_);
      input_->Mark(mark_writer_);  // the node accepted compact mode, so every stream below marks
    }
  }
  // Compact: whether the puller of input element `index` keeps the input's mark after it.
  bool MarksAfter(int64_t index) const { return (index + 1) % mark_every_ == 0; }
  int64_t ReturnedSkip() const { return returned_next_ - returned_mark_next_; }
  // The input's next element, after dropping those a restore stands before. The caller holds the input
  // (input_mu_, or input_awaiting_ for the consumer's pull).
  PollState PollInput(absl::StatusOr<T>* element) {
    for (;;) {
      PollState state = input_->Poll(element);
      if (state != PollState::kReady || skip_left_ == 0) return state;
      --skip_left_;
    }
  }
  // Carried results the consumer has not taken (a copy; empty in steady state).
  std::vector<absl::StatusOr<U>> CarryLeft() const {
    return std::vector<absl::StatusOr<U>>(carry_.begin() + static_cast<std::ptrdiff_t>(carry_next_),
                                          carry_.end());
  }

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

  // A save's pause: no new spawns, and every worker exits at its next Reserve (a parked one is woken to
  // see it). A call in flight finishes and stores its result; a worker awaiting the input's WaitReady
  // waits until the input is ready (cancelling it could end a file reader), then exits.
  void BeginPause() {
    std::vector<std::coroutine_handle<>> wake;
    {
      std::lock_guard<std::mutex> spawn_lock(spawn_mu_);
      spawning_ = false;
      std::lock_guard<std::mutex> lock(mu_);
      pausing_ = true;
      parked_.TakeAll(&wake);
    }
    ResumeAllOn(pool_, &wake);
  }

  // After the pause's join: every result not yet returned moves behind the carried ones, in the order
  // the consumer would have seen it; the next Poll starts new workers.
  void EndPause() {
    std::lock_guard<std::mutex> lock(mu_);
    if (deterministic_) {
      for (size_t i = consumed_; i < consumed_ + outstanding_; ++i) {
        std::optional<absl::StatusOr<U>>& slot = ring_[i % capacity_];
        carry_.push_back(std::move(*slot));
        slot.reset();
      }
    } else {
      for (size_t k = 0; k < completed_.size(); ++k) carry_.push_back(std::move(completed_[k]));
      completed_.clear();
    }
    consumed_ += outstanding_;
    outstanding_ = 0;
    pausing_ = false;
    started_ = false;
  }

  static Task<absl::Status> SavePaused(ParallelMapStream* s, std::shared_ptr<CheckpointWriter> writer,
                                       std::string path) {
    if (s->started_) {
      s->BeginPause();
      co_await s->scope_.Join();  // resumed by the last worker to exit, on its thread: nothing blocks
      s->EndPause();
    }
    if (s->carry_next_ > 0) {  // drop what the consumer already took
      s->carry_.erase(s->carry_.begin(), s->carry_.begin() + static_cast<std::ptrdiff_t>(s->carry_next_));
      s->carry_next_ = 0;
    }
    if constexpr (kInputSharesNode) {
      writer->WriteState(path, s->next_index_, s->carry_, s->input_ended_);
    } else {
      writer->WriteState(path, s->next_index_, s->carry_, s->input_ended_, s->skip_left_);
    }
    if (s->input_ended_ && !kInputSharesNode) co_return absl::OkStatus();
    // A named string, not a conditional temporary inside the co_await: GCC 12 frees such a temporary twice.
    std::string input_path = kInputSharesNode ? path : ChildNodePath(path, 0);
    co_return co_await s->input_->Save(std::move(writer), std::move(input_path));
  }

  size_t ReadyCountLocked() const {
    size_t n = 0;
    for (size_t i = consumed_; i < consumed_ + capacity_ && ring_[i % capacity_].has_value(); ++i) ++n;
    return n;
  }

  bool ExitLocked() const {
    return stopping_ || pausing_ || input_done_ || running_ > target_.load(std::memory_order_relaxed);
  }
  // Tuned to 0, the workers gone and every result returned: the consumer's next Poll goes inline.
  bool InlineDueLocked() const {
    return caller_runs_ && running_ == 0 && outstanding_ == 0 && target_.load(std::memory_order_relaxed) == 0;
  }
  bool ShouldParkLocked() const {
    return !ExitLocked() && (outstanding_ >= capacity_ || input_awaiting_.load(std::memory_order_seq_cst));
  }
  // Whether a waiting consumer should be woken: the end, or a run of results ready at the head. Waking
  // for every single result costs a pool hop and a thread wake-up per element, so the consumer sleeps
  // until half the buffer is ready, or until nothing more is in flight (then what is there is all that
  // is coming soon).
  bool ReadyLocked() const {
    // Half the buffer the current workers can fill (twice their number), so a tuned-down op is not
    // made to wait for a run its few workers take long to produce.
    size_t wake_run =
        std::min(wake_run_, 2 * static_cast<size_t>(std::max(1, target_.load(std::memory_order_relaxed))));
    size_t run = 0;
    if (deterministic_) {
      while (run < wake_run && ring_[(consumed_ + run) % capacity_].has_value()) ++run;
    } else {
      run = completed_.size();
    }
    if (run > 0) return run >= wake_run || in_flight_ == 0;
    return input_done_ && outstanding_ == 0;
  }
  PollState EndOrPendingLocked() const {
    return input_done_ && outstanding_ == 0 ? PollState::kEnd : PollState::kPending;
  }

  // Takes a place in the buffer before pulling from the input, so the buffer bound is exact.
  Step Reserve() {
    std::unique_lock<std::mutex> lock(mu_);
    if (ExitLocked()) {
      --running_;
      // The last worker of an op tuned to inline: a consumer asleep on ready_ goes inline now.
      const bool set = consumer_waiting_ && InlineDueLocked();
      if (set) consumer_waiting_ = false;
      lock.unlock();
      if (set) ready_.Set();
      return Step::kExit;
    }
    if (outstanding_ >= capacity_ || input_awaiting_.load(std::memory_order_seq_cst)) return Step::kPark;
    ++outstanding_;
    ++in_flight_;
    return Step::kGo;
  }

  void Unreserve() {
    bool set = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      --outstanding_;
      --in_flight_;
      set = consumer_waiting_ && ReadyLocked();
      if (set) consumer_waiting_ = false;
    }
    if (set) ready_.Set();
  }

  // The input ended: every worker exits, and the consumer sees the end once the rest is returned.
  // `worker`: called by a worker, which then exits (the consumer may find the end too).
  void FinishInput(bool worker) {
    std::vector<std::coroutine_handle<>> wake;
    bool set = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      input_done_ = true;
      --outstanding_;
      --in_flight_;
      if (worker) --running_;
      parked_.TakeAll(&wake);
      set = consumer_waiting_ && ReadyLocked();
      if (set) consumer_waiting_ = false;
    }
    if (set) ready_.Set();
    ResumeAllOn(pool_, &wake);
  }

  void InputAwaited() {
    {
      std::lock_guard<std::mutex> in_lock(input_mu_);
      input_awaiting_.store(false, std::memory_order_seq_cst);
    }
    std::vector<std::coroutine_handle<>> wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      parked_.TakeAll(&wake);
    }
    ResumeAllOn(pool_, &wake);
  }

  // True when it woke the consumer.
  bool Store(int64_t index, absl::StatusOr<U> result) {
    bool set = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (deterministic_) {
        ring_[static_cast<size_t>(index) % capacity_].emplace(std::move(result));
      } else {
        completed_.push_back(std::move(result));
      }
      --in_flight_;
      set = consumer_waiting_ && ReadyLocked();
      if (set) consumer_waiting_ = false;
    }
    if (set) ready_.Set();
    return set;
  }

  enum class Pulled : uint8_t { kBusy, kPending, kEnd, kReady };

  // Holding a reservation: pulls one input element. Only one puller polls the input at a time, and none
  // while another awaits the input's WaitReady (a stream has one consumer). On kPending the worker awaits
  // the input (marked under the same lock, so no second puller polls meanwhile).
  Pulled Pull(absl::StatusOr<T>* element, int64_t* index) {
    std::lock_guard<std::mutex> in_lock(input_mu_);
    if (input_awaiting_.load(std::memory_order_seq_cst)) return Pulled::kBusy;
    if (input_ended_) return Pulled::kEnd;
    PollState state = PollInput(element);
    if (state == PollState::kPending) {
      input_awaiting_.store(true, std::memory_order_seq_cst);
      return Pulled::kPending;
    }
    if (state == PollState::kEnd) {
      input_ended_ = true;
      return Pulled::kEnd;
    }
    *index = next_index_++;
    if (compact_ && MarksAfter(*index)) {
      mark_writer_.Begin(&marks_[static_cast<size_t>(*index) % capacity_]);
      input_->Mark(mark_writer_);
    }
    return Pulled::kReady;
  }

  // The consumer's pull (caller runs). It polls the input outside input_mu_, holding the input as a worker
  // awaiting it does: that Poll may block its thread (a Repeat destroying a finished async input off the
  // pool joins it there, and the joined workers need the pool), so workers must park meanwhile rather than
  // block pool threads on input_mu_.
  //
  // A worker that holds input_mu_ is polling the input itself: the consumer does not wait for it (a
  // futex sleep per element when the input's Poll does real work, such as a ParseExample below), and
  // sleeps until results come instead.
  Pulled ConsumerPull(absl::StatusOr<T>* element, int64_t* index) {
    {
      std::unique_lock<std::mutex> in_lock(input_mu_, std::try_to_lock);
      if (!in_lock.owns_lock() || input_awaiting_.load(std::memory_order_seq_cst)) return Pulled::kBusy;
      if (input_ended_) return Pulled::kEnd;
      input_awaiting_.store(true, std::memory_order_seq_cst);
    }
    PollState state = PollInput(element);
    Pulled pulled = Pulled::kReady;
    {
      std::lock_guard<std::mutex> in_lock(input_mu_);
      if (state == PollState::kPending) {
        pulled = Pulled::kPending;
      } else if (state == PollState::kEnd) {
        input_ended_ = true;
        pulled = Pulled::kEnd;
      } else {
        *index = next_index_++;
        if (compact_ && MarksAfter(*index)) {
          mark_writer_.Begin(&marks_[static_cast<size_t>(*index) % capacity_]);
          input_->Mark(mark_writer_);
        }
      }
    }
    InputAwaited();  // gives the input back and wakes the workers that parked on it
    return pulled;
  }

  // True when it woke the consumer.
  bool Compute(absl::StatusOr<T> element, int64_t index) {
    if (!element.ok()) return Store(index, absl::StatusOr<U>(std::move(element).status()));
    absl::StatusOr<U> result = fn_(std::move(*element), index);
    return Store(index, std::move(result));
  }

  static Task<void> Worker(ParallelMapStream* s) {
    co_await s->pool_->Schedule();
    const std::stop_token stop = s->scope_.stop_token();  // what the user's function sees
    absl::StatusOr<T> element;
    for (;;) {
      Step step = s->Reserve();
      if (step == Step::kExit) co_return;
      if (step == Step::kPark) {
        ParkAwaiter<ParallelMapStream> park(s);
        co_await park;
        continue;
      }
      int64_t index = 0;
      Pulled pulled = Pulled::kBusy;
      {
        UserCallScope call(stop, s->busy_tasks_);
        pulled = s->Pull(&element, &index);
      }
      if (pulled == Pulled::kBusy) {
        s->Unreserve();
        ParkAwaiter<ParallelMapStream> park(s);
        co_await park;
        continue;
      }
      if (pulled == Pulled::kPending) {
        // Not in flight while waiting: a consumer waiting for a run of results is woken meanwhile.
        s->Unreserve();
        co_await s->input_->WaitReady();  // cancelled through the scope's token at shutdown
        s->InputAwaited();
        continue;
      }
      if (pulled == Pulled::kEnd) {
        s->FinishInput(/*worker=*/true);
        co_return;
      }
      bool woke = false;
      {
        UserCallScope call(stop, s->busy_tasks_);
        woke = s->Compute(std::move(element), index);
      }
      // The consumer was queued on this worker's pool queue; a worker loops without returning to the
      // pool, so let it run now rather than when the buffer fills and the workers park.
      if (woke) co_await s->pool_->Yield();
    }
  }

  enum class Turn : uint8_t { kReady, kRun, kWait };

  // The consumer's choice when the next result is not there: return (it is, or the end is), run one
  // input element itself (caller runs: its thread would otherwise idle), or sleep until woken.
  Turn ConsumerTurnLocked(bool may_run) {
    bool head = deterministic_ ? ring_[consumed_ % capacity_].has_value() : !completed_.empty();
    if (head || ReadyLocked() || InlineDueLocked()) return Turn::kReady;
    if (may_run && !stopping_ && !input_done_ && outstanding_ < capacity_ &&
        !input_awaiting_.load(std::memory_order_seq_cst)) {
      ++outstanding_;
      ++in_flight_;
      return Turn::kRun;
    }
    // Reset under mu_: a worker that makes the stream ready later sees consumer_waiting_ and Sets after
    // this, so the wake-up cannot be lost.
    consumer_waiting_ = true;
    ready_.Reset();
    return Turn::kWait;
  }

  // The consumer gives back a reservation it could not use; a worker parked on the full buffer meanwhile
  // takes over (a worker, not the consumer, awaits the input).
  void ConsumerUnreserve() {
    std::coroutine_handle<> wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      --outstanding_;
      --in_flight_;
      wake = parked_.TakeOne();
    }
    if (wake) pool_->Execute(wake);
  }

  static Task<void> Wait(ParallelMapStream* s) {
    std::stop_token stop = co_await CurrentStopToken();
    bool may_run = s->caller_runs_;
    for (;;) {
      Turn turn = Turn::kWait;
      {
        std::lock_guard<std::mutex> lock(s->mu_);
        turn = s->ConsumerTurnLocked(may_run && !stop.stop_requested());
      }
      if (turn == Turn::kReady) co_return;
      auto start = std::chrono::steady_clock::now();
      if (turn == Turn::kWait) {
        absl::Status waited = co_await s->ready_.Wait();
        (void)waited;  // cancelled: Poll simply reports pending again
      } else {
        absl::StatusOr<T> element;
        int64_t index = 0;
        Pulled pulled = s->ConsumerPull(&element, &index);
        if (pulled == Pulled::kReady) {
          s->Compute(std::move(element), index);
        } else if (pulled == Pulled::kEnd) {
          s->FinishInput(/*worker=*/false);
        } else {
          s->ConsumerUnreserve();
          may_run = false;  // the input is not ready: sleep until a worker brings results
        }
      }
      // Time the consumer spent computing counts as waiting: it was starved of this op's results, and the
      // tuner must see that more workers would help.
      s->AddConsumerWait(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
      if (turn == Turn::kWait) co_return;
    }
  }

  // Declared first, destroyed last: workers use it until the scope is joined.
  std::unique_ptr<Stream<T>> input_;
  Fn fn_;
  ThreadPool* pool_;
  const bool deterministic_;
  const int max_parallelism_;
  const size_t capacity_;
  const size_t wake_run_;
  const int min_parallelism_;  // 0 with caller runs (tuned): inline at 0
  std::atomic<int> target_;
  bool started_ = false;  // consumer only
  // Inline (consumer only): the op runs as the sequential Map; spawning_ is off meanwhile.
  bool inline_ = false;
  bool inline_pending_ = false;  // the last inline Poll found the input pending
  uint32_t inline_polls_ = 0;
  detail_parallel::SampledWaits inline_waits_;
  absl::StatusOr<T> inline_element_;
  // Results saved by a pause or restored, returned before the workers' (consumer only).
  std::vector<absl::StatusOr<U>> carry_;
  size_t carry_next_ = 0;

  // Input side: input_mu_ serialises the workers' Poll of the input; input_awaiting_ is set while one
  // worker awaits the input's WaitReady or the consumer polls it (read under mu_ by parkers, see
  // ShouldParkLocked).
  std::mutex input_mu_;
  std::atomic<bool> input_awaiting_{false};
  bool input_ended_ = false;  // input_mu_
  int64_t next_index_ = 0;    // input_mu_
  int64_t skip_left_ = 0;     // whoever holds the input: restored elements to drop before next_index_

  mutable std::mutex mu_;
  std::vector<std::optional<absl::StatusOr<U>>> ring_;  // deterministic: index % capacity_
  detail_ring::ValueRing<absl::StatusOr<U>> completed_;  // nondeterministic: completion order
  size_t consumed_ = 0;
  size_t outstanding_ = 0;  // reserved or taken from the input and not yet returned
  size_t in_flight_ = 0;    // reserved and not yet stored (being pulled or computed)
  int running_ = 0;         // workers spawned and not exited
  bool input_done_ = false;
  bool stopping_ = false;
  bool pausing_ = false;  // a save waits for the workers to exit
  bool consumer_waiting_ = false;
  ParkList parked_;

  std::mutex spawn_mu_;  // orders SetParallelism's spawns against shutdown
  bool spawning_ = false;
  bool spawn_closed_ = false;
  AsyncEvent ready_;
  Tuner* tuner_;
  const bool caller_runs_;
  std::atomic<int64_t>* busy_tasks_;  // the iterator's (may be null)
  const bool compact_;
  const int64_t mark_every_;
  // Compact: the input's mark after each element pulled (index % capacity_; written by the puller under
  // input_mu_, taken by the consumer under mu_), and the consumer's: the mark, index and end of the input
  // after the last result returned.
  std::vector<StreamMark> marks_;
  MarkWriter mark_writer_;  // input_mu_ (the constructor's and a restore's before any worker)
  StreamMark returned_mark_;
  int64_t returned_next_ = 0;
  int64_t returned_mark_next_ = 0;  // the index returned_mark_ stands before
  bool returned_ended_ = false;
  std::optional<TunerRegistration> registration_;
  AsyncScope scope_;
};

// Calls the user's f through InvokeUserFunction, so errors and exceptions name the op and index.
template <class T, class F>
struct UserMapFn {
  using U = UnwrapStatusOrT<std::invoke_result_t<F&, T>>;
  absl::StatusOr<U> operator()(T value, int64_t index) const {
    return InvokeUserFunction("ParallelMap", index, f, std::move(value));
  }
  mutable F f;
};

}  // namespace detail_parallel

template <class T, class F>
class ParallelMapNode final : public Node<UnwrapStatusOrT<std::invoke_result_t<F&, T>>> {
 public:
  using U = UnwrapStatusOrT<std::invoke_result_t<F&, T>>;
  ParallelMapNode(NodePtr<T> input, F f, FunctionParam function, int64_t num_parallel_calls,
                  std::optional<bool> deterministic)
      : input_(std::move(input)),
        f_(std::move(f)),
        function_(std::move(function)),
        num_parallel_calls_(num_parallel_calls),
        deterministic_(deterministic) {}
  std::string_view op_name() const override { return "ParallelMap"; }
  // Compact when deterministic: results come out in input order, each with the input's mark after it.
  bool keeps_compact_state(const Options& options) const override {
    return HasElementCodec<U> && deterministic_.value_or(options.deterministic);
  }
  std::vector<Param> params() const override {
    std::vector<Param> params = {{"f", function_}, {"num_parallel_calls", num_parallel_calls_}};
    if (deterministic_) params.push_back({"deterministic", *deterministic_});
    return params;
  }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<Stream<U>> MakeStream(IteratorContextPtr context) const override {
    std::unique_ptr<Stream<T>> input = input_->MakeStream(context);
    return std::make_unique<detail_teardown::AsyncStreamOwner<S>>(MakeImpl(context, std::move(input)),
                                                                  context->teardowns);
  }
  // State: see ParallelMapStream::Save.
  absl::StatusOr<std::unique_ptr<Stream<U>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    if constexpr (!HasElementCodec<U>) {
      return reader.Unsupported(path);
    } else {
      int64_t next_index = 0;
      std::vector<absl::StatusOr<U>> results;
      bool ended = false;
      int64_t skip = 0;
      if (absl::Status s = reader.ReadState(path, &next_index, &results, &ended, &skip); !s.ok()) return s;
      if (next_index < 0 || results.size() > static_cast<uint64_t>(next_index) || skip < 0 ||
          skip > next_index || (ended && skip != 0)) {
        return reader.Corrupt(path,
                              absl::DataLossError(absl::StrCat(results.size(), " results of ", next_index,
                                                               " input elements, ", skip, " to skip")));
      }
      std::unique_ptr<Stream<T>> input;
      if (!ended) {
        auto restored = input_->RestoreStream(context, reader, ChildNodePath(path, 0));
        if (!restored.ok()) return restored.status();
        input = std::move(*restored);
      }
      std::unique_ptr<S> impl = MakeImpl(context, std::move(input));
      impl->RestoreBuffered(next_index, std::move(results), ended, skip);
      return std::make_unique<detail_teardown::AsyncStreamOwner<S>>(std::move(impl), context->teardowns);
    }
  }

 private:
  using S = detail_parallel::ParallelMapStream<T, U, detail_parallel::UserMapFn<T, F>>;

  std::unique_ptr<S> MakeImpl(const IteratorContextPtr& context, std::unique_ptr<Stream<T>> input) const {
    bool deterministic = deterministic_.value_or(context->options.deterministic);
    ThreadPool* pool = context->pool;
    int limit = std::max(1, CpuBudget(*context));
    const bool tuned = num_parallel_calls_ == kAutotune;
    // Tuned: inline (0: the sequential Map's step, on the consumer's thread) until the tuner finds that
    // workers pay, unless an earlier iterator of this node was tuned: then where that one was left.
    const TuningHistory remembered = tuned ? tuning_memory_->Load() : TuningHistory{};
    int initial =
        tuned ? std::min(limit, std::max(0, remembered.parallelism)) : static_cast<int>(num_parallel_calls_);
    int max_parallelism = tuned ? limit : initial;
    if (tuned && !context->options.autotune) initial = max_parallelism = limit;
    Tuner* tuner = tuned ? TunerFor(*context) : nullptr;
    return std::make_unique<S>(
        std::move(input), detail_parallel::UserMapFn<T, F>{f_}, pool, initial, max_parallelism, deterministic,
        tuner, /*caller_runs=*/tuned, context->busy_tasks.get(),
        /*compact=*/context->options.compact_checkpoints && deterministic,
        ReplaysInOrder(*input_, context->options) ? kMarkInterval : 1, tuning_memory_, remembered);
  }

  NodePtr<T> input_;
  F f_;
  FunctionParam function_;
  int64_t num_parallel_calls_;
  std::optional<bool> deterministic_;
  // What the tuners of this node's iterators learned (the next iterator starts from it).
  std::shared_ptr<TuningMemory> tuning_memory_ = std::make_shared<TuningMemory>();
};

// Dataset::Map(f, num_parallel_calls, deterministic, name): 0 and 1 are the sequential Map.
template <class T, class F>
auto MakeParallelMap(NodePtr<T> input, F f, int64_t num_parallel_calls, std::optional<bool> deterministic,
                     FunctionParam function) -> NodePtr<UnwrapStatusOrT<std::invoke_result_t<F&, T>>> {
  using U = UnwrapStatusOrT<std::invoke_result_t<F&, T>>;
  if (num_parallel_calls < 0 && num_parallel_calls != kAutotune) {
    return MakeErrorSource<U>("ParallelMap", absl::InvalidArgumentError(absl::StrCat(
                                                 "Map: num_parallel_calls must be >= 0 or kAutotune (-1), got ",
                                                 num_parallel_calls)));
  }
  if (num_parallel_calls == 0 || num_parallel_calls == 1) {
    return std::make_shared<MapNode<T, F>>(std::move(input), std::move(f), std::move(function));
  }
  return std::make_shared<ParallelMapNode<T, F>>(std::move(input), std::move(f), std::move(function),
                                                 num_parallel_calls, deterministic);
}

}  // namespace sluice::ops

#endif  // SLUICE_OPS_PARALLEL_MAP_H_
