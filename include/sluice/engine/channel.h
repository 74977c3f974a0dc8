// Channel<T>: a bounded multi-producer multi-consumer FIFO between coroutines and/or plain threads.
//
// Contract:
// - Elements: every value whose Push/PushBlocking/TryPush succeeded is delivered to exactly one Pop,
//   PopBlocking or TryPop. A value whose push failed (closed, cancelled) is dropped (TryPush leaves it
//   with the caller).
// - Order: FIFO per channel. Values are delivered in the order their pushes completed; waiting pushers
//   and waiting poppers are served first come, first served.
// - Backpressure: at most limit() values are buffered; `co_await Push(v)` suspends (PushBlocking
//   blocks) while the channel is full. limit() starts at capacity() and SetLimit(n) moves it within
//   [1, capacity()] at run time (a tuned buffer): raising it lets waiting pushers in at once; lowering it
//   below the values already buffered only makes pushes wait until pops bring the count under it.
// - End: Close() is idempotent. After it, pushes fail with FailedPrecondition("channel closed") and
//   waiting pushers are woken with that error (their values are dropped); pops keep draining what is
//   buffered and then return std::nullopt (end of stream, not an error).
// - Cancellation: an operation awaited from a sluice coroutine observes that coroutine's stop token (a
//   blocking call takes one as an argument). If stop is already requested, the operation completes at
//   once with CancelledError without touching the channel; if it is requested while waiting, the wait
//   ends with CancelledError and the operation had no effect: a cancelled Pop never consumes a value and
//   a cancelled Push never enqueues its value. Whether a racing wake-up or the stop wins is decided under
//   the channel's lock, so a value is never lost between the two.
// - Threading: all members are thread-safe. A coroutine woken by another thread's Push/Pop/Close (or by
//   a stop request) resumes through `executor` when one was given; with nullptr it resumes inline on the
//   waking thread (inside that Push/Pop/Close/request_stop call), after the channel's lock is released.
//   Keep continuations short, or give an executor, when that thread must not be borrowed.
//   The channel must outlive every pending operation on it.
// - T must be move-constructible; its move constructor should not throw (values are moved under the
//   channel's lock, between a waiter being unlinked and being woken).
//
//   Channel<int> ch(64);
//   Task<absl::Status> Produce(Channel<int>* ch) {
//     for (int i = 0; i < 100; ++i) SLUICE_CO_RETURN_IF_ERROR(co_await ch->Push(i));
//     ch->Close();
//     co_return absl::OkStatus();
//   }
//   Task<absl::StatusOr<int64_t>> Sum(Channel<int>* ch) {
//     int64_t sum = 0;
//     for (;;) {
//       SLUICE_CO_ASSIGN_OR_RETURN(std::optional<int> v, co_await ch->Pop());
//       if (!v) co_return sum;
//       sum += *v;
//     }
//   }
#ifndef SLUICE_ENGINE_CHANNEL_H_
#define SLUICE_ENGINE_CHANNEL_H_

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sluice/engine/detail/waiter_list.h"
#include "sluice/engine/executor.h"

namespace sluice {

template <class T>
class Channel {
 public:
  // `capacity` >= 1 (0 is treated as 1). `executor`: where woken coroutine waiters resume; nullptr means
  // inline on the thread that wakes them. It must outlive the channel.
  explicit Channel(size_t capacity, Executor* executor = nullptr)
      : capacity_(capacity == 0 ? 1 : capacity),
        limit_(capacity_),
        slots_(std::make_unique<std::optional<T>[]>(capacity_)),
        executor_(executor) {}
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // `co_await ch.Push(v)` -> absl::Status. Built by Push(); await it once.
  class [[nodiscard]] PushAwaiter : public detail::WaitOperation<PushAwaiter> {
   public:
    absl::Status await_resume() noexcept {
      if (this->state() == detail::Waiter::State::kCancelled) {
        return absl::CancelledError("Channel::Push cancelled while waiting for space");
      }
      if (closed_) return absl::FailedPreconditionError("Channel::Push: channel closed");
      return absl::OkStatus();
    }
    // After a push that failed (closed or cancelled), the value it did not enqueue: a producer that is
    // paused rather than torn down keeps it.
    T& value() noexcept { return value_; }

   private:
    friend class Channel;
    friend class detail::WaitOperation<PushAwaiter>;
    PushAwaiter(Channel* channel, T value, Executor* executor)
        : detail::WaitOperation<PushAwaiter>(&channel->mutex_, executor),
          channel_(channel),
          value_(std::move(value)) {}

    bool TryCompleteLocked(detail::WakeList& wake) { return channel_->TryPushLocked(value_, &closed_, wake); }
    detail::WaiterList& WaitListLocked() { return channel_->pushers_; }

    Channel* channel_;
    T value_;
    bool closed_ = false;
  };

  // `co_await ch.Pop()` -> absl::StatusOr<std::optional<T>>. Built by Pop(); await it once.
  class [[nodiscard]] PopAwaiter : public detail::WaitOperation<PopAwaiter> {
   public:
    absl::StatusOr<std::optional<T>> await_resume() {
      if (this->state() == detail::Waiter::State::kCancelled) {
        return absl::CancelledError("Channel::Pop cancelled while waiting for a value");
      }
      return std::move(slot_);  // nullopt: closed and drained
    }

