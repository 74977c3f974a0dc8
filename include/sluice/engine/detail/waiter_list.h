// Shared machinery of the sync primitives (Channel, AsyncMutex, AsyncSemaphore, AsyncEvent): intrusive
// waiter nodes, the list they queue on, the deferred wake-up of coroutines, and cancellation.
//
// Contract for a primitive built on it:
// - The primitive owns one std::mutex. Every waiter's `state_`, its list links and its operation result
//   are read and written only under that mutex (or before the waiter is published / after it has been
//   handed back), so "woken" and "cancelled" are decided in one place and exactly one of them wins.
// - A waker unlinks a waiter, stores its outcome, sets kWoken and passes it to a WakeList, all under the
//   lock; the WakeList resumes coroutine waiters only after the lock is released (through the waiter's
//   executor, or inline via detail::Resume when it has none). A thread waiter is notified under the lock
//   instead: its condition variable lives on the waiting thread's stack and may vanish as soon as the
//   lock is dropped.
// - Cancellation: a waiter whose awaiting coroutine (or blocking caller) has a stop token that can stop
//   registers a std::stop_callback *before* it is published; the callback takes the primitive's lock and
//   cancels the waiter only if it is still kWaiting. Registering first means the callback can never run
//   inside the critical section (no self-deadlock), and a stop requested between the registration and
//   the enqueue is caught by the stop_requested() check made under the lock.
// - The stop_callback is a member of the waiter, so it is destroyed (and, per [stopcallback.cons], waits
//   for a callback running on another thread) before the waiter's memory goes away. When the callback
//   itself resumes the coroutine inline, the coroutine destroys the callback from inside its own
//   invocation on the same thread; the standard (and libstdc++) make that a non-blocking destruction, and
//   the callback does not touch the waiter after resuming it.
#ifndef SLUICE_ENGINE_DETAIL_WAITER_LIST_H_
#define SLUICE_ENGINE_DETAIL_WAITER_LIST_H_

#include <cassert>
#include <condition_variable>
#include <coroutine>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>

#include "sluice/engine/detail/promise_base.h"
#include "sluice/engine/detail/transfer.h"
#include "sluice/engine/executor.h"

namespace sluice::detail {

class WaiterList;

// One pending operation. Lives inside an awaiter (or on a blocking caller's stack): no allocation per wait.
class Waiter {
 public:
  enum class State : uint8_t {
    kIdle,       // not published yet
    kWaiting,    // on a WaiterList
    kWoken,      // completed by a waker (or immediately); the derived awaiter holds the outcome
    kCancelled,  // its stop token fired first; the operation had no effect
  };

  Waiter() = default;
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;

  State state() const noexcept { return state_; }

 protected:
  friend class WaiterList;
  friend class WakeList;

  struct Canceller {
    Waiter* waiter;
    void operator()() const noexcept { waiter->Cancel(); }
  };

  // Runs from the stop callback. Decides under the owner's lock; resumes (coroutine) or notifies (thread)
  // only when it won against every waker.
  void Cancel() noexcept;

  // Gives a woken or cancelled waiter back to its coroutine or thread. For a coroutine, this may destroy
  // the waiter: nothing may touch it afterwards.
  void Dispatch() noexcept {
    std::coroutine_handle<> handle = handle_;
    Executor* executor = executor_;
    if (executor != nullptr) {
      executor->Execute(handle);
    } else {
      Resume(handle);
    }
  }

  // Guarded by *mutex_ once published.
  Waiter* prev_ = nullptr;
  Waiter* next_ = nullptr;
  WaiterList* list_ = nullptr;
  State state_ = State::kIdle;

  std::mutex* mutex_ = nullptr;
  std::coroutine_handle<> handle_;     // coroutine waiter
  Executor* executor_ = nullptr;       // where a coroutine waiter resumes; nullptr = inline
  std::condition_variable* cv_ = nullptr;  // thread waiter (blocking call)
  // Last member: destroyed first, so a callback still running elsewhere sees the rest intact.
  std::optional<std::stop_callback<Canceller>> stop_callback_;
};

// Intrusive FIFO of waiters. Not thread-safe: the owner's mutex guards it.
class WaiterList {
 public:
  WaiterList() = default;
  WaiterList(const WaiterList&) = delete;
  WaiterList& operator=(const WaiterList&) = delete;

  bool empty() const noexcept { return head_ == nullptr; }

  void PushBack(Waiter* w) noexcept {
    w->list_ = this;
    w->prev_ = tail_;
    w->next_ = nullptr;
    if (tail_ != nullptr) {
      tail_->next_ = w;
    } else {
      head_ = w;
    }
    tail_ = w;
  }

  Waiter* front() const noexcept { return head_; }

  Waiter* PopFront() noexcept {
    Waiter* w = head_;
    if (w != nullptr) Remove(w);
    return w;
  }

  void Remove(Waiter* w) noexcept {
    assert(w->list_ == this);
    if (w->prev_ != nullptr) {
      w->prev_->next_ = w->next_;
    } else {
      head_ = w->next_;
    }
    if (w->next_ != nullptr) {
      w->next_->prev_ = w->prev_;
    } else {
      tail_ = w->prev_;
    }
    w->prev_ = w->next_ = nullptr;
    w->list_ = nullptr;
  }

 private:
  Waiter* head_ = nullptr;
  Waiter* tail_ = nullptr;
};

// Waiters completed under the owner's lock, to be resumed once it is released (a resumed coroutine may
// call straight back into the primitive). Declare it before the lock so that its destructor runs after
// the unlock.
class WakeList {
 public:
  WakeList() = default;
  WakeList(const WakeList&) = delete;
  WakeList& operator=(const WakeList&) = delete;
  ~WakeList() { ResumeAll(); }

