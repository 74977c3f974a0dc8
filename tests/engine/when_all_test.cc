#include "sluice/engine/when_all.h"

#include <atomic>
#include <chrono>
#include <coroutine>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/engine/detail/transfer.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"

namespace sluice {
namespace when_all_test_file {
namespace {

Task<int> Value(int v) { co_return v; }
Task<void> Nothing() { co_return; }
Task<std::string> Text(std::string s) { co_return s; }

// Resumes the awaiting coroutine on a fresh thread: a stand-in for a pool hop in these tests.
struct ResumeOnNewThread {
  std::vector<std::thread>* threads;
  std::mutex* mu;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    std::lock_guard<std::mutex> lock(*mu);
    threads->emplace_back([h] { detail::Resume(h); });
  }
  void await_resume() const noexcept {}
};

struct Threads {
  std::vector<std::thread> threads;
  std::mutex mu;
  ~Threads() {
    // Threads may still be appended while joining earlier ones; join until none are left.
    for (;;) {
      std::vector<std::thread> batch;
      {
        std::lock_guard<std::mutex> lock(mu);
        batch.swap(threads);
      }
      if (batch.empty()) break;
      for (std::thread& t : batch) t.join();
    }
  }
  ResumeOnNewThread Hop() { return ResumeOnNewThread{&threads, &mu}; }
};

Task<int> SquareOnThread(Threads* threads, int v) {
  ResumeOnNewThread hop = threads->Hop();
  co_await hop;
  co_return v * v;
}

TEST(WhenAllTest, TupleOfMixedTypes) {
  auto [a, b, c] = SyncWait(WhenAll(Value(1), Nothing(), Text("x")));
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, std::monostate{});
  EXPECT_EQ(c, "x");
}

TEST(WhenAllTest, EmptyVector) { EXPECT_TRUE(SyncWait(WhenAll(std::vector<Task<int>>{})).empty()); }

TEST(WhenAllTest, VectorKeepsInputOrderAcrossThreads) {
  Threads threads;
  std::vector<Task<int>> tasks;
  for (int i = 0; i < 64; ++i) tasks.push_back(SquareOnThread(&threads, i));
  std::vector<int> results = SyncWait(WhenAll(std::move(tasks)));
  ASSERT_EQ(results.size(), 64u);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(results[i], i * i);
}

Task<absl::Status> WaitForStop(Threads* threads, std::atomic<int>* saw_stop) {
  // Polls its stop token from another thread; bounded so a bug cannot hang the test forever.
  ResumeOnNewThread hop = threads->Hop();
  co_await hop;
  std::stop_token token = co_await CurrentStopToken();
  for (int i = 0; i < 20000 && !token.stop_requested(); ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  if (!token.stop_requested()) co_return absl::DeadlineExceededError("stop never arrived");
  saw_stop->fetch_add(1);
  co_return absl::CancelledError("stopped");
}

Task<absl::Status> FailSoon() { co_return absl::InvalidArgumentError("bad input"); }

TEST(WhenAllTest, FirstErrorStopsTheOthersAndAwaitsThem) {
  Threads threads;
  std::atomic<int> saw_stop{0};
  std::vector<Task<absl::Status>> tasks;
  tasks.push_back(WaitForStop(&threads, &saw_stop));
  tasks.push_back(WaitForStop(&threads, &saw_stop));
  tasks.push_back(FailSoon());
  std::vector<absl::Status> results = SyncWait(WhenAll(std::move(tasks)));
  // WhenAll returned only after both waiters observed the stop and finished.
  EXPECT_EQ(saw_stop.load(), 2);
  EXPECT_EQ(results[0].code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(results[1].code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(results[2].code(), absl::StatusCode::kInvalidArgument);
}

TEST(WhenAllTest, StatusOrErrorAlsoStops) {
  Threads threads;
  std::atomic<int> saw_stop{0};
  auto failing = []() -> Task<absl::StatusOr<int>> { co_return absl::NotFoundError("nope"); };
  auto [waited, failed] = SyncWait(WhenAll(WaitForStop(&threads, &saw_stop), failing()));
  EXPECT_EQ(waited.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(saw_stop.load(), 1);
}

Task<int> ThrowAfterHop(Threads* threads) {
  ResumeOnNewThread hop = threads->Hop();
  co_await hop;
  throw std::runtime_error("child threw");
  co_return 0;
}

TEST(WhenAllTest, ExceptionStopsOthersThenRethrows) {
  Threads threads;
  std::atomic<int> saw_stop{0};
  auto run = [](Threads* t, std::atomic<int>* s) -> Task<int> {
    auto [status, value] = co_await WhenAll(WaitForStop(t, s), ThrowAfterHop(t));
    co_return value;
  };
  EXPECT_THROW(SyncWait(run(&threads, &saw_stop)), std::runtime_error);
  EXPECT_EQ(saw_stop.load(), 1);
}

TEST(WhenAllTest, ParentStopReachesChildren) {
  Threads threads;
  std::atomic<int> saw_stop{0};
  std::stop_source source;
  source.request_stop();
  std::vector<Task<absl::Status>> tasks;
  for (int i = 0; i < 3; ++i) tasks.push_back(WaitForStop(&threads, &saw_stop));
  std::vector<absl::Status> results = SyncWait(WhenAll(std::move(tasks)), source.get_token());
  for (const absl::Status& s : results) EXPECT_EQ(s.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(saw_stop.load(), 3);
}

TEST(WhenAllTest, NestedWhenAll) {
  auto inner = [](int base) -> Task<int> {
    auto [a, b] = co_await WhenAll(Value(base), Value(base + 1));
    co_return a + b;
  };
  auto [x, y] = SyncWait(WhenAll(inner(1), inner(10)));
  EXPECT_EQ(x, 3);
  EXPECT_EQ(y, 21);
}

TEST(WhenAllTest, ManyChildrenCompletingConcurrently) {
  Threads threads;
  std::vector<Task<int>> tasks;
  constexpr int kChildren = 200;
  for (int i = 0; i < kChildren; ++i) tasks.push_back(SquareOnThread(&threads, i % 7));
  std::vector<int> results = SyncWait(WhenAll(std::move(tasks)));
  long sum = 0;
  for (int r : results) sum += r;
  long expected = 0;
  for (int i = 0; i < kChildren; ++i) expected += (i % 7) * (i % 7);
  EXPECT_EQ(sum, expected);
}

}  // namespace
}  // namespace when_all_test_file
}  // namespace sluice
