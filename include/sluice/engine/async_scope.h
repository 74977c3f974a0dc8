// AsyncScope: owner of spawned (fire-and-forget) tasks, which joins them all before it goes away.
//
// Contract:
// - Spawn(task) starts the task at once on the calling thread (it runs until it first suspends) and
//   counts it; the task observes the scope's stop token, not the spawner's.
// - RequestStop() requests stop on every spawned task (and on tasks spawned later).
// - `co_await scope.Join()` completes when every task spawned so far has finished; JoinBlocking() does the
//   same for plain threads. Joining does not stop anything: call RequestStop() first to cancel.
// - The first non-OK Status a task returned (or exception it threw, as InternalError) is kept:
//   first_error(). Results of other types are dropped.
// - The destructor requests stop and blocks until every task finished, so no detached task outlives
//   the scope. Never destroy a scope (or JoinBlocking) on a thread its tasks need to make progress.
//
//   AsyncScope scope;
//   for (auto& shard : shards) scope.Spawn(Fill(pool, shard, channel));
//   co_await scope.Join();
#ifndef SLUICE_ENGINE_ASYNC_SCOPE_H_
#define SLUICE_ENGINE_ASYNC_SCOPE_H_

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <utility>

#include "absl/status/status.h"
#include "sluice/engine/detail/promise_base.h"
#include "sluice/engine/detail/transfer.h"
#include "sluice/engine/task.h"
#include "sluice/export.h"

namespace sluice {

class SLUICE_EXPORT AsyncScope {
 public:
  AsyncScope() = default;
  AsyncScope(const AsyncScope&) = delete;
  AsyncScope& operator=(const AsyncScope&) = delete;
  ~AsyncScope();

  template <class T>
  void Spawn(Task<T> task) {
    StartChild(RunChild(std::move(task), this));
  }

  void RequestStop() noexcept { stop_source_.request_stop(); }
  bool stop_requested() const noexcept { return stop_source_.stop_requested(); }
  std::stop_token stop_token() const noexcept { return token_; }
  std::size_t pending() const noexcept { return pending_.load(std::memory_order_acquire); }
  absl::Status first_error() const;

  class JoinAwaiter {
   public:
    explicit JoinAwaiter(AsyncScope* scope) noexcept : scope_(scope) {}
    bool await_ready() const noexcept { return scope_->pending() == 0; }
    bool await_suspend(std::coroutine_handle<> awaiting) noexcept;
    void await_resume() const noexcept {}

   private:
    AsyncScope* scope_;
  };
  // Only one coroutine may await Join() at a time.
  JoinAwaiter Join() noexcept { return JoinAwaiter(this); }
  void JoinBlocking();

 private:
  // The frame that wraps a spawned task; it destroys itself when the task is done.
  class Child {
   public:
    class promise_type : public detail::PromiseBase {
     public:
      Child get_return_object() noexcept {
        return Child(std::coroutine_handle<promise_type>::from_promise(*this));
      }
      std::suspend_always initial_suspend() const noexcept { return {}; }
      auto final_suspend() noexcept {
        struct Finish {
          bool await_ready() const noexcept { return false; }
          std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> self) noexcept {
            AsyncScope* scope = self.promise().scope_;
            self.destroy();
            return scope->OnChildDone();
          }
          void await_resume() const noexcept {}
        };
        return Finish{};
      }
      void return_void() noexcept {}
      void unhandled_exception() noexcept;

      AsyncScope* scope_ = nullptr;
    };
    explicit Child(std::coroutine_handle<promise_type> handle) : handle_(handle) {}
    std::coroutine_handle<promise_type> handle_;
  };

  template <class T>
  static Child RunChild(Task<T> task, AsyncScope* scope) {
    if constexpr (std::is_void_v<T>) {
      co_await std::move(task);
    } else if constexpr (detail::kIsStatusLike<T>) {
      T result = co_await std::move(task);
      if (!result.ok()) {
        if constexpr (detail::IsStatusOr<T>::value) {
          scope->RecordError(result.status());
        } else {
          scope->RecordError(result);
        }
      }
    } else {
      (void)co_await std::move(task);
    }
  }

  void StartChild(Child child) noexcept;
  std::coroutine_handle<> OnChildDone() noexcept;
  void RecordError(absl::Status status);

  std::stop_source stop_source_;
  std::stop_token token_ = stop_source_.get_token();
  std::atomic<std::size_t> pending_{0};
  // Guards joiner_ and the blocking-join wakeup against the last child finishing concurrently.
  mutable std::mutex mu_;
  std::condition_variable all_done_;
  std::coroutine_handle<> joiner_;
  absl::Status first_error_;
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_ASYNC_SCOPE_H_
