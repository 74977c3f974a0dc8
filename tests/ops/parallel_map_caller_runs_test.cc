// Parallel Map's caller-runs path (kAutotune): a consumer that finds its next result not ready runs an
// unstarted input element itself. The workers here block until the consumer's thread has run f at least
// once, so each test forces that path (and fails after a bounded wait if the consumer never runs f).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "sluice/ops/parallel_map.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "tests/ops/test_helpers.h"

namespace sluice {
namespace parallel_map_caller_runs_test_file {
namespace {

using test_ops::Collect;

// Waits until `flag` is set, at most max_ms; then sets it, so that with a broken caller-runs path only the
// first waiter pays the timeout and the test fails on its counters quickly instead of crawling.
void AwaitFlag(std::atomic<bool>& flag, int max_ms = 2000) {
  for (int i = 0; i < max_ms && !flag.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  flag.store(true);
}

// f for the tests: on `consumer` (the test's thread, where the first WaitReady runs) it marks that the
// consumer ran f; on a worker it waits until the consumer has.
struct GatedFn {
  std::thread::id consumer;
  std::atomic<bool>* consumer_ran;
  std::atomic<int64_t>* on_consumer;
  int max_wait_ms = 2000;
  int64_t operator()(int64_t x) const {
    if (std::this_thread::get_id() == consumer) {
      on_consumer->fetch_add(1);
      consumer_ran->store(true);
    } else {
      AwaitFlag(*consumer_ran, max_wait_ms);
    }
    return x * 2;
  }
};

TEST(ParallelMapCallerRunsTest, DeterministicOrderWhenTheConsumerComputes) {
  for (int threads : {1, 2, 4}) {
    std::atomic<bool> consumer_ran{false};
    std::atomic<int64_t> on_consumer{0};
    Options options;
    options.thread_pool_size = threads;
    std::vector<absl::StatusOr<int64_t>> got = Collect(
        Range(200).Map(GatedFn{std::this_thread::get_id(), &consumer_ran, &on_consumer}, kAutotune, true),
        options);
    ASSERT_EQ(got.size(), 200u);
    for (int64_t i = 0; i < 200; ++i) {
      ASSERT_TRUE(got[i].ok()) << got[i].status();
      EXPECT_EQ(*got[i], 2 * i) << threads;
    }
    EXPECT_GE(on_consumer.load(), 1) << threads;
  }
}

TEST(ParallelMapCallerRunsTest, NondeterministicReturnsEveryElementOnce) {
  std::atomic<bool> consumer_ran{false};
  std::atomic<int64_t> on_consumer{0};
  Options options;
  options.thread_pool_size = 2;
  std::vector<absl::StatusOr<int64_t>> got = Collect(
      Range(300).Map(GatedFn{std::this_thread::get_id(), &consumer_ran, &on_consumer}, kAutotune, false),
      options);
  std::vector<int64_t> values;
  for (const absl::StatusOr<int64_t>& x : got) {
    ASSERT_TRUE(x.ok()) << x.status();
    values.push_back(*x);
  }
  std::sort(values.begin(), values.end());
  std::vector<int64_t> want;
  for (int64_t i = 0; i < 300; ++i) want.push_back(2 * i);
  EXPECT_EQ(values, want);
  EXPECT_GE(on_consumer.load(), 1);
}

// An element the consumer computes fails like any other: in its position, naming the op and its index.
TEST(ParallelMapCallerRunsTest, ErrorsOnTheConsumerNameOpAndIndex) {
  for (bool deterministic : {true, false}) {
    std::atomic<bool> consumer_ran{false};
    std::thread::id consumer = std::this_thread::get_id();
    auto f = [consumer, &consumer_ran](int64_t x) -> absl::StatusOr<int64_t> {
      if (std::this_thread::get_id() == consumer && !consumer_ran.exchange(true)) {
        return absl::DataLossError("consumer failed " + std::to_string(x));
      }
      AwaitFlag(consumer_ran);
      return x;
    };
    Options options;
    options.thread_pool_size = 2;
    std::vector<absl::StatusOr<int64_t>> got = Collect(Range(50).Map(f, kAutotune, deterministic), options);
    ASSERT_EQ(got.size(), 50u);
    int errors = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i].ok()) {
        if (deterministic) {
          EXPECT_EQ(*got[i], static_cast<int64_t>(i));
        }
        continue;
      }
      ++errors;
      std::string message(got[i].status().message());
      EXPECT_EQ(got[i].status().code(), absl::StatusCode::kDataLoss);
      // Range's values are their indices, so the failed element's value names the index it must carry.
      std::string value = message.substr(message.rfind(' ') + 1);
      EXPECT_THAT(message, ::testing::HasSubstr("ParallelMap (element " + value + ")"));
      if (deterministic) {
        EXPECT_EQ(value, std::to_string(i));
      }
    }
    EXPECT_EQ(errors, 1) << deterministic;
  }
}

Task<absl::StatusOr<std::optional<int64_t>>> NextOnce(Iterator<int64_t>* it) {  // `it` outlives the task
  co_return co_await it->Next();
}

// The consumer is inside f (caller runs) when its Next is cancelled; it finishes that call, returns,
// and destroying the iterator then waits for the workers' calls: nothing is left running or starts later.
TEST(ParallelMapCallerRunsTest, CancelAndDestroyWhileTheConsumerComputes) {
  for (bool deterministic : {true, false}) {
    std::atomic<int64_t> started{0};
    std::atomic<int64_t> finished{0};
    std::atomic<bool> consumer_in_f{false};
    std::stop_source stop;
    std::thread::id consumer = std::this_thread::get_id();
    auto f = [&, consumer](int64_t x) {
      started.fetch_add(1);
      if (std::this_thread::get_id() == consumer && !consumer_in_f.exchange(true)) {
        for (int i = 0; i < 2000 && !stop.stop_requested(); ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      } else {
        AwaitFlag(consumer_in_f);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      finished.fetch_add(1);
      return x;
    };
    {
      Options options;
      options.thread_pool_size = 2;
      Iterator<int64_t> it = Range(1000).Map(f, kAutotune, deterministic).MakeIterator(options);
      std::thread canceller([&] {
        AwaitFlag(consumer_in_f);
        stop.request_stop();
      });
      absl::StatusOr<std::optional<int64_t>> first = SyncWait(NextOnce(&it), stop.get_token());
      canceller.join();
      EXPECT_TRUE(consumer_in_f.load());
      // Either the element the consumer computed (it was the head) or the cancellation.
      if (!first.ok()) {
        EXPECT_EQ(first.status().code(), absl::StatusCode::kCancelled) << first.status();
      }
    }
    EXPECT_EQ(started.load(), finished.load());
    int64_t after = started.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(started.load(), after);
  }
}

// A number the user chose bounds the calls at once: the consumer never runs f itself (the workers' bounded
// wait for it only delays them).
TEST(ParallelMapCallerRunsTest, FixedParallelismNeverRunsOnTheConsumer) {
  for (bool deterministic : {true, false}) {
    std::atomic<bool> consumer_ran{false};
    std::atomic<int64_t> on_consumer{0};
    Options options;
    options.thread_pool_size = 2;
    GatedFn f{std::this_thread::get_id(), &consumer_ran, &on_consumer, /*max_wait_ms=*/20};
    std::vector<absl::StatusOr<int64_t>> got = Collect(Range(6).Map(f, 2, deterministic), options);
    EXPECT_EQ(got.size(), 6u);
    EXPECT_EQ(on_consumer.load(), 0) << deterministic;
  }
}

}  // namespace
}  // namespace parallel_map_caller_runs_test_file
}  // namespace sluice
