// AsyncEvent: a manual-reset event that coroutines (and threads) wait for.
//
// Contract:
// - `co_await e.Wait()` -> absl::Status: OK at once if the event is set, otherwise OK when Set() is
//   next called; CancelledError if the awaiting coroutine's stop is requested first (or already was).
// - Set() wakes every current waiter and leaves the event set until Reset(); Reset() does not affect
//   waiters already woken. Both are idempotent.
// - Threading: thread-safe. Woken coroutines resume through `executor` when given, else inline on the
//   thread that called Set() (inside it, one after the other, in arrival order) or request_stop(),
//   after the internal lock is released. The event must outlive all its waiters.
//
//   AsyncEvent ready;
//   Task<absl::Status> Consumer(AsyncEvent* ready) {
//     SLUICE_CO_RETURN_IF_ERROR(co_await ready->Wait());
//     ...
//   }
//   // elsewhere: ready.Set();
#ifndef SLUICE_ENGINE_ASYNC_EVENT_H_
#define SLUICE_ENGINE_ASYNC_EVENT_H_

#include <mutex>
#include <stop_token>

#include "absl/status/status.h"
#include "sluice/engine/detail/waiter_list.h"
#include "sluice/engine/executor.h"

namespace sluice {

class AsyncEvent {
 public:
  class [[nodiscard]] WaitAwaiter : public detail::WaitOperation<WaitAwaiter> {
   public:
    absl::Status await_resume() const noexcept {
      if (state() == State::kCancelled) return absl::CancelledError("AsyncEvent::Wait cancelled");
      return absl::OkStatus();
    }

   private:
    friend class AsyncEvent;
    friend class detail::WaitOperation<WaitAwaiter>;
    explicit WaitAwaiter(AsyncEvent* event)
        : detail::WaitOperation<WaitAwaiter>(&event->mutex_, event->executor_), event_(event) {}
    bool TryCompleteLocked(detail::WakeList&) { return event_->set_; }
    detail::WaiterList& WaitListLocked() { return event_->waiters_; }

    AsyncEvent* event_;
  };

  // `executor`: where woken waiters resume (nullptr = inline on the thread calling Set()).
  explicit AsyncEvent(bool initially_set = false, Executor* executor = nullptr)
      : set_(initially_set), executor_(executor) {}
  AsyncEvent(const AsyncEvent&) = delete;
  AsyncEvent& operator=(const AsyncEvent&) = delete;

  WaitAwaiter Wait() { return WaitAwaiter(this); }

  // Blocking form for plain threads.
  absl::Status WaitBlocking(std::stop_token stop = {}) {
    WaitAwaiter op(this);
    op.WaitBlocking(stop);
    return op.await_resume();
  }

  void Set() {
    detail::WakeList wake;
    std::lock_guard<std::mutex> lock(mutex_);
    set_ = true;
    while (detail::Waiter* w = waiters_.PopFront()) wake.Add(w);
  }

  void Reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    set_ = false;
  }

  bool is_set() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return set_;
  }

 private:
  mutable std::mutex mutex_;
  bool set_;
  detail::WaiterList waiters_;
  Executor* const executor_;
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_ASYNC_EVENT_H_
