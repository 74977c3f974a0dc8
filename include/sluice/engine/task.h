// Task<T>: a lazy, move-only coroutine producing one T.
//
// Contract:
// - Nothing runs until the task is awaited; `co_await std::move(task)` (or `co_await F()`) starts it and
//   resumes the awaiter by symmetric transfer when it finishes, on whatever thread finished it.
// - The awaiter's stop token (cancellation) is inherited: see CurrentStopToken().
// - An exception escaping the body becomes an InternalError when T is absl::Status or absl::StatusOr<U>;
//   otherwise it is rethrown from the co_await.
// - Destroying a task that was never awaited frees it; destroying one that is running is a bug.
// - A task can be awaited once.
//
//   Task<int> Answer() { co_return 42; }
//   Task<absl::Status> Run() { int x = co_await Answer(); ... co_return absl::OkStatus(); }
//   int x = SyncWait(Answer());  // from plain threads: see sync_wait.h
#ifndef SLUICE_ENGINE_TASK_H_
#define SLUICE_ENGINE_TASK_H_

#include <cassert>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <stop_token>
#include <type_traits>
#include <utility>
#include <variant>

#include "sluice/engine/detail/frame_allocator.h"
#include "sluice/engine/detail/promise_base.h"
#include "sluice/engine/detail/status_traits.h"
#include "sluice/engine/detail/transfer.h"

namespace sluice {

template <class T = void>
class [[nodiscard]] Task;

namespace detail {

// Resumes the awaiting coroutine (if any) by symmetric transfer.
struct TaskFinalAwaiter {
  bool await_ready() const noexcept { return false; }
  template <class Promise>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> finished) noexcept {
    std::coroutine_handle<> continuation = finished.promise().continuation();
    return continuation ? TransferTo(continuation) : std::noop_coroutine();
  }
  void await_resume() const noexcept {}
};

class TaskPromiseBase : public PromiseBase {
 public:
  // Frames come from a per-thread cache (sluice/engine/detail/frame_allocator.h): a pipeline starts
  // tasks of the same few sizes per element.
  static void* operator new(std::size_t size) { return AllocateFrame(size); }
  static void operator delete(void* frame, std::size_t size) noexcept { FreeFrame(frame, size); }

  std::suspend_always initial_suspend() const noexcept { return {}; }
  TaskFinalAwaiter final_suspend() const noexcept { return {}; }
  std::coroutine_handle<> continuation() const noexcept { return continuation_; }
  void set_continuation(std::coroutine_handle<> continuation) noexcept { continuation_ = continuation; }

 private:
  std::coroutine_handle<> continuation_;
};

template <class T>
class TaskPromise final : public TaskPromiseBase {
 public:
  Task<T> get_return_object() noexcept;

  template <class U>
    requires std::is_constructible_v<T, U&&>
  void return_value(U&& value) noexcept(std::is_nothrow_constructible_v<T, U&&>) {
    result_.template emplace<1>(std::forward<U>(value));
  }

  void unhandled_exception() noexcept {
    if constexpr (kIsStatusLike<T>) {
      result_.template emplace<1>(StatusFromCurrentException());
    } else {
      result_.template emplace<2>(std::current_exception());
    }
  }

  T TakeResult() {
    if (result_.index() == 2) std::rethrow_exception(std::get<2>(result_));
    assert(result_.index() == 1 && "task finished without a result");
    return std::move(std::get<1>(result_));
  }

 private:
  std::variant<std::monostate, T, std::exception_ptr> result_;
};

template <>
class TaskPromise<void> final : public TaskPromiseBase {
 public:
  Task<void> get_return_object() noexcept;
  void return_void() noexcept {}
  void unhandled_exception() noexcept { exception_ = std::current_exception(); }
  void TakeResult() {
    if (exception_) std::rethrow_exception(exception_);
  }

 private:
  std::exception_ptr exception_;
};

}  // namespace detail

template <class T>
class [[nodiscard]] Task {
 public:
  using promise_type = detail::TaskPromise<T>;
  using value_type = T;

  Task() noexcept = default;
  explicit Task(std::coroutine_handle<promise_type> handle) noexcept : handle_(handle) {}
  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      Reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { Reset(); }

  bool valid() const noexcept { return static_cast<bool>(handle_); }

  class Awaiter {
   public:
    explicit Awaiter(std::coroutine_handle<promise_type> handle) noexcept : handle_(handle) {}
    bool await_ready() const noexcept { return !handle_ || handle_.done(); }
    template <class Promise>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> awaiting) noexcept {
      handle_.promise().set_continuation(awaiting);
      detail::InheritStopToken(handle_.promise(), awaiting);
      return detail::TransferTo(handle_);
    }
    T await_resume() {
      assert(handle_ && "awaiting an empty Task");
      return handle_.promise().TakeResult();
    }

   private:
    std::coroutine_handle<promise_type> handle_;
  };

  Awaiter operator co_await() && noexcept { return Awaiter(handle_); }
  Awaiter operator co_await() & noexcept { return Awaiter(handle_); }

  // For runtimes (SyncWait, AsyncScope, WhenAll) that drive a task themselves.
  std::coroutine_handle<promise_type> handle() const noexcept { return handle_; }
  std::coroutine_handle<promise_type> Release() noexcept { return std::exchange(handle_, nullptr); }

 private:
  void Reset() noexcept {
    if (handle_) handle_.destroy();
    handle_ = nullptr;
  }

  std::coroutine_handle<promise_type> handle_;
};

namespace detail {

template <class T>
Task<T> TaskPromise<T>::get_return_object() noexcept {
  return Task<T>(std::coroutine_handle<TaskPromise<T>>::from_promise(*this));
}

inline Task<void> TaskPromise<void>::get_return_object() noexcept {
  return Task<void>(std::coroutine_handle<TaskPromise<void>>::from_promise(*this));
}

}  // namespace detail

// The stop token of the calling coroutine, without suspending:
//   std::stop_token stop = co_await CurrentStopToken();
class CurrentStopTokenAwaiter {
 public:
  bool await_ready() const noexcept { return false; }
  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> awaiting) noexcept {
    if constexpr (detail::SluicePromise<Promise>) token_ = awaiting.promise().stop_token();
    return false;  // never actually suspends
  }
  std::stop_token await_resume() noexcept { return std::move(token_); }

 private:
  std::stop_token token_;
};

inline CurrentStopTokenAwaiter CurrentStopToken() noexcept { return {}; }

}  // namespace sluice

#endif  // SLUICE_ENGINE_TASK_H_
