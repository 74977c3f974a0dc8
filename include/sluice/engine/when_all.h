// WhenAll: await several tasks, concurrently, and collect every result.
//
// Contract:
// - WhenAll(Task<A>, Task<B>, ...) -> Task<std::tuple<A, B, ...>> (void becomes std::monostate);
//   WhenAll(std::vector<Task<T>>) -> Task<std::vector<T>>, results in input order.
// - Children start one after another on the awaiting thread and run until they first suspend; put a
//   `co_await pool.Schedule()` in a child to run it in parallel.
// - The first child to fail (a non-OK Status/StatusOr result, or an exception) requests stop on the
//   others' shared stop token; WhenAll still awaits every child before it completes, so nothing it
//   started outlives it. A stop requested on the awaiting coroutine reaches the children too.
// - An exception from a child is rethrown (the first, by input order) after all children finished.
//
//   auto [a, b] = co_await WhenAll(ReadHeader(f), ReadFooter(f));
#ifndef SLUICE_ENGINE_WHEN_ALL_H_
#define SLUICE_ENGINE_WHEN_ALL_H_

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <optional>
#include <stop_token>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "sluice/engine/detail/promise_base.h"
#include "sluice/engine/detail/status_traits.h"
#include "sluice/engine/detail/transfer.h"
#include "sluice/engine/task.h"

namespace sluice {
namespace detail {

template <class T>
using VoidToMonostate = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

// Shared by one WhenAll and its children: completion count, the awaiting coroutine, the stop source.
class WhenAllState {
 public:
  explicit WhenAllState(std::size_t children) : remaining_(children + 1) {}

  // Called by each child as it finishes; the last one to arrive resumes the awaiting coroutine.
  std::coroutine_handle<> Arrive() noexcept {
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) return TransferTo(awaiting_);
    return std::noop_coroutine();
  }
  std::stop_source& stop_source() noexcept { return stop_source_; }
  const std::stop_token* child_token() const noexcept { return &child_token_; }

  // The awaiting coroutine's own arrival, after it started every child.
  class JoinAwaiter {
   public:
    explicit JoinAwaiter(WhenAllState* state) noexcept : state_(state) {}
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> awaiting) noexcept {
      state_->awaiting_ = awaiting;
      return state_->remaining_.fetch_sub(1, std::memory_order_acq_rel) != 1;
    }
    void await_resume() const noexcept {}

   private:
    WhenAllState* state_;
  };
  JoinAwaiter Join() noexcept { return JoinAwaiter(this); }

 private:
  std::atomic<std::size_t> remaining_;
  std::coroutine_handle<> awaiting_;
  std::stop_source stop_source_;
  std::stop_token child_token_ = stop_source_.get_token();
};

// Forwards a stop request from the awaiting coroutine's token to the children's source.
struct ForwardStop {
  std::stop_source* target;
  void operator()() const noexcept { target->request_stop(); }
};

// One child: awaits its task, keeps the result, tells the state when done.
template <class T>
class WhenAllChild {
 public:
  class promise_type : public PromiseBase {
   public:
    WhenAllChild get_return_object() noexcept {
      return WhenAllChild(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() const noexcept { return {}; }
    auto final_suspend() noexcept {
      struct Arrive {
        bool await_ready() const noexcept { return false; }
        std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> self) noexcept {
          promise_type& p = self.promise();
          if (p.exception_ || (p.result_ && IsErrorValue(*p.result_))) p.state_->stop_source().request_stop();
          return p.state_->Arrive();
        }
        void await_resume() const noexcept {}
      };
      return Arrive{};
    }
    template <class U>
    void return_value(U&& value) {
      result_.emplace(std::forward<U>(value));
    }
    void unhandled_exception() noexcept { exception_ = std::current_exception(); }

    WhenAllState* state_ = nullptr;
    std::optional<T> result_;
    std::exception_ptr exception_;
  };

  explicit WhenAllChild(std::coroutine_handle<promise_type> handle) noexcept : handle_(handle) {}
  WhenAllChild(WhenAllChild&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  WhenAllChild(const WhenAllChild&) = delete;
  WhenAllChild& operator=(const WhenAllChild&) = delete;
  WhenAllChild& operator=(WhenAllChild&&) = delete;
  ~WhenAllChild() {
    if (handle_) handle_.destroy();
  }

  void Start(WhenAllState* state) noexcept {
    handle_.promise().state_ = state;
    handle_.promise().set_stop_token(state->child_token());
    Resume(handle_);
  }
  std::exception_ptr exception() const noexcept { return handle_.promise().exception_; }
  T TakeResult() { return std::move(*handle_.promise().result_); }

 private:
  std::coroutine_handle<promise_type> handle_;
};

template <class T>
WhenAllChild<VoidToMonostate<T>> MakeWhenAllChild(Task<T> task) {
  if constexpr (std::is_void_v<T>) {
    co_await std::move(task);
    co_return std::monostate{};
  } else {
    co_return co_await std::move(task);
  }
}

template <class... Children>
void RethrowFirstException(const Children&... children) {
  std::exception_ptr first;
  ((first = first ? first : children.exception()), ...);
  if (first) std::rethrow_exception(first);
}

template <class... Ts>
Task<std::tuple<VoidToMonostate<Ts>...>> WhenAllTuple(Task<Ts>... tasks) {
  WhenAllState state(sizeof...(Ts));
  std::stop_token parent = co_await CurrentStopToken();
  std::stop_callback<ForwardStop> forward(parent, ForwardStop{&state.stop_source()});
  std::tuple<WhenAllChild<VoidToMonostate<Ts>>...> children(MakeWhenAllChild(std::move(tasks))...);
  std::apply([&state](auto&... child) { (child.Start(&state), ...); }, children);
  co_await state.Join();
  std::apply([](const auto&... child) { RethrowFirstException(child...); }, children);
  co_return std::apply(
      [](auto&... child) { return std::tuple<VoidToMonostate<Ts>...>(child.TakeResult()...); }, children);
}

template <class T>
Task<std::vector<VoidToMonostate<T>>> WhenAllVector(std::vector<Task<T>> tasks) {
  WhenAllState state(tasks.size());
  std::stop_token parent = co_await CurrentStopToken();
  std::stop_callback<ForwardStop> forward(parent, ForwardStop{&state.stop_source()});
  std::vector<WhenAllChild<VoidToMonostate<T>>> children;
  children.reserve(tasks.size());
  for (Task<T>& task : tasks) children.push_back(MakeWhenAllChild(std::move(task)));
  for (auto& child : children) child.Start(&state);
  co_await state.Join();
  for (auto& child : children) {
    if (child.exception()) std::rethrow_exception(child.exception());
  }
  std::vector<VoidToMonostate<T>> results;
  results.reserve(children.size());
  for (auto& child : children) results.push_back(child.TakeResult());
  co_return results;
}

}  // namespace detail

template <class... Ts>
Task<std::tuple<detail::VoidToMonostate<Ts>...>> WhenAll(Task<Ts>... tasks) {
  return detail::WhenAllTuple(std::move(tasks)...);
}

template <class T>
Task<std::vector<detail::VoidToMonostate<T>>> WhenAll(std::vector<Task<T>> tasks) {
  return detail::WhenAllVector(std::move(tasks));
}

}  // namespace sluice

#endif  // SLUICE_ENGINE_WHEN_ALL_H_
