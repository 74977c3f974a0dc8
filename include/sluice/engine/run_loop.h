// RunLoop: an Executor that is one plain thread, the one inside Run().
//
// Contract:
// - Run(task, stop) starts `task` on the calling thread and then resumes, on that same thread, every
//   coroutine handed to Execute() until the task has finished; it returns the task's result (rethrowing
//   an exception it let escape). Handles posted while no Run() is active wait for the next Run().
// - `co_await loop.Schedule()` moves the awaiting coroutine onto the loop's thread. This is how a
//   coroutine that owns a thread (a trainer's replica) comes home after an await that resumed it
//   elsewhere (a queue waking it on a pool worker), so its blocking work never occupies the pool.
// - Execute() and Schedule() may be called from any thread; Run() from one thread at a time.
// - Cancellation: `stop` reaches the task and everything it awaits, as with SyncWait.
//
//   RunLoop loop;
//   absl::Status status = loop.Run(ReplicaLoop(&replica_iterator, &loop));
//   // inside ReplicaLoop: auto batch = co_await it->Next(); co_await loop->Schedule(); Compute(*batch);
#ifndef SLUICE_ENGINE_RUN_LOOP_H_
#define SLUICE_ENGINE_RUN_LOOP_H_

#include <condition_variable>
#include <coroutine>
#include <deque>
#include <mutex>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>
#include <variant>

#include "sluice/engine/detail/transfer.h"
#include "sluice/engine/executor.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"

namespace sluice {

class RunLoop final : public Executor {
 public:
  RunLoop() = default;
  RunLoop(const RunLoop&) = delete;
  RunLoop& operator=(const RunLoop&) = delete;

  void Execute(std::coroutine_handle<> handle) override {
    // Notify under the lock: once the handle is taken, the task may finish and the loop be destroyed
    // before a notify made after unlocking would touch the condition variable.
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(handle);
    wake_.notify_one();
  }

  class [[nodiscard]] ScheduleAwaiter {
   public:
    explicit ScheduleAwaiter(RunLoop* loop) : loop_(loop) {}
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> awaiting) const { loop_->Execute(awaiting); }
    void await_resume() const noexcept {}

   private:
    RunLoop* loop_;
  };
  ScheduleAwaiter Schedule() { return ScheduleAwaiter(this); }

  template <class T>
  T Run(Task<T> task, std::stop_token stop = {}) {
    if constexpr (std::is_void_v<T>) {
      detail::SyncWaitRoot root = detail::MakeSyncWaitRoot(std::move(task), nullptr);
      Drive(root, &stop);
    } else {
      std::optional<T> result;
      detail::SyncWaitRoot root = detail::MakeSyncWaitRoot(std::move(task), &result);
      Drive(root, &stop);
      return std::move(*result);
    }
  }

 private:
  void Drive(detail::SyncWaitRoot& root, const std::stop_token* stop) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = false;
    }
    root.Start(stop, &MarkDone, this);
    for (;;) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return done_ || !queue_.empty(); });
      if (queue_.empty()) break;  // done, and nothing left that the task handed us
      std::coroutine_handle<> next = queue_.front();
      queue_.pop_front();
      lock.unlock();
      detail::Resume(next);
    }
    root.RethrowIfFailed();
  }

  static void MarkDone(void* self) {
    RunLoop* loop = static_cast<RunLoop*>(self);
    // Notify under the lock: once done_ is seen, Run() may return and the loop may be destroyed.
    std::lock_guard<std::mutex> lock(loop->mutex_);
    loop->done_ = true;
    loop->wake_.notify_one();
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::coroutine_handle<>> queue_;
  bool done_ = false;
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_RUN_LOOP_H_
