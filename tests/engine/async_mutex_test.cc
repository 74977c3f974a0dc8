#include "sluice/engine/async_mutex.h"

#include <atomic>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/engine/async_scope.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "tests/sanitized_build.h"

namespace sluice {
namespace async_mutex_test_file {
namespace {

// Takes the lock, records the order it got it in, and holds it until *release is set... by keeping the
// guard in *held (the test drops it).
Task<void> LockAndHold(AsyncMutex* mu, int id, std::vector<int>* order,
                       std::optional<absl::StatusOr<AsyncMutex::Guard>>* held) {
  absl::StatusOr<AsyncMutex::Guard> guard = co_await mu->Lock();
  if (guard.ok()) order->push_back(id);
  held->emplace(std::move(guard));
}

// Increments a plain (non-atomic) counter under the lock, n times.
Task<absl::Status> LockedIncrements(AsyncMutex* mu, int64_t* counter, int n) {
  for (int i = 0; i < n; ++i) {
    absl::StatusOr<AsyncMutex::Guard> guard = co_await mu->Lock();
    if (!guard.ok()) co_return guard.status();
    int64_t v = *counter;
    *counter = v + 1;
  }
  co_return absl::OkStatus();
}

TEST(AsyncMutexTest, LockUnlockAndTryLock) {
  AsyncMutex mu;
  EXPECT_TRUE(mu.TryLock());
  EXPECT_FALSE(mu.TryLock());
  mu.Unlock();
  {
    absl::StatusOr<AsyncMutex::Guard> guard = mu.LockBlocking();
    ASSERT_TRUE(guard.ok());
    EXPECT_TRUE(guard->owns_lock());
    EXPECT_FALSE(mu.TryLock());
  }
  EXPECT_TRUE(mu.TryLock());
  mu.Unlock();
}

TEST(AsyncMutexTest, GuardMovesAndUnlocksOnce) {
  AsyncMutex mu;
  absl::StatusOr<AsyncMutex::Guard> guard = mu.LockBlocking();
  ASSERT_TRUE(guard.ok());
  AsyncMutex::Guard moved = std::move(*guard);
  EXPECT_FALSE(guard->owns_lock());
  EXPECT_TRUE(moved.owns_lock());
  EXPECT_FALSE(mu.TryLock());
  moved.Unlock();
  EXPECT_FALSE(moved.owns_lock());
  EXPECT_TRUE(mu.TryLock());
  mu.Unlock();
}

TEST(AsyncMutexTest, WaitersGetTheLockInFifoOrder) {
  AsyncMutex mu;
  ASSERT_TRUE(mu.TryLock());
  std::vector<int> order;
  std::optional<absl::StatusOr<AsyncMutex::Guard>> g1, g2, g3;
  AsyncScope scope;
  scope.Spawn(LockAndHold(&mu, 1, &order, &g1));
  scope.Spawn(LockAndHold(&mu, 2, &order, &g2));
  scope.Spawn(LockAndHold(&mu, 3, &order, &g3));
  EXPECT_TRUE(order.empty());
  mu.Unlock();  // handed to waiter 1, never free in between
  EXPECT_EQ(order, (std::vector<int>{1}));
  EXPECT_FALSE(mu.TryLock());
  g1.reset();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  g2.reset();
  g3.reset();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(mu.TryLock());
  mu.Unlock();
  scope.JoinBlocking();
}

TEST(AsyncMutexTest, CancelledWaiterDoesNotTakeTheLock) {
  AsyncMutex mu;
  ASSERT_TRUE(mu.TryLock());
  std::vector<int> order;
  std::optional<absl::StatusOr<AsyncMutex::Guard>> cancelled, next;
  AsyncScope scope_cancel, scope_next;
  scope_cancel.Spawn(LockAndHold(&mu, 1, &order, &cancelled));
  scope_next.Spawn(LockAndHold(&mu, 2, &order, &next));
  scope_cancel.RequestStop();
  ASSERT_TRUE(cancelled.has_value());
  EXPECT_EQ(cancelled->status().code(), absl::StatusCode::kCancelled) << cancelled->status();
  mu.Unlock();
  EXPECT_EQ(order, (std::vector<int>{2}));  // skipped the cancelled waiter
  next.reset();
  EXPECT_TRUE(mu.TryLock());
  mu.Unlock();
}

TEST(AsyncMutexTest, StopAlreadyRequestedCancelsEvenIfFree) {
  AsyncMutex mu;
  std::stop_source stop;
  stop.request_stop();
  EXPECT_EQ(mu.LockBlocking(stop.get_token()).status().code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(mu.TryLock());
  mu.Unlock();
}

TEST(AsyncMutexTest, MutualExclusionUnderContention) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000 / testing_util::kSanitizerSlowdown;
  AsyncMutex mu;
  int64_t counter = 0;  // deliberately not atomic: TSan checks that the mutex orders the accesses
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&mu, &counter, t] {
      if (t % 2 == 0) {
        EXPECT_TRUE(SyncWait(LockedIncrements(&mu, &counter, kPerThread)).ok());
      } else {
        for (int i = 0; i < kPerThread; ++i) {
          absl::StatusOr<AsyncMutex::Guard> guard = mu.LockBlocking();
          ASSERT_TRUE(guard.ok());
          ++counter;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counter, int64_t{kThreads} * kPerThread);
}

// Coroutine lockers are cancelled at random while others keep locking: the counter still adds up to the
// number of successful acquisitions, and the lock is free at the end (no handoff to a dead waiter).
Task<absl::Status> CountedLocks(AsyncMutex* mu, int64_t* counter, std::atomic<int64_t>* acquired, int n) {
  for (int i = 0; i < n; ++i) {
    absl::StatusOr<AsyncMutex::Guard> guard = co_await mu->Lock();
    if (!guard.ok()) co_return guard.status();
    ++*counter;
    acquired->fetch_add(1, std::memory_order_relaxed);
  }
  co_return absl::OkStatus();
}

TEST(AsyncMutexTest, CancellationStorm) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 400 / testing_util::kSanitizerSlowdown;
  AsyncMutex mu;
  int64_t counter = 0;
  std::atomic<int64_t> acquired{0};
  std::atomic<int> cancelled{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        std::stop_source stop;
        std::thread stopper;
        if ((r + t) % 2 == 0) stopper = std::thread([&stop] { stop.request_stop(); });
        absl::Status s = SyncWait(CountedLocks(&mu, &counter, &acquired, 20), stop.get_token());
        if (stopper.joinable()) stopper.join();
        if (!s.ok()) {
          ASSERT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
          ++cancelled;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counter, acquired.load());
  EXPECT_TRUE(mu.TryLock());
  mu.Unlock();
}

}  // namespace
}  // namespace async_mutex_test_file
}  // namespace sluice
