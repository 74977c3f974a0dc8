#include "sluice/engine/async_semaphore.h"

#include <atomic>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "sluice/engine/async_scope.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "tests/sanitized_build.h"

namespace sluice {
namespace async_semaphore_test_file {
namespace {

Task<void> AcquireInto(AsyncSemaphore* sem, int id, std::vector<int>* order, std::optional<absl::Status>* out) {
  absl::Status s = co_await sem->Acquire();
  if (s.ok()) order->push_back(id);
  out->emplace(std::move(s));
}

TEST(AsyncSemaphoreTest, CountsTryAcquireAndRelease) {
  AsyncSemaphore sem(2);
  EXPECT_EQ(sem.available(), 2);
  EXPECT_TRUE(sem.TryAcquire());
  EXPECT_TRUE(sem.TryAcquire());
  EXPECT_FALSE(sem.TryAcquire());
  EXPECT_EQ(sem.available(), 0);
  sem.Release(3);
  EXPECT_EQ(sem.available(), 3);
  sem.Release(0);
  sem.Release(-4);  // ignored
  EXPECT_EQ(sem.available(), 3);
  EXPECT_TRUE(sem.AcquireBlocking().ok());
  EXPECT_EQ(sem.available(), 2);
  AsyncSemaphore negative(-1);
  EXPECT_EQ(negative.available(), 0);
}

TEST(AsyncSemaphoreTest, ReleaseWakesWaitersInFifoOrder) {
  AsyncSemaphore sem(0);
  std::vector<int> order;
  std::optional<absl::Status> a, b, c;
  AsyncScope scope;
  scope.Spawn(AcquireInto(&sem, 1, &order, &a));
  scope.Spawn(AcquireInto(&sem, 2, &order, &b));
  scope.Spawn(AcquireInto(&sem, 3, &order, &c));
  EXPECT_TRUE(order.empty());
  EXPECT_FALSE(sem.TryAcquire());
  sem.Release(2);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_EQ(sem.available(), 0);
  sem.Release(2);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(sem.available(), 1);
  scope.JoinBlocking();
}

TEST(AsyncSemaphoreTest, TryAcquireDoesNotOvertakeWaiters) {
  AsyncSemaphore sem(0);
  std::vector<int> order;
  std::optional<absl::Status> a;
  AsyncScope scope;
  scope.Spawn(AcquireInto(&sem, 1, &order, &a));
  // No units while someone waits: Release hands the unit to the waiter, not to a later TryAcquire.
  sem.Release();
  EXPECT_FALSE(sem.TryAcquire());
  EXPECT_EQ(order, (std::vector<int>{1}));
  scope.JoinBlocking();
}

TEST(AsyncSemaphoreTest, CancelledAcquireTakesNoUnit) {
  AsyncSemaphore sem(0);
  std::vector<int> order;
  std::optional<absl::Status> cancelled, next;
  AsyncScope scope_cancel, scope_next;
  scope_cancel.Spawn(AcquireInto(&sem, 1, &order, &cancelled));
  scope_next.Spawn(AcquireInto(&sem, 2, &order, &next));
  scope_cancel.RequestStop();
  ASSERT_TRUE(cancelled.has_value());
  EXPECT_EQ(cancelled->code(), absl::StatusCode::kCancelled) << *cancelled;
  sem.Release();
  EXPECT_EQ(order, (std::vector<int>{2}));
  EXPECT_EQ(sem.available(), 0);
  std::stop_source stop;
  stop.request_stop();
  sem.Release();
  EXPECT_EQ(sem.AcquireBlocking(stop.get_token()).code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(sem.available(), 1);
}

Task<absl::Status> BoundedWork(AsyncSemaphore* sem, std::atomic<int>* inside, std::atomic<int>* max_inside,
                               int n) {
  for (int i = 0; i < n; ++i) {
    absl::Status s = co_await sem->Acquire();
    if (!s.ok()) co_return s;
    int now = inside->fetch_add(1) + 1;
    int seen = max_inside->load();
    while (now > seen && !max_inside->compare_exchange_weak(seen, now)) {
    }
    inside->fetch_sub(1);
    sem->Release();
  }
  co_return absl::OkStatus();
}

TEST(AsyncSemaphoreTest, BoundsConcurrencyAcrossThreads) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000 / testing_util::kSanitizerSlowdown;
  AsyncSemaphore sem(2);
  std::atomic<int> inside{0}, max_inside{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] { EXPECT_TRUE(SyncWait(BoundedWork(&sem, &inside, &max_inside, kPerThread)).ok()); });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(max_inside.load(), 2);
  EXPECT_EQ(sem.available(), 2);  // every unit came back
}

TEST(AsyncSemaphoreTest, CancellationStormKeepsTheCount) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 400 / testing_util::kSanitizerSlowdown;
  AsyncSemaphore sem(1);
  std::atomic<int> inside{0}, max_inside{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        std::stop_source stop;
        std::thread stopper;
        if ((r + t) % 2 == 0) stopper = std::thread([&stop] { stop.request_stop(); });
        absl::Status s = SyncWait(BoundedWork(&sem, &inside, &max_inside, 10), stop.get_token());
        if (stopper.joinable()) stopper.join();
        ASSERT_TRUE(s.ok() || s.code() == absl::StatusCode::kCancelled) << s;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(max_inside.load(), 1);
  EXPECT_EQ(sem.available(), 1);  // no unit leaked to, or taken by, a cancelled waiter
}

// Release and stop race for one waiter: either it took the unit (none left) or it was cancelled (unit
// still there).
TEST(AsyncSemaphoreTest, CancelRacingWithRelease) {
  constexpr int kIterations = 1000 / testing_util::kSanitizerSlowdown;
  for (int i = 0; i < kIterations; ++i) {
    AsyncSemaphore sem(0);
    std::vector<int> order;
    std::optional<absl::Status> r;
    AsyncScope scope;
    scope.Spawn(AcquireInto(&sem, 1, &order, &r));
    std::thread releaser([&sem] { sem.Release(); });
    std::thread stopper([&scope] { scope.RequestStop(); });
    releaser.join();
    stopper.join();
    scope.JoinBlocking();
    ASSERT_TRUE(r.has_value());
    if (r->ok()) {
      EXPECT_EQ(sem.available(), 0);
    } else {
      ASSERT_EQ(r->code(), absl::StatusCode::kCancelled);
      EXPECT_EQ(sem.available(), 1);
    }
  }
}

}  // namespace
}  // namespace async_semaphore_test_file
}  // namespace sluice
