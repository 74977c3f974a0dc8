#include "sluice/engine/thread_pool.h"

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <semaphore>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/engine/async_scope.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "sluice/engine/when_all.h"

namespace sluice {
namespace thread_pool_test_file {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

#if defined(SLUICE_SANITIZED_BUILD)
constexpr int kManyTasks = 100'000;
constexpr int kStressScale = 1;
#else
constexpr int kManyTasks = 1'000'000;
constexpr int kStressScale = 5;
#endif

// Coroutine parameters below take the pool by pointer: every test keeps its pool alive until the tasks
// it started have finished.

struct HopResult {
  std::thread::id thread;
  bool on_worker = false;
  std::string name;
};

Task<HopResult> HopAndReport(ThreadPool* pool) {
  co_await pool->Schedule();
  HopResult result;
  result.thread = std::this_thread::get_id();
  result.on_worker = pool->IsCurrentThreadWorker();
  char name[32] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  result.name = name;
  co_return result;
}

TEST(ThreadPoolTest, ScheduleMovesToAWorker) {
  ThreadPool pool(2);
  EXPECT_EQ(pool.num_threads(), 2);
  EXPECT_FALSE(pool.IsCurrentThreadWorker());
  HopResult result = SyncWait(HopAndReport(&pool));
  EXPECT_NE(result.thread, std::this_thread::get_id());
  EXPECT_TRUE(result.on_worker);
  EXPECT_THAT(result.name, HasSubstr("sluice-pool-"));
  EXPECT_FALSE(pool.IsCurrentThreadWorker());
}

TEST(ThreadPoolTest, ZeroThreadsMeansOne) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.num_threads(), 1);
  EXPECT_TRUE(SyncWait(HopAndReport(&pool)).on_worker);
}

TEST(ThreadPoolTest, AnotherPoolsWorkerIsNotAWorker) {
  ThreadPool a(1);
  ThreadPool b(1);
  HopResult result = SyncWait(HopAndReport(&a));
  EXPECT_TRUE(result.on_worker);
  // Checked from a's worker: it is not b's.
  struct Probe {
    static Task<bool> OnAIsB(ThreadPool* a, ThreadPool* b) {
      co_await a->Schedule();
      co_return b->IsCurrentThreadWorker();
    }
  };
  EXPECT_FALSE(SyncWait(Probe::OnAIsB(&a, &b)));
}

Task<void> HopAndCount(ThreadPool* pool, std::atomic<int>* count) {
  co_await pool->Schedule();
  count->fetch_add(1, std::memory_order_relaxed);
}

TEST(ThreadPoolTest, ManyTasksThroughThePool) {
  ThreadPool pool(2);
  std::atomic<int> count{0};
  {
    AsyncScope scope;
    for (int i = 0; i < kManyTasks; ++i) scope.Spawn(HopAndCount(&pool, &count));
    scope.JoinBlocking();
    EXPECT_TRUE(scope.first_error().ok());
  }
  EXPECT_EQ(count.load(), kManyTasks);
}

Task<void> HopTwiceAndCount(ThreadPool* pool, std::atomic<int>* count) {
  co_await pool->Schedule();
  co_await pool->Schedule();  // from a worker: the local queue, where other workers may steal it
  co_await pool->Yield();
  count->fetch_add(1, std::memory_order_relaxed);
}

