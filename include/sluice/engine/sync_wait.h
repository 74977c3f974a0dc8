// SyncWait: run a Task to completion from a plain thread (main, tests, destructors off the pool).
//
// Contract: starts `task` on the calling thread, blocks until it finishes (possibly on another thread)
// and returns its result, rethrowing an exception the task let escape. `stop` is the stop token the task
// and everything it awaits observe. Never call it from a thread that the task needs to make progress
// (a pool worker the task schedules onto, the reactor thread): that deadlocks.
//
//   absl::StatusOr<Bytes> data = SyncWait(ReadAll(reactor, "/tmp/x"));
#ifndef SLUICE_ENGINE_SYNC_WAIT_H_
#define SLUICE_ENGINE_SYNC_WAIT_H_

#include <coroutine>
#include <exception>
#include <optional>
#include <semaphore>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "sluice/engine/detail/promise_base.h"
#include "sluice/engine/detail/transfer.h"
#include "sluice/engine/task.h"

namespace sluice {
namespace detail {

class SyncWaitRoot {
 public:
  class promise_type : public PromiseBase {
   public:
    SyncWaitRoot get_return_object() noexcept {
      return SyncWaitRoot(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() const noexcept { return {}; }
    auto final_suspend() const noexcept {
      struct ReleaseWaiter {
        bool await_ready() const noexcept { return false; }
        // The frame is suspended before the waiter wakes, so the waiter may destroy it at once.
        void await_suspend(std::coroutine_handle<promise_type> root) const noexcept {
          root.promise().on_done_(root.promise().on_done_arg_);
        }
        void await_resume() const noexcept {}
      };
      return ReleaseWaiter{};
    }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { exception_ = std::current_exception(); }

    void (*on_done_)(void*) = nullptr;  // called once the frame has finished, from wherever it finished
    void* on_done_arg_ = nullptr;
    std::exception_ptr exception_;
  };

  explicit SyncWaitRoot(std::coroutine_handle<promise_type> handle) : handle_(handle) {}
  SyncWaitRoot(SyncWaitRoot&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  SyncWaitRoot(const SyncWaitRoot&) = delete;
  SyncWaitRoot& operator=(const SyncWaitRoot&) = delete;
  SyncWaitRoot& operator=(SyncWaitRoot&&) = delete;
  ~SyncWaitRoot() {
    if (handle_) handle_.destroy();
  }

  // Resumes the root on this thread; returns once it has finished, wherever it finished.
  void RunAndWait(const std::stop_token* stop) {
    std::binary_semaphore done(0);
    Start(stop, &ReleaseSemaphore, &done);
    done.acquire();
    RethrowIfFailed();
  }

  // Resumes the root on this thread and returns when it suspends; on_done(arg) runs when it finishes.
  // `stop` must outlive the root.
  void Start(const std::stop_token* stop, void (*on_done)(void*), void* arg) {
    handle_.promise().on_done_ = on_done;
    handle_.promise().on_done_arg_ = arg;
    handle_.promise().set_stop_token(stop);
    Resume(handle_);
  }

  // After on_done: rethrows what the task let escape.
  void RethrowIfFailed() {
    if (handle_.promise().exception_) std::rethrow_exception(handle_.promise().exception_);
  }

 private:
  static void ReleaseSemaphore(void* semaphore) { static_cast<std::binary_semaphore*>(semaphore)->release(); }

  std::coroutine_handle<promise_type> handle_;
};

template <class T>
SyncWaitRoot MakeSyncWaitRoot(Task<T> task, std::optional<T>* result) {
  result->emplace(co_await std::move(task));
}

inline SyncWaitRoot MakeSyncWaitRoot(Task<void> task, std::optional<std::monostate>*) {
  co_await std::move(task);
}

}  // namespace detail

template <class T>
T SyncWait(Task<T> task, std::stop_token stop = {}) {
  if constexpr (std::is_void_v<T>) {
    detail::SyncWaitRoot root = detail::MakeSyncWaitRoot(std::move(task), nullptr);
    root.RunAndWait(&stop);
  } else {
    std::optional<T> result;
    detail::SyncWaitRoot root = detail::MakeSyncWaitRoot(std::move(task), &result);
    root.RunAndWait(&stop);
    return std::move(*result);
  }
}

}  // namespace sluice

#endif  // SLUICE_ENGINE_SYNC_WAIT_H_
