// ReplicaQueue<T>: the bounded single-producer single-consumer queue between the fan-out stage and one
// replica; ReplicaQueues<T>: one per replica.
//
// Contract:
// - Roles: at any moment at most one producer (TryPush/Push/PushBlocking) and at most one consumer
//   (TryPop/Pop/PopBlocking) use a queue; each role may move between threads and coroutines as long as
//   its calls do not overlap (the hand-over between threads must itself synchronise, as an executor's
//   does). Close() may be called by anyone, any number of times.
// - Elements and order: FIFO. Every value whose push succeeded is delivered to exactly one pop; a value
//   whose push failed (closed, cancelled) is dropped, except TryPush, which leaves it with the caller.
// - Backpressure: at most capacity() values are buffered; Push waits (PushBlocking blocks) while full.
// - End: after Close(), pushes fail with FailedPrecondition and a waiting push is woken with that error;
//   pops drain what is buffered, then return std::nullopt (end of stream, not an error).
// - Errors: FailedPrecondition (closed), Cancelled (stop requested), ResourceExhausted (the storage could
//   not allocate a block; nothing was enqueued).
// - Cancellation: an awaited Push/Pop observes the awaiting sluice coroutine's stop token (the blocking
//   forms take one). Stop already requested: the operation completes at once with CancelledError and has
//   no effect. Requested while waiting: the wait ends with CancelledError and the operation had no effect
//   (no value consumed, none enqueued). Wake-up and cancellation race under the queue's mutex; exactly one
//   wins.
// - Threading and cost: the fast path (room to push, an element to pop) is lock-free: a moodycamel queue
//   plus an atomic element count. Only a side that has to wait takes the mutex, raises its "parked" flag
//   and re-checks the count (seq_cst on both sides: Dekker), and the other side takes the mutex only when
//   it sees that flag after its own count update, so no wake-up is lost and an idle queue costs nothing
//   (no spinning; a blocking waiter yields a few times, then sleeps on a condition variable). A woken
//   coroutine resumes through `executor` when one was given, else inline on the waking thread once the
//   mutex is released. In a library built for TSan (SLUICE_REPLICA_QUEUE_LOCKED_STORAGE in sluice/config.h,
//   fixed at the library's build so every translation unit agrees on the layout) the storage is a
//   mutex-guarded deque (TSan does not model moodycamel's fences); the parking protocol is the same code.
// - The queue must outlive every pending operation. T must be move-constructible.
//
//   ReplicaQueues<Batch> queues(/*num_replicas=*/4, /*capacity=*/2);
//   Task<absl::Status> FanOut(ReplicaQueues<Batch>* queues, std::vector<Batch> batches) {
//     for (size_t i = 0; i < batches.size(); ++i) {
//       SLUICE_CO_RETURN_IF_ERROR(co_await (*queues)[i % queues->size()].Push(std::move(batches[i])));
//     }
//     queues->Close();
//     co_return absl::OkStatus();
//   }
//   // Replica r: for (;;) { auto b = co_await (*queues)[r].Pop(); ... nullopt ends the epoch }
#ifndef SLUICE_DISTRIBUTE_DETAIL_REPLICA_QUEUE_H_
#define SLUICE_DISTRIBUTE_DETAIL_REPLICA_QUEUE_H_

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sluice/engine/detail/promise_base.h"
#include "sluice/engine/detail/waiter_list.h"
#include "sluice/config.h"
#include "sluice/engine/executor.h"

#if SLUICE_REPLICA_QUEUE_LOCKED_STORAGE
#include <deque>
#else
#include "concurrentqueue/concurrentqueue.h"
#endif