TEST(ThreadPoolTest, ManyExternalThreadsScheduleConcurrently) {
  ThreadPool pool(2);
  constexpr int kThreads = 6;
  constexpr int kPerThread = 2'000 * kStressScale;
  std::atomic<int> count{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&pool, &count] {
      AsyncScope scope;
      for (int i = 0; i < kPerThread; ++i) scope.Spawn(HopTwiceAndCount(&pool, &count));
      scope.JoinBlocking();
      // Mix in blocking round trips from this thread too.
      for (int i = 0; i < 50; ++i) SyncWait(HopAndCount(&pool, &count));
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(count.load(), kThreads * (kPerThread + 50));
}

struct Order {
  std::mutex mu;
  std::vector<std::string> events;
  void Add(std::string event) {
    std::lock_guard<std::mutex> lock(mu);
    events.push_back(std::move(event));
  }
  std::vector<std::string> Get() {
    std::lock_guard<std::mutex> lock(mu);
    return events;
  }
};

Task<void> LocalB(ThreadPool* pool, Order* order) {
  co_await pool->Schedule();
  order->Add("B");
}

Task<void> YieldingA(ThreadPool* pool, Order* order, AsyncScope* scope) {
  co_await pool->Schedule();
  order->Add("A start");
  // B starts here and queues itself on this worker before A yields.
  scope->Spawn(LocalB(pool, order));
  co_await pool->Yield();
  order->Add("A end");
}

TEST(ThreadPoolTest, YieldLetsLocallyQueuedTaskRunFirst) {
  ThreadPool pool(1);
  Order order;
  AsyncScope scope;
  SyncWait(YieldingA(&pool, &order, &scope));
  scope.JoinBlocking();
  EXPECT_THAT(order.Get(), ElementsAre("A start", "B", "A end"));
}

Task<void> BlockedThenYield(ThreadPool* pool, Order* order, std::binary_semaphore* started,
                            std::binary_semaphore* go) {
  co_await pool->Schedule();
  order->Add("A start");
  started->release();
  go->acquire();  // the only worker is held here while the main thread queues B from outside
  co_await pool->Yield();
  order->Add("A end");
}

TEST(ThreadPoolTest, YieldLetsExternallyQueuedTaskRunFirst) {
  ThreadPool pool(1);
  Order order;
  std::binary_semaphore started(0);
  std::binary_semaphore go(0);
  AsyncScope scope;
  scope.Spawn(BlockedThenYield(&pool, &order, &started, &go));
  started.acquire();
  scope.Spawn(LocalB(&pool, &order));  // queued on the shared queue: the worker is busy with A
  go.release();
  scope.JoinBlocking();
  EXPECT_THAT(order.Get(), ElementsAre("A start", "B", "A end"));
}

Task<void> YieldLoop(ThreadPool* pool, int iterations, std::atomic<int>* yields) {
  co_await pool->Schedule();
  for (int i = 0; i < iterations; ++i) {
    co_await pool->Yield();
    yields->fetch_add(1, std::memory_order_relaxed);
  }
}

TEST(ThreadPoolTest, YieldLoopsInterleaveAndFinish) {
  ThreadPool pool(2);
  std::atomic<int> yields{0};
  constexpr int kTasks = 16;
  const int iterations = 200 * kStressScale;
  {
    AsyncScope scope;
    for (int i = 0; i < kTasks; ++i) scope.Spawn(YieldLoop(&pool, iterations, &yields));
    scope.JoinBlocking();
  }
  EXPECT_EQ(yields.load(), kTasks * iterations);
}

TEST(ThreadPoolTest, YieldFromOutsideActsAsSchedule) {
  ThreadPool pool(1);
  struct Probe {
    static Task<bool> Run(ThreadPool* pool) {
      co_await pool->Yield();
      co_return pool->IsCurrentThreadWorker();
    }
  };
  EXPECT_TRUE(SyncWait(Probe::Run(&pool)));
}

Task<void> Blocker(ThreadPool* pool, std::binary_semaphore* started, std::binary_semaphore* gate) {
  co_await pool->Schedule();
  started->release();
  gate->acquire();
}

TEST(ThreadPoolTest, StopDrainsQueuedWorkAndIsIdempotent) {
  ThreadPool pool(1);
  std::binary_semaphore started(0);
  std::binary_semaphore gate(0);
  std::atomic<int> count{0};
  constexpr int kQueued = 1'000;
  AsyncScope scope;
  scope.Spawn(Blocker(&pool, &started, &gate));
  started.acquire();
  // Everything below is queued behind the blocked worker; each task hops twice more from the worker
  // while the pool drains.
  for (int i = 0; i < kQueued; ++i) scope.Spawn(HopTwiceAndCount(&pool, &count));
  EXPECT_EQ(count.load(), 0);
  std::thread stopper([&pool] { pool.Stop(); });
  gate.release();
  stopper.join();
  EXPECT_EQ(count.load(), kQueued);
  EXPECT_EQ(scope.pending(), 0u);
  pool.Stop();  // idempotent
  std::thread again([&pool] { pool.Stop(); });
  again.join();
  scope.JoinBlocking();
  EXPECT_EQ(count.load(), kQueued);
}

TEST(ThreadPoolTest, ConcurrentStopCallsAllReturnAfterJoin) {
  ThreadPool pool(2);
  std::atomic<int> count{0};
  AsyncScope scope;
  for (int i = 0; i < 2'000; ++i) scope.Spawn(HopTwiceAndCount(&pool, &count));
  std::vector<std::thread> stoppers;
  for (int i = 0; i < 3; ++i) stoppers.emplace_back([&pool] { pool.Stop(); });
  for (std::thread& thread : stoppers) thread.join();
  EXPECT_EQ(count.load(), 2'000);
  scope.JoinBlocking();
}

Task<void> RecordThread(std::thread::id* where) {
  *where = std::this_thread::get_id();
  co_return;
}

TEST(ThreadPoolTest, WorkAfterStopRunsInline) {
  ThreadPool pool(2);
  pool.Stop();
  // Execute() with a raw handle.
  std::thread::id where;
  Task<void> task = RecordThread(&where);
  pool.Execute(task.handle());
  EXPECT_TRUE(task.handle().done());
  EXPECT_EQ(where, std::this_thread::get_id());
  // Schedule() does not suspend.
  HopResult result = SyncWait(HopAndReport(&pool));
  EXPECT_EQ(result.thread, std::this_thread::get_id());
  EXPECT_FALSE(result.on_worker);
  // And from another thread.
  std::thread other([&pool] {
    HopResult r = SyncWait(HopAndReport(&pool));
    EXPECT_EQ(r.thread, std::this_thread::get_id());
  });
  other.join();
}

Task<bool> StopFromWorker(ThreadPool* pool) {
  co_await pool->Schedule();
  pool->Stop();  // cannot join itself: starts the shutdown and returns
  co_return pool->IsCurrentThreadWorker();
}

TEST(ThreadPoolTest, StopFromAWorkerStartsShutdownWithoutJoiningItself) {
  ThreadPool pool(2);
  EXPECT_TRUE(SyncWait(StopFromWorker(&pool)));
  // Closed to outside work already: this hop runs inline.
  HopResult result = SyncWait(HopAndReport(&pool));
  EXPECT_EQ(result.thread, std::this_thread::get_id());
  pool.Stop();  // joins
}

Task<void> HopComputeHop(ThreadPool* pool, std::atomic<std::int64_t>* sum, int value) {
  co_await pool->Schedule();
  std::int64_t local = 0;
  for (int i = 0; i <= value % 100; ++i) local += i;
  co_await pool->Schedule();
  sum->fetch_add(local, std::memory_order_relaxed);
}

TEST(ThreadPoolTest, DestructorDrainsAndJoinsWorkInFlight) {
  std::atomic<std::int64_t> sum{0};
  std::int64_t expected = 0;
  const int tasks = 2'000 * kStressScale;
  AsyncScope scope;  // outlives the pool, so its tasks may finish inside the pool's destructor
  auto pool = std::make_unique<ThreadPool>(2);
  for (int i = 0; i < tasks; ++i) {
    for (int j = 0; j <= i % 100; ++j) expected += j;
    scope.Spawn(HopComputeHop(pool.get(), &sum, i));
  }
  pool.reset();
  EXPECT_EQ(sum.load(), expected);
  EXPECT_EQ(scope.pending(), 0u);
}

Task<int> SquareOnPool(ThreadPool* pool, int x) {
  co_await pool->Schedule();
  if (!pool->IsCurrentThreadWorker()) co_return -1;
  co_return x * x;
}

TEST(ThreadPoolTest, WhenAllOfChildrenOnThePool) {
  ThreadPool pool(2);
  std::vector<Task<int>> children;
  constexpr int kChildren = 200;
  for (int i = 0; i < kChildren; ++i) children.push_back(SquareOnPool(&pool, i));
  std::vector<int> squares = SyncWait(WhenAll(std::move(children)));
  ASSERT_EQ(squares.size(), static_cast<std::size_t>(kChildren));
  for (int i = 0; i < kChildren; ++i) EXPECT_EQ(squares[static_cast<std::size_t>(i)], i * i);
}

Task<absl::Status> ThrowOnPool(ThreadPool* pool) {
  co_await pool->Schedule();
  throw std::runtime_error("kaput on a worker");
  co_return absl::OkStatus();
}

Task<absl::StatusOr<int>> ThrowOnPoolOr(ThreadPool* pool) {
  co_await pool->Schedule();
  throw std::runtime_error("kaput again");
  co_return 1;
}

TEST(ThreadPoolTest, ExceptionAfterHopBecomesStatus) {
  ThreadPool pool(2);
  absl::Status status = SyncWait(ThrowOnPool(&pool));
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(status.message()), HasSubstr("kaput on a worker"));
  absl::StatusOr<int> value = SyncWait(ThrowOnPoolOr(&pool));
  EXPECT_EQ(value.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(value.status().message()), HasSubstr("kaput again"));
  // The pool is still healthy afterwards.
  EXPECT_EQ(SyncWait(SquareOnPool(&pool, 3)), 9);
}

Task<int> Throws(ThreadPool* pool) {
  co_await pool->Schedule();
  throw std::runtime_error("plain task");
  co_return 0;
}

TEST(ThreadPoolTest, ExceptionInPlainTaskIsRethrownToTheAwaiter) {
  ThreadPool pool(1);
  EXPECT_THROW(SyncWait(Throws(&pool)), std::runtime_error);
}

Task<absl::Status> PingPong(ThreadPool* a, ThreadPool* b, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    co_await a->Schedule();
    if (!a->IsCurrentThreadWorker() || b->IsCurrentThreadWorker()) {
      co_return absl::InternalError("not on pool a in round " + std::to_string(i));
    }
    co_await b->Schedule();
    if (!b->IsCurrentThreadWorker() || a->IsCurrentThreadWorker()) {
      co_return absl::InternalError("not on pool b in round " + std::to_string(i));
    }
  }
  co_return absl::OkStatus();
}

Task<absl::Status> ChainAcrossPools(ThreadPool* a, ThreadPool* b) {
  co_await a->Schedule();
  absl::Status inner = co_await PingPong(a, b, 100);
  if (!inner.ok()) co_return inner;
  // The awaiter resumes wherever the child finished: on b.
  if (!b->IsCurrentThreadWorker()) co_return absl::InternalError("child did not finish on pool b");
  co_return absl::OkStatus();
}

TEST(ThreadPoolTest, TaskChainHopsBetweenTwoPools) {
  ThreadPool a(1);
  ThreadPool b(2);
  EXPECT_TRUE(SyncWait(ChainAcrossPools(&a, &b)).ok());
}

TEST(ThreadPoolTest, DefaultIsOneSharedPool) {
  ThreadPool& pool = ThreadPool::Default();
  EXPECT_EQ(&pool, &ThreadPool::Default());
  EXPECT_GE(pool.num_threads(), 1);
  EXPECT_TRUE(SyncWait(HopAndReport(&pool)).on_worker);
}

TEST(ThreadPoolTest, IdleWorkersWakeForBurstsAfterSleeping) {
  // Repeated bursts separated by idle periods exercise the sleep / wake path; a lost wake-up would hang.
  ThreadPool pool(2);
  std::atomic<int> count{0};
  const int rounds = 50 * kStressScale;
  for (int round = 0; round < rounds; ++round) {
    AsyncScope scope;
    for (int i = 0; i < 3; ++i) scope.Spawn(HopTwiceAndCount(&pool, &count));
    scope.JoinBlocking();
    if (round % 10 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(count.load(), rounds * 3);
}

TEST(ThreadPoolTest, ConcurrentRoundTripsFromPlainThreads) {
  // One task at a time per thread: workers keep flipping between running, searching and sleeping, the
  // transitions where a lost wake-up would show up as a hang.
  ThreadPool pool(2);
  constexpr int kThreads = 3;
  constexpr int kRoundTrips = 300 * kStressScale;
  std::atomic<int> count{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&pool, &count] {
      for (int i = 0; i < kRoundTrips; ++i) SyncWait(HopAndCount(&pool, &count));
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(count.load(), kThreads * kRoundTrips);
}

}  // namespace
}  // namespace thread_pool_test_file
}  // namespace sluice
