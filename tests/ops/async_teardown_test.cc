// Async streams (parallel Map and Interleave, parallel Batch, Prefetch) destroyed on a pool worker while
// their tasks run: the worker must not block (sluice/ops/detail/async_stream_owner.h), and the iterator
// still waits for every task before it is gone.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"

namespace sluice {
namespace async_teardown_test_file {
namespace {

// A deadlock cannot be joined, so it fails the test by ending the process instead of hanging the suite.
// The bound is generous (sanitizers, a busy machine): it detects a hang, it does not time anything.
void RunOrDieOfDeadlock(const std::function<void()>& body) {
  std::packaged_task<void()> task(body);
  std::future<void> done = task.get_future();
  std::thread runner(std::move(task));
  if (done.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
    ADD_FAILURE() << "deadlock: the pipeline did not finish within 120 s";
    std::_Exit(1);
  }
  runner.join();
  done.get();
}

int64_t Count(Iterator<int64_t> it) {
  int64_t n = 0;
  for (absl::StatusOr<int64_t> x : it) {
    EXPECT_TRUE(x.ok()) << x.status();
    ++n;
  }
  return n;
}

// Each epoch's parallel Map ends on the Prefetch producer's thread, a pool worker, where Repeat destroys it;
// with one worker, a blocking join there waited for calls that needed that very worker.
TEST(AsyncTeardownTest, RepeatEndsParallelMapEpochsOnTheOnlyPoolWorker) {
  Options options;
  options.thread_pool_size = 1;
  auto ds = Dataset<int64_t>(Range(200)).Map([](int64_t x) { return x + 1; }, 4).Repeat(5).Prefetch(2);
  RunOrDieOfDeadlock([&] { EXPECT_EQ(Count(ds.MakeIterator(options)), 1000); });
}

// The same through Interleave: finished inner pipelines (a Prefetch over a parallel Map) go on a worker.
TEST(AsyncTeardownTest, InterleaveDropsInnerAsyncPipelinesOnPoolWorkers) {
  Options options;
  options.thread_pool_size = 1;
  auto ds = Dataset<int64_t>(Range(8))
                .Interleave(
                    [](int64_t) {
                      return Dataset<int64_t>(Range(50)).Map([](int64_t x) { return x; }, 3).Prefetch(1);
                    },
                    /*cycle_length=*/2, /*block_length=*/3)
                .Prefetch(2);
  RunOrDieOfDeadlock([&] { EXPECT_EQ(Count(ds.MakeIterator(options)), 400); });
}

// Two pipelines sharing a 2-thread pool, each ending epochs on a worker: CI's deadlock under ASan.
TEST(AsyncTeardownTest, TwoPipelinesOnATwoThreadPool) {
  ThreadPool pool(2);
  auto ds = Dataset<int64_t>(Range(100)).Map([](int64_t x) { return x; }, 2).Repeat(4).Prefetch(2);
  RunOrDieOfDeadlock([&] {
    std::vector<int64_t> counts(2);
    std::vector<std::thread> consumers;
    for (int i = 0; i < 2; ++i) {
      consumers.emplace_back([&, i] {
        auto context = std::make_shared<IteratorContext>();
        context->pool = &pool;
        Iterator<int64_t> it(ds.node()->MakeStream(context), context);
        counts[i] = Count(std::move(it));
      });
    }
    for (std::thread& t : consumers) t.join();
    EXPECT_EQ(counts, (std::vector<int64_t>{400, 400}));
  });
}

// A tuned Map's consumer runs calls itself (caller runs) and so polls the input, a Repeat that destroys
// each finished parallel Interleave on the consumer's own thread, blocking until that Interleave's workers
// have left the pool. The Map's workers must not block a pool thread on the input meanwhile: with both
// pool thread waiting for the consumer, the Interleave's workers could never run.
TEST(AsyncTeardownTest, CallerRunsMapOverFinishedParallelInterleaves) {
  Options options;
  options.thread_pool_size = 1;
  auto ds = Dataset<int64_t>(Range(4))
                .Interleave([](int64_t) { return Dataset<int64_t>(Range(25)); },
                            /*cycle_length=*/2, /*block_length=*/1, /*num_parallel_calls=*/2)
                .Repeat(40)
                .Map([](int64_t x) { return x; }, kAutotune);
  RunOrDieOfDeadlock([&] { EXPECT_EQ(Count(ds.MakeIterator(options)), 4000); });
}

// A teardown handed off mid-epoch is still waited for: when the iterator is gone, no call of the user's
// function runs and the function (with what it captured) has been destroyed.
TEST(AsyncTeardownTest, TheIteratorWaitsForHandedOffTeardowns) {
  Options options;
  options.thread_pool_size = 2;
  auto calls = std::make_shared<std::atomic<int64_t>>(0);
  auto running = std::make_shared<std::atomic<int64_t>>(0);
  std::weak_ptr<std::atomic<int64_t>> captured = calls;
  {
    auto slow = [calls, running](int64_t x) {
      running->fetch_add(1);
      calls->fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      running->fetch_sub(1);
      return x;
    };
    // Take ends each inner pipeline early, mid-flight, on a pool worker (Interleave under Prefetch).
    auto ds =
        Dataset<int64_t>(Range(6))
            .Interleave([slow](int64_t) { return Dataset<int64_t>(Range(1000)).Map(slow, 4).Take(7); }, 2, 1)
            .Prefetch(1);
    RunOrDieOfDeadlock([&] {
      Iterator<int64_t> it = ds.MakeIterator(options);
      EXPECT_EQ(Count(std::move(it)), 42);
      EXPECT_EQ(running->load(), 0);
    });
  }
  calls.reset();
  EXPECT_TRUE(captured.expired());
}

}  // namespace
}  // namespace async_teardown_test_file
}  // namespace sluice