namespace sluice::distribute {
namespace replica_queue_internal {

// Unbounded FIFO for one producer and one consumer; the queue's count keeps it bounded.
#if SLUICE_REPLICA_QUEUE_LOCKED_STORAGE
template <class T>
class Storage {
 public:
  explicit Storage(size_t /*capacity*/) {}
  bool Enqueue(T&& value) {
    std::lock_guard<std::mutex> lock(mutex_);
    items_.push_back(std::move(value));
    return true;
  }
  bool TryDequeue(std::optional<T>* out) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (items_.empty()) return false;
    out->emplace(std::move(items_.front()));
    items_.pop_front();
    return true;
  }

 private:
  std::mutex mutex_;
  std::deque<T> items_;
};
#else
template <class T>
class Storage {
 public:
  // Pre-allocates room for `capacity` elements (plus a block): with one explicit producer, blocks are
  // recycled once drained, so a queue that never holds more than `capacity` stops allocating.
  explicit Storage(size_t capacity) : queue_(capacity + moodycamel::ConcurrentQueueDefaultTraits::BLOCK_SIZE),
                                      producer_(queue_) {}
  bool Enqueue(T&& value) { return queue_.enqueue(producer_, std::move(value)); }
  // Dequeuing from the one explicit producer's sub-queue keeps strict FIFO and skips the producer scan.
  bool TryDequeue(std::optional<T>* out) {
    Sink sink{out};
    return queue_.try_dequeue_from_producer(producer_, sink);
  }

 private:
  // Lets moodycamel move-assign into an optional, so T needs no default constructor.
  struct Sink {
    std::optional<T>* out;
    Sink& operator=(T&& value) {
      out->emplace(std::move(value));
      return *this;
    }
  };

  moodycamel::ConcurrentQueue<T> queue_;
  moodycamel::ProducerToken producer_;  // after queue_: built from it, destroyed before it
};
#endif

}  // namespace replica_queue_internal

template <class T>
class ReplicaQueue {
  enum class Outcome : uint8_t { kPending, kPushed, kClosed, kNoMemory };

 public:
  // `capacity` >= 1 (0 is treated as 1). `executor`: where woken coroutines resume (nullptr = inline on
  // the waking thread); it must outlive the queue.
  explicit ReplicaQueue(size_t capacity, Executor* executor = nullptr)
      : capacity_(capacity == 0 ? 1 : capacity), executor_(executor), storage_(capacity_) {}
  ReplicaQueue(const ReplicaQueue&) = delete;
  ReplicaQueue& operator=(const ReplicaQueue&) = delete;

  // `co_await q.Push(v)` -> absl::Status. Await once.
  class [[nodiscard]] PushAwaiter : public detail::WaitOperation<PushAwaiter> {
    using Base = detail::WaitOperation<PushAwaiter>;

   public:
    template <class Promise>
    bool await_suspend(std::coroutine_handle<Promise> awaiting) {
      if constexpr (detail::SluicePromise<Promise>) {
        if (awaiting.promise().stop_token().stop_requested()) {
          this->state_ = detail::Waiter::State::kCancelled;
          return false;
        }
      }
      outcome_ = queue_->TryFastPush(value_);
      if (outcome_ != Outcome::kPending) return false;
      return Base::await_suspend(awaiting);
    }

    absl::Status await_resume() {
      if (this->state() == detail::Waiter::State::kCancelled) {
        // Only this producer raises the flag, and no waiter of ours is published any more.
        queue_->producer_parked_.store(false, std::memory_order_relaxed);
        return absl::CancelledError("ReplicaQueue::Push cancelled while waiting for space");
      }
      // Woken (or found room under the lock): the count can only have dropped since, so there is room.
      if (outcome_ == Outcome::kPending) outcome_ = queue_->PushNow(value_);
      return ToStatus(outcome_);
    }

   private:
    friend class ReplicaQueue;
    friend Base;

    PushAwaiter(ReplicaQueue* queue, T value)
        : Base(&queue->mutex_, queue->executor_), queue_(queue), value_(std::move(value)) {}

