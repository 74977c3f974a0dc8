#include "sluice/ops/iterator.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>
#include <utility>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "sluice/engine/thread_pool.h"

namespace sluice {
namespace iterator_close_test_file {
namespace {

struct Slow {
  std::atomic<int64_t>* started;
  std::atomic<int64_t>* finished;
  int64_t operator()(int64_t x) const {
    started->fetch_add(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    finished->fetch_add(1);
    return x;
  }
};

struct CloseResult {
  int64_t sum = 0;
  bool ended_after_close = false;
  bool on_pool = false;
};

// Runs on the iterator's own pool (a single worker), pulls a few elements, then closes: destroying the
// iterator there would block the only worker the pipeline's workers need.
Task<CloseResult> PullThenClose(Iterator<int64_t>* it, int pulls) {  // `it` outlives the task (SyncWait)
  co_await it->context().pool->Schedule();
  CloseResult result;
  for (int i = 0; i < pulls; ++i) {
    absl::StatusOr<std::optional<int64_t>> x = co_await it->Next();
    if (x.ok() && x->has_value()) result.sum += **x;
  }
  co_await it->Close();
  result.on_pool = it->context().pool->IsCurrentThreadWorker();
  absl::StatusOr<std::optional<int64_t>> after = co_await it->Next();
  result.ended_after_close = after.ok() && !after->has_value();
  co_await it->Close();  // closing twice is a no-op
  co_return result;
}

TEST(IteratorCloseTest, CloseFromThePoolsOnlyWorker) {
  for (bool deterministic : {true, false}) {
    std::atomic<int64_t> started{0};
    std::atomic<int64_t> finished{0};
    Options options;
    options.thread_pool_size = 1;
    options.deterministic = deterministic;
    Dataset<int64_t> ds = Range(100000).Map(Slow{&started, &finished}, 4).Prefetch(2);
    Iterator<int64_t> it = ds.MakeIterator(options);
    CloseResult result = SyncWait(PullThenClose(&it, 5));
    if (deterministic) {
      EXPECT_EQ(result.sum, 0 + 1 + 2 + 3 + 4);
    }
    EXPECT_TRUE(result.ended_after_close);
    EXPECT_TRUE(result.on_pool);
    // Everything the pipeline started has finished by the time Close completed.
    EXPECT_EQ(started.load(), finished.load());
    int64_t after = started.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(started.load(), after);
  }
}

TEST(IteratorCloseTest, CloseInterleaveAndSyncPipelines) {
  std::atomic<int64_t> started{0};
  std::atomic<int64_t> finished{0};
  Options options;
  options.thread_pool_size = 1;
  auto f = [&started, &finished](int64_t x) { return Range(x, x + 100).Map(Slow{&started, &finished}); };
  Iterator<int64_t> it = Range(50).Interleave(f, 3, 1, 2, true).MakeIterator(options);
  CloseResult result = SyncWait(PullThenClose(&it, 4));
  EXPECT_EQ(result.sum, 0 + 1 + 2 + 1);
  EXPECT_TRUE(result.ended_after_close);
  EXPECT_EQ(started.load(), finished.load());

  Iterator<int64_t> sync_it = Range(10).Map([](int64_t x) { return x * 2; }).MakeIterator(options);
  CloseResult sync_result = SyncWait(PullThenClose(&sync_it, 3));
  EXPECT_EQ(sync_result.sum, 0 + 2 + 4);
  EXPECT_TRUE(sync_result.ended_after_close);
}

Task<bool> CloseNow(Iterator<int64_t>* it) {  // `it` outlives the task (SyncWait)
  co_await it->Close();
  co_return true;
}

TEST(IteratorCloseTest, CloseFromAPlainThreadThenMoveAndDestroy) {
  std::atomic<int64_t> started{0};
  std::atomic<int64_t> finished{0};
  Iterator<int64_t> it = Range(1000).Map(Slow{&started, &finished}, 3).MakeIterator();
  ASSERT_TRUE(it.NextBlocking().ok());
  EXPECT_TRUE(SyncWait(CloseNow(&it)));
  EXPECT_EQ(started.load(), finished.load());
  absl::StatusOr<std::optional<int64_t>> x = it.NextBlocking();
  ASSERT_TRUE(x.ok());
  EXPECT_FALSE(x->has_value());
  int range_for_elements = 0;
  for (absl::StatusOr<int64_t> y : it) {
    (void)y;
    ++range_for_elements;
  }
  EXPECT_EQ(range_for_elements, 0);
  Iterator<int64_t> moved = std::move(it);
  EXPECT_FALSE(moved.NextBlocking()->has_value());
  moved = Range(3).MakeIterator();  // assigning over a closed iterator joins its closer
  EXPECT_EQ(**moved.NextBlocking(), 0);
}

}  // namespace
}  // namespace iterator_close_test_file
}  // namespace sluice
