// Executor: somewhere to resume a suspended coroutine.
//
// Contract: Execute(h) arranges for h.resume() to be called exactly once, later or at once depending on
// the executor, on a thread of the executor's choosing. ThreadPool and Reactor implement it; the sync
// primitives (Channel, AsyncMutex, ...) take one to say where woken waiters resume.
#ifndef SLUICE_ENGINE_EXECUTOR_H_
#define SLUICE_ENGINE_EXECUTOR_H_

#include <coroutine>

#include "sluice/engine/detail/transfer.h"

namespace sluice {

class Executor {
 public:
  virtual ~Executor() = default;
  virtual void Execute(std::coroutine_handle<> handle) = 0;
};

// Resumes on the calling thread, inside Execute(). Used where a waker's thread is the right place to run
// the woken coroutine (short continuations), and as the default of the sync primitives.
class InlineExecutor final : public Executor {
 public:
  void Execute(std::coroutine_handle<> handle) override { detail::Resume(handle); }
  // Not exported on purpose: the library and each program may hold their own instance (hidden
  // visibility), which is harmless because it has no state; do not compare executors with it.
  static InlineExecutor& Instance() {
    static InlineExecutor executor;
    return executor;
  }
};

// `co_await ResumeOn{executor};` continues the coroutine through `executor` (a hop to its thread);
// with nullptr it does not suspend.
struct ResumeOn {
  Executor* executor;
  bool await_ready() const noexcept { return executor == nullptr; }
  void await_suspend(std::coroutine_handle<> h) const { executor->Execute(h); }
  void await_resume() const noexcept {}
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_EXECUTOR_H_
