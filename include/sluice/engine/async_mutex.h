// AsyncMutex: a mutual-exclusion lock that coroutines wait for without blocking their thread.
//
// Contract:
// - `co_await m.Lock()` -> absl::StatusOr<AsyncMutex::Guard>: the Guard owns the lock and releases it
//   when destroyed (or on Guard::Unlock()). Guard is move-only; it may be released on any thread.
// - Order: FIFO. Unlock() hands the lock straight to the longest waiter (it never becomes free in
//   between), so a stream of TryLock() callers cannot starve waiters.
// - Cancellation: if the awaiting coroutine's stop token is already stopped, Lock() completes at once
//   with CancelledError; if stop is requested while waiting, the wait ends with CancelledError and the
//   lock was not taken. Lock-handoff and cancellation race under the mutex's internal lock: exactly one
//   wins, so a handed-off lock is never lost.
// - Threading: thread-safe. A waiter resumes through `executor` when given, else inline on the thread
//   that called Unlock() (inside it) or request_stop(), after the internal lock is released. Not
//   recursive: locking twice from one coroutine deadlocks it. The mutex must outlive all its users.
//
//   AsyncMutex mu;
//   Task<absl::Status> Append(AsyncMutex* mu, std::vector<int>* out, int v) {
//     SLUICE_CO_ASSIGN_OR_RETURN(AsyncMutex::Guard guard, co_await mu->Lock());
//     out->push_back(v);
//     co_return absl::OkStatus();
//   }  // guard unlocks here
#ifndef SLUICE_ENGINE_ASYNC_MUTEX_H_
#define SLUICE_ENGINE_ASYNC_MUTEX_H_

#include <mutex>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sluice/engine/detail/waiter_list.h"
#include "sluice/engine/executor.h"

namespace sluice {

class AsyncMutex {
 public:
  // Owns a held lock; unlocks on destruction. Default-constructed or moved-from guards own nothing.
  class [[nodiscard]] Guard {
   public:
    Guard() noexcept = default;
    explicit Guard(AsyncMutex* mutex) noexcept : mutex_(mutex) {}
    Guard(Guard&& other) noexcept : mutex_(std::exchange(other.mutex_, nullptr)) {}
    Guard& operator=(Guard&& other) noexcept {
      if (this != &other) {
        Unlock();
        mutex_ = std::exchange(other.mutex_, nullptr);
      }
      return *this;
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard() { Unlock(); }

    bool owns_lock() const noexcept { return mutex_ != nullptr; }
    void Unlock() {
      if (mutex_ != nullptr) std::exchange(mutex_, nullptr)->Unlock();
    }

   private:
    AsyncMutex* mutex_ = nullptr;
  };

  class [[nodiscard]] LockAwaiter : public detail::WaitOperation<LockAwaiter> {
   public:
    absl::StatusOr<Guard> await_resume() noexcept {
      if (state() == State::kCancelled) {
        return absl::CancelledError("AsyncMutex::Lock cancelled while waiting for the lock");
      }
      return Guard(mutex_);
    }

   private:
    friend class AsyncMutex;
    friend class detail::WaitOperation<LockAwaiter>;
    explicit LockAwaiter(AsyncMutex* mutex)
        : detail::WaitOperation<LockAwaiter>(&mutex->state_mutex_, mutex->executor_), mutex_(mutex) {}
    bool TryCompleteLocked(detail::WakeList&) { return mutex_->TryLockLocked(); }
    detail::WaiterList& WaitListLocked() { return mutex_->waiters_; }

    AsyncMutex* mutex_;
  };

  // `executor`: where woken waiters resume (nullptr = inline on the unlocking thread); must outlive this.
  explicit AsyncMutex(Executor* executor = nullptr) : executor_(executor) {}
  AsyncMutex(const AsyncMutex&) = delete;
  AsyncMutex& operator=(const AsyncMutex&) = delete;

  LockAwaiter Lock() { return LockAwaiter(this); }

  // Blocking form for plain threads.
  absl::StatusOr<Guard> LockBlocking(std::stop_token stop = {}) {
    LockAwaiter op(this);
    op.WaitBlocking(stop);
    return op.await_resume();
  }

  // Takes the lock if it is free and nobody waits; the caller must Unlock() it (or adopt it in a Guard).
  bool TryLock() {
    std::lock_guard<std::mutex> lock(state_mutex_);
    return TryLockLocked();
  }

  // Releases the lock (held by the caller), handing it to the first waiter if any.
  void Unlock() {
    detail::WakeList wake;
    std::lock_guard<std::mutex> lock(state_mutex_);
    if (detail::Waiter* w = waiters_.PopFront()) {
      wake.Add(w);  // locked_ stays true: ownership passes to w
    } else {
      locked_ = false;
    }
  }

 private:
  bool TryLockLocked() {
    if (locked_) return false;
    locked_ = true;
    return true;
  }

  std::mutex state_mutex_;
  bool locked_ = false;  // invariant: waiters_ non-empty => locked_
  detail::WaiterList waiters_;
  Executor* const executor_;
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_ASYNC_MUTEX_H_
