#include "sluice/engine/run_loop.h"

#include <stdexcept>
#include <stop_token>
#include <thread>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "sluice/engine/task.h"
#include "sluice/engine/thread_pool.h"

namespace sluice {
namespace run_loop_test_file {
namespace {

Task<int> Answer() { co_return 42; }

TEST(RunLoopTest, RunsATaskToItsResult) {
  RunLoop loop;
  EXPECT_EQ(loop.Run(Answer()), 42);
  EXPECT_EQ(loop.Run(Answer()), 42);  // reusable
}

// Hops to the pool, then comes home through the loop; records where each part ran.
Task<void> HopAway(ThreadPool* pool, RunLoop* loop, std::thread::id* on_pool, std::thread::id* back_home) {
  co_await pool->Schedule();
  *on_pool = std::this_thread::get_id();
  co_await loop->Schedule();
  *back_home = std::this_thread::get_id();
}

TEST(RunLoopTest, ScheduleBringsACoroutineBackToTheLoopThread) {
  ThreadPool pool(2);
  RunLoop loop;
  for (int i = 0; i < 50; ++i) {
    std::thread::id on_pool, back_home;
    loop.Run(HopAway(&pool, &loop, &on_pool, &back_home));
    EXPECT_NE(on_pool, std::this_thread::get_id());
    EXPECT_EQ(back_home, std::this_thread::get_id());
  }
}

Task<int> ThrowingTask() {
  throw std::runtime_error("boom");
  co_return 0;
}

TEST(RunLoopTest, RethrowsWhatTheTaskLetEscape) {
  RunLoop loop;
  EXPECT_THROW(loop.Run(ThrowingTask()), std::runtime_error);
}

Task<bool> StopSeen() {
  std::stop_token stop = co_await CurrentStopToken();
  co_return stop.stop_requested();
}

TEST(RunLoopTest, PassesTheStopToken) {
  RunLoop loop;
  std::stop_source source;
  EXPECT_FALSE(loop.Run(StopSeen(), source.get_token()));
  source.request_stop();
  EXPECT_TRUE(loop.Run(StopSeen(), source.get_token()));
}

Task<absl::Status> ManyHops(ThreadPool* pool, RunLoop* loop, int hops) {
  for (int i = 0; i < hops; ++i) {
    co_await pool->Schedule();
    co_await loop->Schedule();
  }
  co_return absl::OkStatus();
}

TEST(RunLoopTest, SeveralLoopsShareAPool) {
  ThreadPool pool(2);
  std::vector<std::thread> threads;
  std::vector<absl::Status> results(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool, &results, t] {
      RunLoop loop;
      results[static_cast<size_t>(t)] = loop.Run(ManyHops(&pool, &loop, 200));
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : results) EXPECT_TRUE(s.ok()) << s;
}

}  // namespace
}  // namespace run_loop_test_file
}  // namespace sluice
