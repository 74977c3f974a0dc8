#include "sluice/engine/async_event.h"

#include <atomic>
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
namespace async_event_test_file {
namespace {

Task<absl::Status> WaitOnce(AsyncEvent* event) { co_return co_await event->Wait(); }

Task<void> WaitInto(AsyncEvent* event, std::optional<absl::Status>* out) {
  absl::Status s = co_await event->Wait();
  out->emplace(std::move(s));
}

TEST(AsyncEventTest, SetResetIsSet) {
  AsyncEvent event;
  EXPECT_FALSE(event.is_set());
  event.Set();
  event.Set();
  EXPECT_TRUE(event.is_set());
  event.Reset();
  EXPECT_FALSE(event.is_set());
  AsyncEvent initially(true);
  EXPECT_TRUE(initially.is_set());
}

TEST(AsyncEventTest, WaitOnSetEventIsImmediate) {
  AsyncEvent event(true);
  EXPECT_TRUE(SyncWait(WaitOnce(&event)).ok());
  EXPECT_TRUE(event.WaitBlocking().ok());
  EXPECT_TRUE(event.is_set());  // manual reset: waiting does not clear it
}

TEST(AsyncEventTest, SetWakesAllWaiters) {
  AsyncEvent event;
  std::vector<std::optional<absl::Status>> results(5);
  AsyncScope scope;
  for (auto& r : results) scope.Spawn(WaitInto(&event, &r));
  for (auto& r : results) EXPECT_FALSE(r.has_value());
  event.Set();
  for (auto& r : results) {
    ASSERT_TRUE(r.has_value());
    EXPECT_TRUE(r->ok()) << *r;
  }
  scope.JoinBlocking();
}

TEST(AsyncEventTest, ResetMakesLaterWaitersWait) {
  AsyncEvent event(true);
  event.Reset();
  std::optional<absl::Status> r;
  AsyncScope scope;
  scope.Spawn(WaitInto(&event, &r));
  EXPECT_FALSE(r.has_value());
  event.Set();
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->ok());
  scope.JoinBlocking();
}

TEST(AsyncEventTest, CancelledWaitReturnsCancelledAndOthersStillWake) {
  AsyncEvent event;
  std::optional<absl::Status> cancelled, other;
  AsyncScope scope_cancel, scope_other;
  scope_cancel.Spawn(WaitInto(&event, &cancelled));
  scope_other.Spawn(WaitInto(&event, &other));
  scope_cancel.RequestStop();
  ASSERT_TRUE(cancelled.has_value());
  EXPECT_EQ(cancelled->code(), absl::StatusCode::kCancelled) << *cancelled;
  EXPECT_FALSE(other.has_value());
  event.Set();
  ASSERT_TRUE(other.has_value());
  EXPECT_TRUE(other->ok());
}

TEST(AsyncEventTest, StopAlreadyRequestedCancelsEvenIfSet) {
  AsyncEvent event(true);
  std::stop_source stop;
  stop.request_stop();
  EXPECT_EQ(SyncWait(WaitOnce(&event), stop.get_token()).code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(event.WaitBlocking(stop.get_token()).code(), absl::StatusCode::kCancelled);
}

TEST(AsyncEventTest, ThreadsAndCoroutinesWokenBySetFromAnotherThread) {
  constexpr int kWaiters = 6;
  AsyncEvent event;
  std::atomic<int> woken{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&event, &woken, i] {
      absl::Status s = i % 2 == 0 ? SyncWait(WaitOnce(&event)) : event.WaitBlocking();
      EXPECT_TRUE(s.ok()) << s;
      ++woken;
    });
  }
  event.Set();
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(woken.load(), kWaiters);
}

// Stop and Set race for the same waiters: each wait ends exactly once, either OK or Cancelled.
TEST(AsyncEventTest, CancelRacingWithSet) {
  constexpr int kIterations = 1000 / testing_util::kSanitizerSlowdown;
  int ok = 0, cancelled = 0;
  for (int i = 0; i < kIterations; ++i) {
    AsyncEvent event;
    std::optional<absl::Status> r;
    AsyncScope scope;
    scope.Spawn(WaitInto(&event, &r));
    std::thread setter([&event] { event.Set(); });
    std::thread stopper([&scope] { scope.RequestStop(); });
    setter.join();
    stopper.join();
    scope.JoinBlocking();
    ASSERT_TRUE(r.has_value());
    if (r->ok()) {
      ++ok;
    } else {
      ASSERT_EQ(r->code(), absl::StatusCode::kCancelled);
      ++cancelled;
    }
  }
  EXPECT_EQ(ok + cancelled, kIterations);
}

}  // namespace
}  // namespace async_event_test_file
}  // namespace sluice
