#include "sluice/engine/async_scope.h"

#include <atomic>
#include <chrono>
#include <coroutine>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "sluice/engine/detail/transfer.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"

namespace sluice {
namespace async_scope_test_file {
namespace {

// A tiny stand-in for a pool: one thread resuming parked coroutines in FIFO order.
class ParkingLot {
 public:
  ParkingLot() : thread_([this] { Loop(); }) {}
  ~ParkingLot() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  struct Awaiter {
    ParkingLot* lot;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) {
      // Once h is published the loop may resume and free the frame holding this awaiter.
      ParkingLot* parking = lot;
      {
        std::lock_guard<std::mutex> lock(parking->mu_);
        parking->parked_.push_back(h);
      }
      parking->cv_.notify_all();
    }
    void await_resume() const noexcept {}
  };
  Awaiter Park() { return Awaiter{this}; }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return done_ || !parked_.empty(); });
      if (parked_.empty()) return;
      std::coroutine_handle<> h = parked_.front();
      parked_.erase(parked_.begin());
      lock.unlock();
      detail::Resume(h);
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::coroutine_handle<>> parked_;
  bool done_ = false;
  std::thread thread_;
};

Task<void> Increment(ParkingLot* lot, std::atomic<int>* counter) {
  ParkingLot::Awaiter park = lot->Park();
  co_await park;
  counter->fetch_add(1);
}

TEST(AsyncScopeTest, JoinWaitsForEverySpawnedTask) {
  ParkingLot lot;
  std::atomic<int> counter{0};
  {
    AsyncScope scope;
    for (int i = 0; i < 1000; ++i) scope.Spawn(Increment(&lot, &counter));
    scope.JoinBlocking();
    EXPECT_EQ(counter.load(), 1000);
    EXPECT_EQ(scope.pending(), 0u);
  }
}

TEST(AsyncScopeTest, CoroutineJoin) {
  ParkingLot lot;
  std::atomic<int> counter{0};
  auto run = [](ParkingLot* l, std::atomic<int>* c) -> Task<int> {
    AsyncScope scope;
    for (int i = 0; i < 100; ++i) scope.Spawn(Increment(l, c));
    co_await scope.Join();
    co_return c->load();
  };
  EXPECT_EQ(SyncWait(run(&lot, &counter)), 100);
}

TEST(AsyncScopeTest, JoinWithNothingSpawnedIsImmediate) {
  auto run = []() -> Task<bool> {
    AsyncScope scope;
    co_await scope.Join();
    co_return true;
  };
  EXPECT_TRUE(SyncWait(run()));
}

Task<absl::Status> WaitUntilStopped(ParkingLot* lot, std::atomic<int>* stopped) {
  std::stop_token token = co_await CurrentStopToken();
  for (int i = 0; i < 100000 && !token.stop_requested(); ++i) {
    ParkingLot::Awaiter park = lot->Park();
    co_await park;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  if (!token.stop_requested()) co_return absl::DeadlineExceededError("never stopped");
  stopped->fetch_add(1);
  co_return absl::CancelledError("stopped");
}

TEST(AsyncScopeTest, DestructorStopsAndJoins) {
  ParkingLot lot;
  std::atomic<int> stopped{0};
  {
    AsyncScope scope;
    for (int i = 0; i < 8; ++i) scope.Spawn(WaitUntilStopped(&lot, &stopped));
  }
  EXPECT_EQ(stopped.load(), 8);
}

TEST(AsyncScopeTest, RecordsFirstErrorAndExceptions) {
  AsyncScope scope;
  auto ok = []() -> Task<absl::Status> { co_return absl::OkStatus(); };
  auto bad = []() -> Task<absl::Status> { co_return absl::DataLossError("first"); };
  auto worse = []() -> Task<void> {
    throw std::runtime_error("second");
    co_return;
  };
  scope.Spawn(ok());
  scope.Spawn(bad());
  scope.Spawn(worse());
  scope.JoinBlocking();
  EXPECT_EQ(scope.first_error().code(), absl::StatusCode::kDataLoss);
}

TEST(AsyncScopeTest, ExceptionInVoidTaskBecomesError) {
  AsyncScope scope;
  auto worse = []() -> Task<void> {
    throw std::runtime_error("thrown in spawned task");
    co_return;
  };
  scope.Spawn(worse());
  scope.JoinBlocking();
  EXPECT_EQ(scope.first_error().code(), absl::StatusCode::kInternal);
  EXPECT_NE(scope.first_error().message().find("thrown in spawned task"), std::string::npos);
}

TEST(AsyncScopeTest, SpawnFromManyThreads) {
  ParkingLot lot;
  std::atomic<int> counter{0};
  AsyncScope scope;
  std::vector<std::thread> spawners;
  for (int t = 0; t < 4; ++t) {
    spawners.emplace_back([&] {
      for (int i = 0; i < 250; ++i) scope.Spawn(Increment(&lot, &counter));
    });
  }
  for (std::thread& t : spawners) t.join();
  scope.JoinBlocking();
  EXPECT_EQ(counter.load(), 1000);
}

}  // namespace
}  // namespace async_scope_test_file
}  // namespace sluice
