// ThreadPool: N worker threads that resume coroutines; the engine's place to run CPU work in parallel.
//
// Contract:
// - Elements: coroutine handles. `co_await pool.Schedule()` suspends the caller and resumes it on one of
//   the pool's workers; Execute(h) does the same for a raw handle (resumed through detail::Resume, so
//   symmetric transfer stays bounded in every build).
// - Order: a worker scheduling onto its own pool pushes to its local FIFO queue (no shared contention);
//   other threads push to one shared lock-free queue. A worker runs its local queue in FIFO order, looks at
//   the shared queue at least every 61 picks (and right after a Yield()), and, when both are empty, steals
//   the oldest item of another worker before it sleeps. So work is roughly FIFO; there is no global order
//   across threads. Schedule() always hops, even when the caller already runs on this pool: it requeues
//   the caller behind the work already queued locally.
// - Yield(): from a worker, requeues the caller behind the work queued on that worker and lets the shared
//   queue go first once, so a long CPU loop that yields every N items lets other tasks run. From a
//   non-worker thread it behaves like Schedule().
// - Errors: none of its own. Exceptions thrown by the resumed coroutines are handled by their promises
//   (a Task<absl::Status> turns them into InternalError); a handle that lets one escape resume() is a bug.
// - Cancellation: Schedule() and Yield() do not observe the stop token: a hop always completes, so the
//   caller knows which thread it resumes on. Check the token after the hop.
// - Shutdown: Stop() (also run by the destructor) refuses new work from outside the pool, runs everything
//   already queued, including what that work queues onto its own worker while draining, then joins. A
//   handle handed to the pool from a non-worker thread after Stop() began runs inline, on the scheduling
//   thread, inside Execute() (and Schedule() simply does not suspend), so nothing is lost or leaked.
// - Threading: every member is thread-safe. Stop() and the destructor must not run on one of this pool's
//   own workers (a thread cannot join itself); Stop() from a worker only starts the shutdown and returns.
//   An idle worker keeps looking for ~0.1 ms before it sleeps on a condition variable: one worker at a
//   time pause-spins (yielding the CPU every ~0.6 us), the others yield a few times. So a push soon after
//   the pool ran dry needs no wake-up call; a push wakes at most one sleeper.
//
//   ThreadPool pool(4);
//   Task<int> Square(ThreadPool& pool, int x) {  // `pool` outlives the task
//     co_await pool.Schedule();                  // now on a worker
//     co_return x * x;
//   }
//   int y = SyncWait(Square(pool, 7));
#ifndef SLUICE_ENGINE_THREAD_POOL_H_
#define SLUICE_ENGINE_THREAD_POOL_H_

#include <coroutine>
#include <memory>

#include "sluice/engine/executor.h"
#include "sluice/export.h"

namespace sluice {

class SLUICE_EXPORT ThreadPool final : public Executor {
 public:
  // The awaitable of Schedule() and Yield(). It is the whole queue entry: the suspended handle goes into
  // the queue directly, so a hop allocates nothing of its own (the queues grow in amortised blocks).
  class ScheduleAwaiter {
   public:
    ScheduleAwaiter(ThreadPool* pool, bool yield) noexcept : pool_(pool), yield_(yield) {}
    bool await_ready() const noexcept { return false; }
    // Returns false (resume at once, on this thread) only when the pool is stopped. Once the handle is
    // queued another worker may already run (and finish) the caller, so nothing here touches `this`
    // after the push.
    bool await_suspend(std::coroutine_handle<> awaiting) { return pool_->Enqueue(awaiting, yield_); }
    void await_resume() const noexcept {}

   private:
    ThreadPool* pool_;
    bool yield_;
  };

  // Starts max(num_threads, 1) workers named "sluice-pool-<i>".
  explicit ThreadPool(int num_threads);
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  // Stop(): drains and joins.
  ~ThreadPool() override;

  // `co_await pool.Schedule();` continues on a worker of this pool.
  ScheduleAwaiter Schedule() noexcept { return ScheduleAwaiter(this, /*yield=*/false); }
  // `co_await pool.Yield();` inside long CPU loops running on the pool.
  ScheduleAwaiter Yield() noexcept { return ScheduleAwaiter(this, /*yield=*/true); }

  // Resumes `handle` once on a worker; after Stop() began, from a non-worker thread, resumes it inline.
  void Execute(std::coroutine_handle<> handle) override;

  // Idempotent and safe to call concurrently; returns once every worker has drained and exited (unless
  // called from a worker of this pool, see above).
  void Stop();

  int num_threads() const noexcept { return num_threads_; }
  // True on the threads of this pool only (not on another pool's workers).
  bool IsCurrentThreadWorker() const noexcept;
  // True on a worker of any pool: a thread that must not block on work queued to a pool.
  static bool IsAnyWorkerThread() noexcept;

  // A process-wide pool with hardware_concurrency() workers (at least 1), created on first use and never
  // destroyed, so exiting the process from any thread is safe.
  static ThreadPool& Default();

 private:
  struct SLUICE_NO_EXPORT Impl;

  // Queues `handle`; false when the pool no longer accepts it and the caller must run it itself.
  bool Enqueue(std::coroutine_handle<> handle, bool yield);

  int num_threads_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_THREAD_POOL_H_
