// AsyncSemaphore: a counting semaphore that coroutines (and threads) wait on without spinning.
//
// Contract:
// - `co_await s.Acquire()` -> absl::Status: OK once one unit was taken (waiting while none is
//   available); CancelledError if the awaiting coroutine's stop is requested first (no unit taken).
//   A stop already requested at await time cancels without looking at the count.
// - Order: FIFO. Release(n) hands units to waiters in arrival order; TryAcquire() fails while anyone
//   waits, so newcomers cannot overtake.
// - The count may start at or be released to any value >= 0; Release(n) with n <= 0 does nothing.
// - Threading: thread-safe. A woken coroutine resumes through `executor` when given, else inline on the
//   thread that called Release() (inside it) or request_stop(), after the internal lock is released.
//
//   AsyncSemaphore slots(4);  // at most 4 reads in flight
//   Task<absl::Status> Read(AsyncSemaphore* slots, ...) {
//     SLUICE_CO_RETURN_IF_ERROR(co_await slots->Acquire());
//     absl::Status s = co_await DoRead(...);
//     slots->Release();
//     co_return s;
//   }
#ifndef SLUICE_ENGINE_ASYNC_SEMAPHORE_H_
#define SLUICE_ENGINE_ASYNC_SEMAPHORE_H_

#include <cstdint>
#include <mutex>
#include <stop_token>

#include "absl/status/status.h"
#include "sluice/engine/detail/waiter_list.h"
#include "sluice/engine/executor.h"

namespace sluice {

class AsyncSemaphore {
 public:
  class [[nodiscard]] AcquireAwaiter : public detail::WaitOperation<AcquireAwaiter> {
   public:
    absl::Status await_resume() const noexcept {
      if (state() == State::kCancelled) {
        return absl::CancelledError("AsyncSemaphore::Acquire cancelled while waiting for a unit");
      }
      return absl::OkStatus();
    }

   private:
    friend class AsyncSemaphore;
    friend class detail::WaitOperation<AcquireAwaiter>;
    explicit AcquireAwaiter(AsyncSemaphore* sem)
        : detail::WaitOperation<AcquireAwaiter>(&sem->mutex_, sem->executor_), sem_(sem) {}
    bool TryCompleteLocked(detail::WakeList&) { return sem_->TryAcquireLocked(); }
    detail::WaiterList& WaitListLocked() { return sem_->waiters_; }

    AsyncSemaphore* sem_;
  };

  // `initial` < 0 is treated as 0. `executor`: where woken waiters resume (nullptr = inline on the
  // releasing thread); must outlive this.
  explicit AsyncSemaphore(int64_t initial, Executor* executor = nullptr)
      : count_(initial < 0 ? 0 : initial), executor_(executor) {}
  AsyncSemaphore(const AsyncSemaphore&) = delete;
  AsyncSemaphore& operator=(const AsyncSemaphore&) = delete;

  AcquireAwaiter Acquire() { return AcquireAwaiter(this); }

  // Blocking form for plain threads.
  absl::Status AcquireBlocking(std::stop_token stop = {}) {
    AcquireAwaiter op(this);
    op.WaitBlocking(stop);
    return op.await_resume();
  }

  bool TryAcquire() {
    std::lock_guard<std::mutex> lock(mutex_);
    return TryAcquireLocked();
  }

  void Release(int64_t n = 1) {
    if (n <= 0) return;
    detail::WakeList wake;
    std::lock_guard<std::mutex> lock(mutex_);
    count_ += n;
    while (count_ > 0) {
      detail::Waiter* w = waiters_.PopFront();
      if (w == nullptr) break;
      --count_;
      wake.Add(w);
    }
  }

  // Units free right now (a snapshot).
  int64_t available() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return count_;
  }

 private:
  bool TryAcquireLocked() {
    if (count_ == 0 || !waiters_.empty()) return false;
    --count_;
    return true;
  }

  mutable std::mutex mutex_;
  int64_t count_;  // invariant: waiters_ non-empty => count_ == 0
  detail::WaiterList waiters_;
  Executor* const executor_;
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_ASYNC_SEMAPHORE_H_