  // Under the owner's lock: `w` is unlinked and its outcome stored.
  void Add(Waiter* w) noexcept {
    w->state_ = Waiter::State::kWoken;
    if (w->cv_ != nullptr) {
      // The waiting thread re-checks state_ under the same lock, so notifying here cannot be lost, and
      // the condition variable cannot be gone yet.
      w->cv_->notify_one();
      return;
    }
    w->next_ = nullptr;
    if (tail_ != nullptr) {
      tail_->next_ = w;
    } else {
      head_ = w;
    }
    tail_ = w;
  }

  // Without the lock.
  void ResumeAll() noexcept {
    while (head_ != nullptr) {
      Waiter* w = head_;
      head_ = w->next_;  // read before dispatching: w may be destroyed by its coroutine
      if (head_ == nullptr) tail_ = nullptr;
      w->Dispatch();
    }
  }

 private:
  Waiter* head_ = nullptr;
  Waiter* tail_ = nullptr;
};

inline void Waiter::Cancel() noexcept {
  {
    std::lock_guard<std::mutex> lock(*mutex_);
    if (state_ != State::kWaiting) return;  // a waker got there first
    list_->Remove(this);
    state_ = State::kCancelled;
    if (cv_ != nullptr) {
      cv_->notify_one();
      return;
    }
  }
  Dispatch();
}

// CRTP base of every primitive's wait operation. Derived provides, called under the owner's lock:
//   bool TryCompleteLocked(WakeList& wake);  // completes now (storing its outcome) or returns false
//                                            // without side effects (adds nothing to `wake`)
//   WaiterList& WaitListLocked();            // the list to wait on
// and an await_resume() that maps state() (kWoken / kCancelled) and its stored outcome to a result.
// An operation is awaited (or WaitBlocking'ed) once. Destroying it while it is published (a coroutine
// frame destroyed while suspended in it) is a bug, as for any suspended sluice coroutine.
template <class Derived>
class WaitOperation : public Waiter {
 public:
  WaitOperation(std::mutex* mutex, Executor* executor) noexcept {
    mutex_ = mutex;
    executor_ = executor;
  }

  bool await_ready() const noexcept { return false; }

  // Suspends only when the operation has to wait; otherwise completes without suspending.
  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> awaiting) {
    const std::stop_token* token = &NeverStopToken();
    if constexpr (SluicePromise<Promise>) token = &awaiting.promise().stop_token();
    handle_ = awaiting;
    std::unique_lock<std::mutex> lock(*mutex_, std::defer_lock);
    if (!Arm(*token, lock)) return false;
    // Published: from the unlock on, a waker or the stop callback may resume (and destroy) us on another
    // thread, so nothing below may touch *this.
    lock.unlock();
    return true;
  }

  // For plain threads: blocks until woken or cancelled through `token`. Never call it from a coroutine.
  void WaitBlocking(const std::stop_token& token) {
    // A few yields before sleeping: when the other side runs at a similar rate, the state it is about to
    // produce usually arrives within a time slice, and a futex sleep/wake pair per element costs more.
    for (int i = 0; i < kYieldsBeforeSleeping && !token.stop_requested(); ++i) {
      WakeList wake;
      std::unique_lock<std::mutex> lock(*mutex_);
      if (self().TryCompleteLocked(wake)) {
        state_ = State::kWoken;
        return;  // unlocks, then resumes whoever the operation woke
      }
      lock.unlock();
      std::this_thread::yield();
    }
    std::condition_variable cv;
    cv_ = &cv;
    std::unique_lock<std::mutex> lock(*mutex_, std::defer_lock);
    if (Arm(token, lock)) {
      cv.wait(lock, [this] { return state_ != State::kWaiting; });
      lock.unlock();
    }
    // Waits for a callback running on another thread; it cannot touch cv any more (state_ is final).
    stop_callback_.reset();
  }

 private:
  static constexpr int kYieldsBeforeSleeping = 8;

  Derived& self() noexcept { return static_cast<Derived&>(*this); }

  // Completes the operation at once (returns false, lock released, others woken) or publishes the
  // waiter (returns true with the lock held).
  bool Arm(const std::stop_token& token, std::unique_lock<std::mutex>& lock) {
    if (token.stop_requested()) {
      state_ = State::kCancelled;
      return false;
    }
    WakeList wake;  // before the lock is taken below, so it resumes after the unlock
    lock.lock();
    if (self().TryCompleteLocked(wake)) {
      state_ = State::kWoken;
      lock.unlock();
      return false;
    }
    if (token.stop_possible()) {
      // Register without the lock: the callback takes it, and may run synchronously inside emplace().
      lock.unlock();
      stop_callback_.emplace(token, Canceller{this});
      lock.lock();
      if (token.stop_requested()) {
        state_ = State::kCancelled;
        lock.unlock();
        return false;
      }
      if (self().TryCompleteLocked(wake)) {
        state_ = State::kWoken;
        lock.unlock();
        return false;
      }
    }
    // `wake` is empty here (failed TryCompleteLocked calls add nothing), so destroying it under the lock
    // resumes nobody.
    state_ = State::kWaiting;
    self().WaitListLocked().PushBack(this);
    return true;
  }
};

}  // namespace sluice::detail

#endif  // SLUICE_ENGINE_DETAIL_WAITER_LIST_H_