   private:
    friend class Channel;
    friend class detail::WaitOperation<PopAwaiter>;
    PopAwaiter(Channel* channel, Executor* executor)
        : detail::WaitOperation<PopAwaiter>(&channel->mutex_, executor), channel_(channel) {}

    bool TryCompleteLocked(detail::WakeList& wake) { return channel_->TryPopLocked(&slot_, wake); }
    detail::WaiterList& WaitListLocked() { return channel_->poppers_; }

    Channel* channel_;
    std::optional<T> slot_;
  };

  // OK once enqueued (waits while full); FailedPrecondition if closed (the value is dropped); Cancelled
  // if the awaiting coroutine's stop is requested first.
  PushAwaiter Push(T value) { return PushAwaiter(this, std::move(value), executor_); }

  // A value; std::nullopt once closed and drained; Cancelled if stop is requested first.
  PopAwaiter Pop() { return PopAwaiter(this, executor_); }
  // The same, resuming a woken popper through `resume_on` instead of the channel's executor (a stage
  // whose producer must not run its consumer inline, say).
  PopAwaiter Pop(Executor* resume_on) { return PopAwaiter(this, resume_on); }

  // Blocking forms for plain threads (never from a coroutine: they block the thread). Same results.
  absl::Status PushBlocking(T value, std::stop_token stop = {}) {
    PushAwaiter op(this, std::move(value), executor_);
    op.WaitBlocking(stop);
    return op.await_resume();
  }
  absl::StatusOr<std::optional<T>> PopBlocking(std::stop_token stop = {}) {
    PopAwaiter op(this, executor_);
    op.WaitBlocking(stop);
    return op.await_resume();
  }

  // Never waits. True if `value` was enqueued (moved from); false if full or closed (left untouched).
  bool TryPush(T& value) {
    detail::WakeList wake;
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_ || (count_ >= limit_ && poppers_.empty())) return false;
    bool closed = false;
    bool done = TryPushLocked(value, &closed, wake);
    assert(done && !closed);
    return done;
  }

  // Never waits. A value, or std::nullopt if none is buffered (whether or not closed).
  std::optional<T> TryPop() {
    detail::WakeList wake;
    std::optional<T> out;
    std::lock_guard<std::mutex> lock(mutex_);
    if (count_ == 0) return out;
    TryPopLocked(&out, wake);
    return out;
  }

  // Idempotent. Wakes every waiter: waiting pushes fail, waiting pops (the buffer is empty whenever any
  // exist) get std::nullopt.
  void Close() {
    detail::WakeList wake;
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return;
    closed_ = true;
    while (detail::Waiter* w = pushers_.PopFront()) {
      static_cast<PushAwaiter*>(w)->closed_ = true;
      wake.Add(w);
    }
    while (detail::Waiter* w = poppers_.PopFront()) wake.Add(w);  // slot_ stays empty: end of stream
  }

  bool closed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return closed_;
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return count_;
  }
  size_t capacity() const { return capacity_; }
  size_t limit() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return limit_;
  }
  // Clamps n to [1, capacity()].
  void SetLimit(size_t n) {
    detail::WakeList wake;
    std::lock_guard<std::mutex> lock(mutex_);
    limit_ = std::clamp<size_t>(n, 1, capacity_);
    while (count_ < limit_) {
      detail::Waiter* w = pushers_.PopFront();
      if (w == nullptr) break;
      PushAwaiter* pusher = static_cast<PushAwaiter*>(w);
      slots_[(head_ + count_) % capacity_].emplace(std::move(pusher->value_));
      ++count_;
      wake.Add(w);
    }
  }

 private:
  // Invariants (under mutex_): poppers_ non-empty => count_ == 0; pushers_ non-empty => count_ >=
  // limit_. A push meeting a waiting pop hands its value over directly.

  // Completes a push of `value` (moving from it) unless the channel is full.
  bool TryPushLocked(T& value, bool* closed, detail::WakeList& wake) {
    if (closed_) {
      *closed = true;
      return true;
    }
    if (detail::Waiter* w = poppers_.PopFront()) {
      static_cast<PopAwaiter*>(w)->slot_.emplace(std::move(value));
      wake.Add(w);
      return true;
    }
    if (count_ >= limit_) return false;
    slots_[(head_ + count_) % capacity_].emplace(std::move(value));
    ++count_;
    return true;
  }

  // Completes a pop into `*out` (left empty when closed and drained) unless the channel is empty and open.
  bool TryPopLocked(std::optional<T>* out, detail::WakeList& wake) {
    if (count_ == 0) return closed_;
    std::optional<T>& front = slots_[head_];
    out->emplace(std::move(*front));
    front.reset();
    head_ = (head_ + 1) % capacity_;
    --count_;
    // Space freed: the longest-waiting pusher's value takes it.
    if (count_ >= limit_) return true;
    if (detail::Waiter* w = pushers_.PopFront()) {
      PushAwaiter* pusher = static_cast<PushAwaiter*>(w);
      slots_[(head_ + count_) % capacity_].emplace(std::move(pusher->value_));
      ++count_;
      wake.Add(w);
    }
    return true;
  }

  const size_t capacity_;
  size_t limit_;  // <= capacity_
  mutable std::mutex mutex_;
  std::unique_ptr<std::optional<T>[]> slots_;  // ring buffer: count_ values from head_
  size_t head_ = 0;
  size_t count_ = 0;
  bool closed_ = false;
  detail::WaiterList pushers_;
  detail::WaiterList poppers_;
  Executor* const executor_;
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_CHANNEL_H_
