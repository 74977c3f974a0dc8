// AsyncGenerator<T>: a lazy coroutine that yields a stream of T, pulled one element at a time.
//
// Contract:
// - Elements: each `co_yield v` hands one T to the consumer, which writes
//     while (std::optional<T> x = co_await gen.Next()) { ... }
//   Next() yields std::nullopt once the body returns (end of stream is completion, never an error).
// - Errors travel as values: a dataset stream is an AsyncGenerator<absl::StatusOr<U>>; an error element
//   does not end the stream by itself (tf.data semantics: the consumer may go on pulling, which is how
//   ignore_errors works). An exception escaping the body of such a generator becomes one final
//   InternalError element; for other T it is rethrown from the co_await.
// - Threading: the body runs on the thread that awaits Next() (by symmetric transfer, no hop) until it
//   suspends on something else (a pool hop, I/O); the consumer resumes on whichever thread yielded.
// - Cancellation: the body sees the consumer's stop token (CurrentStopToken()).
// - Lifetime: move-only; owns its frame. Destroying a generator suspended mid-stream destroys its frame
//   and so every upstream generator it owns by value. Never destroy one while a Next() is in flight.
//
//   AsyncGenerator<int> Count(int n) { for (int i = 0; i < n; ++i) co_yield i; }
#ifndef SLUICE_ENGINE_ASYNC_GENERATOR_H_
#define SLUICE_ENGINE_ASYNC_GENERATOR_H_

#include <cassert>
#include <coroutine>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "sluice/engine/detail/promise_base.h"
#include "sluice/engine/detail/status_traits.h"
#include "sluice/engine/detail/transfer.h"

namespace sluice {

template <class T>
class [[nodiscard]] AsyncGenerator {
 public:
  static_assert(!std::is_reference_v<T> && !std::is_void_v<T>, "yield values, not references");
  using value_type = T;
  class promise_type;

 private:
  // Suspends the generator and transfers control back to the consumer.
  struct TransferToConsumer {
    bool await_ready() const noexcept { return false; }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> self) noexcept {
      return detail::TransferTo(self.promise().consumer_);
    }
    void await_resume() const noexcept {}
  };

 public:
  class promise_type : public detail::PromiseBase {
   public:
    AsyncGenerator get_return_object() noexcept {
      return AsyncGenerator(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() const noexcept { return {}; }
    TransferToConsumer final_suspend() noexcept {
      current_ = nullptr;
      return {};
    }

    // An rvalue T lives in the yielding frame until the generator resumes, so point at it; anything
    // else is converted into storage owned by the promise.
    TransferToConsumer yield_value(T&& value) noexcept {
      current_ = std::addressof(value);
      return {};
    }
    template <class U>
      requires std::is_constructible_v<T, U&&>
    TransferToConsumer yield_value(U&& value) noexcept(std::is_nothrow_constructible_v<T, U&&>) {
      converted_.emplace(std::forward<U>(value));
      current_ = std::addressof(*converted_);
      return {};
    }

    void return_void() noexcept {}
    void unhandled_exception() noexcept {
      if constexpr (detail::kIsStatusLike<T>) {
        pending_error_.emplace(detail::StatusFromCurrentException());
      } else {
        exception_ = std::current_exception();
      }
    }

   private:
    friend class AsyncGenerator;

    std::optional<T> TakeCurrent() {
      if (current_ != nullptr) [[likely]] {
        T* current = std::exchange(current_, nullptr);
        return std::optional<T>(std::in_place, std::move(*current));
      }
      return TakeSlowPath();
    }

    std::optional<T> TakeSlowPath() {
      if (exception_) std::rethrow_exception(std::exchange(exception_, nullptr));
      std::optional<T> out = std::move(pending_error_);
      pending_error_.reset();
      return out;
    }

    std::coroutine_handle<> consumer_;
    T* current_ = nullptr;
    std::optional<T> converted_;
    std::optional<T> pending_error_;
    std::exception_ptr exception_;
  };

  class NextAwaiter {
   public:
    explicit NextAwaiter(std::coroutine_handle<promise_type> handle) noexcept : handle_(handle) {}
    bool await_ready() const noexcept { return !handle_ || handle_.done(); }
    template <class Promise>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> consumer) noexcept {
      handle_.promise().consumer_ = consumer;
      detail::InheritStopToken(handle_.promise(), consumer);
      return detail::TransferTo(handle_);
    }
    std::optional<T> await_resume() {
      if (!handle_) return std::nullopt;
      return handle_.promise().TakeCurrent();
    }

   private:
    std::coroutine_handle<promise_type> handle_;
  };

  AsyncGenerator() noexcept = default;
  AsyncGenerator(AsyncGenerator&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  AsyncGenerator& operator=(AsyncGenerator&& other) noexcept {
    if (this != &other) {
      Reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  AsyncGenerator(const AsyncGenerator&) = delete;
  AsyncGenerator& operator=(const AsyncGenerator&) = delete;
  ~AsyncGenerator() { Reset(); }

  // Awaitable yielding the next element, or std::nullopt at the end.
  NextAwaiter Next() noexcept { return NextAwaiter(handle_); }

  bool valid() const noexcept { return static_cast<bool>(handle_); }
  bool done() const noexcept { return !handle_ || handle_.done(); }

 private:
  explicit AsyncGenerator(std::coroutine_handle<promise_type> handle) noexcept : handle_(handle) {}
  void Reset() noexcept {
    if (handle_) handle_.destroy();
    handle_ = nullptr;
  }

  std::coroutine_handle<promise_type> handle_;
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_ASYNC_GENERATOR_H_