    // Under the mutex. Raise the flag before re-reading the count: either the consumer's decrement is
    // seen here, or the consumer sees the flag after it and wakes us.
    bool TryCompleteLocked(detail::WakeList& /*wake*/) {
      queue_->producer_parked_.store(true, std::memory_order_seq_cst);
      if (queue_->closed_.load(std::memory_order_seq_cst) ||
          queue_->count_.load(std::memory_order_seq_cst) < queue_->capacity_) {
        queue_->producer_parked_.store(false, std::memory_order_relaxed);
        return true;
      }
      return false;
    }
    detail::WaiterList& WaitListLocked() { return queue_->pushers_; }

    ReplicaQueue* queue_;
    T value_;
    Outcome outcome_ = Outcome::kPending;
  };

  // `co_await q.Pop()` -> absl::StatusOr<std::optional<T>>. Await once.
  class [[nodiscard]] PopAwaiter : public detail::WaitOperation<PopAwaiter> {
    using Base = detail::WaitOperation<PopAwaiter>;

   public:
    template <class Promise>
    bool await_suspend(std::coroutine_handle<Promise> awaiting) {
      if constexpr (detail::SluicePromise<Promise>) {
        if (awaiting.promise().stop_token().stop_requested()) {
          this->state_ = detail::Waiter::State::kCancelled;
          return false;
        }
      }
      done_ = queue_->TryFastPop(&slot_);
      if (done_) return false;
      return Base::await_suspend(awaiting);
    }

    absl::StatusOr<std::optional<T>> await_resume() {
      if (this->state() == detail::Waiter::State::kCancelled) {
        queue_->consumer_parked_.store(false, std::memory_order_relaxed);
        return absl::CancelledError("ReplicaQueue::Pop cancelled while waiting for an element");
      }
      // Woken: an element was counted in (only we take them out) or the queue was closed.
      if (!done_ && !queue_->TryFastPop(&slot_)) {
        return absl::InternalError("ReplicaQueue::Pop woken with neither an element nor Close()");
      }
      return std::move(slot_);
    }

   private:
    friend class ReplicaQueue;
    friend Base;

    explicit PopAwaiter(ReplicaQueue* queue) : Base(&queue->mutex_, queue->executor_), queue_(queue) {}

    // Under the mutex; the mirror image of PushAwaiter::TryCompleteLocked.
    bool TryCompleteLocked(detail::WakeList& /*wake*/) {
      queue_->consumer_parked_.store(true, std::memory_order_seq_cst);
      if (queue_->count_.load(std::memory_order_seq_cst) > 0 || queue_->closed_.load(std::memory_order_seq_cst)) {
        queue_->consumer_parked_.store(false, std::memory_order_relaxed);
        return true;
      }
      return false;
    }
    detail::WaiterList& WaitListLocked() { return queue_->poppers_; }

    ReplicaQueue* queue_;
    std::optional<T> slot_;
    bool done_ = false;
  };

  // OK once enqueued (waits while full); FailedPrecondition once closed (the value is dropped);
  // Cancelled if the awaiting coroutine's stop is requested first.
  PushAwaiter Push(T value) { return PushAwaiter(this, std::move(value)); }

  // The next element; std::nullopt once closed and drained; Cancelled if stop is requested first.
  PopAwaiter Pop() { return PopAwaiter(this); }

  // Blocking forms for plain threads (never from a coroutine: they block the thread). Same results.
  absl::Status PushBlocking(T value, std::stop_token stop = {}) {
    if (stop.stop_requested()) return absl::CancelledError("ReplicaQueue::PushBlocking: stop requested");
    PushAwaiter op(this, std::move(value));
    op.outcome_ = TryFastPush(op.value_);
    if (op.outcome_ == Outcome::kPending) op.WaitBlocking(stop);
    return op.await_resume();
  }
  absl::StatusOr<std::optional<T>> PopBlocking(std::stop_token stop = {}) {
    if (stop.stop_requested()) return absl::CancelledError("ReplicaQueue::PopBlocking: stop requested");
    PopAwaiter op(this);
    op.done_ = TryFastPop(&op.slot_);
    if (!op.done_) op.WaitBlocking(stop);
    return op.await_resume();
  }

  // Never waits. True if `value` was enqueued (moved from); false if full, closed or out of memory (left
  // untouched).
  bool TryPush(T&& value) { return TryFastPush(value) == Outcome::kPushed; }

  // Never waits. An element, or std::nullopt if none is buffered (closed or not).
  std::optional<T> TryPop() {
    std::optional<T> out;
    if (count_.load(std::memory_order_acquire) > 0) TakeCounted(&out);
    return out;
  }

  // Idempotent. Wakes both sides: a waiting push fails, a waiting pop (the queue is empty then) ends.
  void Close() {
    detail::WakeList wake;  // declared before the lock: resumes after the unlock
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_.load(std::memory_order_relaxed)) return;
    closed_.store(true, std::memory_order_seq_cst);
    while (detail::Waiter* w = pushers_.PopFront()) wake.Add(w);
    while (detail::Waiter* w = poppers_.PopFront()) wake.Add(w);
    producer_parked_.store(false, std::memory_order_relaxed);
    consumer_parked_.store(false, std::memory_order_relaxed);
  }

  // Undoes Close() on a queue that nobody is pushing to or popping from: a checkpoint save that took the
  // buffered elements out of a finished producer's queues hands them back through them.
  void Reopen() {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_.store(false, std::memory_order_seq_cst);
  }

  bool closed() const { return closed_.load(std::memory_order_acquire); }
  // Whether a pop / a push is parked right now (a snapshot, for tests and stats).
  bool pop_waiting() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return !poppers_.empty();
  }
  bool push_waiting() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return !pushers_.empty();
  }
  // Buffered elements (a snapshot).
  size_t size() const { return count_.load(std::memory_order_acquire); }
  size_t capacity() const { return capacity_; }

 private:
  static absl::Status ToStatus(Outcome outcome) {
    switch (outcome) {
      case Outcome::kPushed:
        return absl::OkStatus();
      case Outcome::kClosed:
        return absl::FailedPreconditionError("ReplicaQueue::Push: queue closed");
      case Outcome::kNoMemory:
        return absl::ResourceExhaustedError("ReplicaQueue::Push: could not allocate a storage block");
      case Outcome::kPending:
        break;
    }
    return absl::InternalError("ReplicaQueue::Push: finished without an outcome");
  }

  // Producer side, lock-free unless the consumer is parked. kPending: full, wait.
  Outcome TryFastPush(T& value) {
    if (closed_.load(std::memory_order_acquire)) return Outcome::kClosed;
    // Only the consumer lowers the count meanwhile, so room seen here stays room.
    if (count_.load(std::memory_order_acquire) >= capacity_) return Outcome::kPending;
    return PushNow(value);
  }

  // Producer side, with room guaranteed.
  Outcome PushNow(T& value) {
    if (closed_.load(std::memory_order_acquire)) return Outcome::kClosed;
    if (!storage_.Enqueue(std::move(value))) return Outcome::kNoMemory;
    // Publish the element (release: the enqueue happens-before any pop that counts it in), then look for
    // a parked consumer. seq_cst on both: with the consumer's flag store then count load, one of the two
    // loads sees the other side's store (Dekker), so a consumer that parks always gets woken.
    count_.fetch_add(1, std::memory_order_seq_cst);
    if (consumer_parked_.load(std::memory_order_seq_cst)) WakeConsumer();
    return Outcome::kPushed;
  }

  // Consumer side. True when the pop is finished: `out` holds an element, or stays empty at the end
  // (closed and drained). False: nothing yet, wait.
  bool TryFastPop(std::optional<T>* out) {
    if (count_.load(std::memory_order_acquire) > 0) return TakeCounted(out);
    if (!closed_.load(std::memory_order_acquire)) return false;
    // Closed: pushes that completed before Close() are visible now; drain them first.
    if (count_.load(std::memory_order_acquire) > 0) return TakeCounted(out);
    return true;
  }

  // Consumer side, with count_ > 0 observed (acquire), so the element's enqueue is visible.
  bool TakeCounted(std::optional<T>* out) {
    if (!storage_.TryDequeue(out)) return false;  // cannot happen with a correct count; the caller waits
    count_.fetch_sub(1, std::memory_order_seq_cst);
    if (producer_parked_.load(std::memory_order_seq_cst)) WakeProducer();
    return true;
  }

  // Wake the other side only if it is parked *and* what it waits for holds now. The flag alone does not
  // say so: between our count update and our flag load, the other side may have used up what we produced
  // and parked again, and a woken waiter completes in await_resume, where it cannot park again. Parking
  // re-checks the count under this mutex, so "parked" implies "was blocked then", and only we can unblock
  // it; if the condition fails here, our element (room) was already used before it parked, and the next
  // count update, or Close(), wakes it. (The flag stays raised while a waiter is published: only a waker
  // removing it, or Close(), lowers it.)
  void WakeConsumer() {
    detail::WakeList wake;  // declared before the lock: resumes after the unlock
    std::lock_guard<std::mutex> lock(mutex_);
    if (poppers_.empty() || count_.load(std::memory_order_seq_cst) == 0) return;
    consumer_parked_.store(false, std::memory_order_relaxed);
    wake.Add(poppers_.PopFront());
  }
  void WakeProducer() {
    detail::WakeList wake;
    std::lock_guard<std::mutex> lock(mutex_);
    if (pushers_.empty() || count_.load(std::memory_order_seq_cst) >= capacity_) return;
    producer_parked_.store(false, std::memory_order_relaxed);
    wake.Add(pushers_.PopFront());
  }

  const size_t capacity_;
  Executor* const executor_;
  replica_queue_internal::Storage<T> storage_;

  // Elements pushed and not yet popped. Raised after an enqueue, lowered after a dequeue, so it never
  // exceeds what the storage holds from the consumer's view, nor capacity_ from the producer's.
  alignas(64) std::atomic<size_t> count_{0};
  alignas(64) std::atomic<bool> consumer_parked_{false};  // raised by the consumer under mutex_
  alignas(64) std::atomic<bool> producer_parked_{false};  // raised by the producer under mutex_
  std::atomic<bool> closed_{false};                       // written under mutex_

  // Guards the waiter lists and every published waiter's state; taken only on the slow paths.
  mutable std::mutex mutex_;
  detail::WaiterList poppers_;  // at most one: the consumer
  detail::WaiterList pushers_;  // at most one: the producer
};

// One ReplicaQueue per replica, built together so that the fan-out stage can close them at once.
template <class T>
class ReplicaQueues {
 public:
  ReplicaQueues(int num_replicas, size_t capacity, Executor* executor = nullptr) {
    queues_.reserve(num_replicas > 0 ? static_cast<size_t>(num_replicas) : 0);
    for (int i = 0; i < num_replicas; ++i) queues_.push_back(std::make_unique<ReplicaQueue<T>>(capacity, executor));
  }

  int size() const { return static_cast<int>(queues_.size()); }
  ReplicaQueue<T>& operator[](int replica) { return *queues_[static_cast<size_t>(replica)]; }
  const ReplicaQueue<T>& operator[](int replica) const { return *queues_[static_cast<size_t>(replica)]; }

  // Closes every queue: each replica drains what it has, then sees the end.
  void Close() {
    for (auto& queue : queues_) queue->Close();
  }
  void Reopen() {
    for (auto& queue : queues_) queue->Reopen();
  }

 private:
  std::vector<std::unique_ptr<ReplicaQueue<T>>> queues_;  // stable addresses for pending operations
};

}  // namespace sluice::distribute

#endif  // SLUICE_DISTRIBUTE_DETAIL_REPLICA_QUEUE_H_
