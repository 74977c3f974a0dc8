#include "sluice/ops/parallel_map.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "tests/ops/test_helpers.h"

namespace sluice {
namespace parallel_map_test_file {
namespace {

using test_ops::Collect;
using test_ops::Values;

#if defined(SLUICE_SANITIZED_BUILD)
constexpr int64_t kScale = 1;
#else
constexpr int64_t kScale = 4;
#endif

// A CPU loop whose length depends on x, so completion order differs from input order.
int64_t Spin(int64_t x) {
  uint64_t h = static_cast<uint64_t>(x) * 0x9E3779B97F4A7C15ull;
  int iterations = static_cast<int>((h >> 40) % 2000);
  volatile uint64_t acc = h;
  for (int i = 0; i < iterations; ++i) acc = acc * 6364136223846793005ull + 1442695040888963407ull;
  return x * 3 + 1;
}

std::vector<int64_t> Expected(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(i * 3 + 1);
  return v;
}

TEST(ParallelMapTest, DeterministicKeepsInputOrder) {
  const int64_t n = 500 * kScale;
  for (int64_t calls : {2, 3, 4, 8}) {
    for (int threads : {1, 2, 4}) {
      Options options;
      options.thread_pool_size = threads;
      EXPECT_EQ(Values(Range(n).Map(Spin, calls, true), options), Expected(n)) << calls << " " << threads;
    }
  }
}

TEST(ParallelMapTest, OptionsDeterministicIsTheDefault) {
  const int64_t n = 300 * kScale;
  Options options;
  options.thread_pool_size = 3;
  EXPECT_EQ(Values(Range(n).Map(Spin, 4), options), Expected(n));
  options.deterministic = false;
  std::vector<int64_t> got = Values(Range(n).Map(Spin, 4), options);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, Expected(n));
}

TEST(ParallelMapTest, NondeterministicIsAPermutation) {
  const int64_t n = 500 * kScale;
  for (int64_t calls : {2, 4, 7}) {
    Options options;
    options.thread_pool_size = 2;
    std::vector<int64_t> got = Values(Range(n).Map(Spin, calls, false), options);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, Expected(n)) << calls;
  }
}

// With deterministic=false a slow element does not hold back the ones after it.
TEST(ParallelMapTest, NondeterministicReturnsInCompletionOrder) {
  // Element 0 finishes only after five others have (bounded wait); whoever computes it (a worker, or the
  // consumer itself when it runs an element), at least three of those are stored before it.
  std::atomic<int64_t> others{0};
  auto f = [&others](int64_t x) {
    if (x == 0) {
      for (int i = 0; i < 2000 && others.load() < 5; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } else {
      others.fetch_add(1);
    }
    return x;
  };
  Options options;
  options.thread_pool_size = 2;
  Iterator<int64_t> it = Range(10).Map(f, 2, false).MakeIterator(options);
  absl::StatusOr<std::optional<int64_t>> first = it.NextBlocking();
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_NE(**first, 0);  // element 0 completed after others
  std::vector<int64_t> rest = {**first};
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<std::optional<int64_t>> x = it.NextBlocking();
    ASSERT_TRUE(x.ok());
    if (!x->has_value()) break;
    rest.push_back(**x);
  }
  std::sort(rest.begin(), rest.end());
  EXPECT_EQ(rest, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(ParallelMapTest, FailingFunctionFailsThatElementOnly) {
  auto f = [](int64_t x) -> absl::StatusOr<int64_t> {
    if (x == 5) return absl::DataLossError("bad five");
    if (x == 7) throw std::runtime_error("seven threw");
    return x * 10;
  };
  for (bool deterministic : {true, false}) {
    std::vector<absl::StatusOr<int64_t>> got = Collect(Range(10).Map(f, 3, deterministic));
    ASSERT_EQ(got.size(), 10u);
    int errors = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i].ok()) continue;
      ++errors;
      if (got[i].status().code() == absl::StatusCode::kDataLoss) {
        EXPECT_THAT(std::string(got[i].status().message()), ::testing::HasSubstr("ParallelMap (element 5)"));
        EXPECT_THAT(std::string(got[i].status().message()), ::testing::HasSubstr("bad five"));
        if (deterministic) {
          EXPECT_EQ(i, 5u);
        }
      } else {
        EXPECT_THAT(std::string(got[i].status().message()), ::testing::HasSubstr("element 7"));
        EXPECT_THAT(std::string(got[i].status().message()), ::testing::HasSubstr("seven threw"));
        if (deterministic) {
          EXPECT_EQ(i, 7u);
        }
      }
    }
    EXPECT_EQ(errors, 2);
    if (deterministic) {
      EXPECT_EQ(*got[9], 90);
      EXPECT_EQ(*got[0], 0);
    }
  }
}

TEST(ParallelMapTest, InputErrorsPassThroughInPosition) {
  auto fail_on_three = [](int64_t x) -> absl::StatusOr<int64_t> {
    if (x % 3 == 0) return absl::NotFoundError("input " + std::to_string(x));
    return x;
  };
  int calls_on_errors = 0;
  auto f = [&calls_on_errors](int64_t x) {
    if (x % 3 == 0) ++calls_on_errors;  // never called for error elements
    return x + 100;
  };
  std::vector<absl::StatusOr<int64_t>> got = Collect(Range(12).Map(fail_on_three).Map(f, 4, true));
  ASSERT_EQ(got.size(), 12u);
  for (int64_t i = 0; i < 12; ++i) {
    if (i % 3 == 0) {
      ASSERT_FALSE(got[i].ok());
      EXPECT_EQ(got[i].status().code(), absl::StatusCode::kNotFound);
      EXPECT_THAT(std::string(got[i].status().message()), ::testing::HasSubstr("input " + std::to_string(i)));
    } else {
      ASSERT_TRUE(got[i].ok()) << got[i].status();
      EXPECT_EQ(*got[i], i + 100);
    }
  }
  EXPECT_EQ(calls_on_errors, 0);
}

TEST(ParallelMapTest, ArgumentsAndDefinition) {
  Dataset<int64_t> bad = Range(5).Map(Spin, -2);
  std::vector<absl::StatusOr<int64_t>> got = Collect(bad);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(got[0].status().message()), ::testing::HasSubstr("-2"));

  EXPECT_EQ(Range(5).Map(Spin, 0).node()->op_name(), "Map");
  EXPECT_EQ(Range(5).Map(Spin, 1).node()->op_name(), "Map");
  Dataset<int64_t> parallel = Range(5).Map(Spin, 4, false, "spin");
  EXPECT_EQ(parallel.node()->op_name(), "ParallelMap");
  std::vector<Param> params = parallel.node()->params();
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[0].name, "f");
  EXPECT_EQ(std::get<FunctionParam>(params[0].value).name, "spin");
  EXPECT_EQ(params[1].name, "num_parallel_calls");
  EXPECT_EQ(std::get<int64_t>(params[1].value), 4);
  EXPECT_EQ(params[2].name, "deterministic");
  EXPECT_FALSE(std::get<bool>(params[2].value));
  EXPECT_EQ(parallel.node()->inputs().size(), 1u);
  EXPECT_EQ(Range(5).Map(Spin, kAutotune).node()->params().size(), 2u);
}

TEST(ParallelMapTest, CardinalityIsTheInputs) {
  EXPECT_EQ(Range(17).Map(Spin, 4).Cardinality(), 17);
  EXPECT_EQ(Range(17).Repeat().Map(Spin, 4).Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Range(17).Filter([](int64_t x) { return x > 3; }).Map(Spin, 4).Cardinality(), kUnknownCardinality);
  EXPECT_EQ(Range(17).Map(Spin, kAutotune).Cardinality(), 17);
}

TEST(ParallelMapTest, EmptyInputEnds) {
  Iterator<int64_t> it = Range(0).Map(Spin, 4).MakeIterator();
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<std::optional<int64_t>> x = it.NextBlocking();
    ASSERT_TRUE(x.ok());
    EXPECT_FALSE(x->has_value());
  }
}

TEST(ParallelMapTest, AsyncInputsAndNesting) {
  const int64_t n = 400 * kScale;
  Options options;
  options.thread_pool_size = 2;
  // Prefetch makes the input pending at times; a parallel map over a parallel map waits on one.
  Dataset<int64_t> ds = Range(n).Prefetch(2).Map(Spin, 3).Map([](int64_t x) { return x - 1; }, 2);
  std::vector<int64_t> want;
  for (int64_t i = 0; i < n; ++i) want.push_back(i * 3);
  EXPECT_EQ(Values(ds, options), want);
  Dataset<int64_t> sloppy = Range(n).Prefetch(1).Map(Spin, 3, false).Map([](int64_t x) { return x - 1; }, 2, false);
  std::vector<int64_t> got = Values(sloppy, options);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
}

TEST(ParallelMapTest, MoveOnlyAndStringElements) {
  auto f = [](int64_t x) { return std::make_unique<std::string>(std::to_string(x)); };
  Iterator<std::unique_ptr<std::string>> it = Range(50).Map(f, 4).MakeIterator();
  for (int64_t i = 0; i < 50; ++i) {
    absl::StatusOr<std::optional<std::unique_ptr<std::string>>> x = it.NextBlocking();
    ASSERT_TRUE(x.ok() && x->has_value());
    EXPECT_EQ(***x, std::to_string(i));
  }
  EXPECT_FALSE(it.NextBlocking()->has_value());
}

Task<int64_t> SumFromCoroutine(Iterator<int64_t>* it) {  // `it` outlives the task (SyncWait below)
  int64_t sum = 0;
  for (int i = 0; i < 100000; ++i) {
    absl::StatusOr<std::optional<int64_t>> x = co_await it->Next();
    if (!x.ok() || !x->has_value()) break;
    sum += **x;
  }
  co_return sum;
}

TEST(ParallelMapTest, AwaitableNext) {
  const int64_t n = 300 * kScale;
  Iterator<int64_t> it = Range(n).Map(Spin, 3).MakeIterator();
  int64_t want = 0;
  for (int64_t x : Expected(n)) want += x;
  EXPECT_EQ(SyncWait(SumFromCoroutine(&it)), want);
}

// The buffer is bounded: with a consumer that stops pulling, the workers stop taking input.
TEST(ParallelMapTest, BufferIsBounded) {
  std::atomic<int64_t> calls{0};
  auto f = [&calls](int64_t x) {
    calls.fetch_add(1);
    return x;
  };
  Options options;
  options.thread_pool_size = 2;
  Iterator<int64_t> it = Range(100000).Map(f, 3).MakeIterator(options);
  ASSERT_TRUE(it.NextBlocking().ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // Capacity is 4 x 3 outstanding, plus the one returned.
  EXPECT_LE(calls.load(), 13);
}

struct SlowCounter {
  std::atomic<int64_t>* started;
  std::atomic<int64_t>* finished;
  int64_t operator()(int64_t x) const {
    started->fetch_add(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    finished->fetch_add(1);
    return x;
  }
};

// Destroying the iterator with calls in flight waits for them; nothing runs afterwards.
TEST(ParallelMapTest, DestroyMidStreamWithWorkInFlight) {
  for (int round = 0; round < 6; ++round) {
    std::atomic<int64_t> started{0};
    std::atomic<int64_t> finished{0};
    {
      Options options;
      options.thread_pool_size = 2;
      options.deterministic = round % 2 == 0;
      Iterator<int64_t> it = Range(1000).Map(SlowCounter{&started, &finished}, 4).MakeIterator(options);
      for (int i = 0; i < round; ++i) ASSERT_TRUE(it.NextBlocking().ok());
    }
    EXPECT_EQ(started.load(), finished.load());
    int64_t after = started.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(started.load(), after);
  }
}

TEST(ParallelMapTest, DestroyMidStreamOverAsyncInput) {
  std::atomic<int64_t> started{0};
  std::atomic<int64_t> finished{0};
  {
    Dataset<int64_t> ds =
        Range(100000).Prefetch(2).Map(SlowCounter{&started, &finished}, 3).Map(Spin, 2, false).Prefetch(2);
    Iterator<int64_t> it = ds.MakeIterator();
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(it.NextBlocking().ok());
  }
  EXPECT_EQ(started.load(), finished.load());
}

TEST(ParallelMapTest, AutotuneRunsAndKeepsOrder) {
  const int64_t n = 500 * kScale;
  Options options;
  options.thread_pool_size = 2;
  EXPECT_EQ(Values(Range(n).Map(Spin, kAutotune), options), Expected(n));
  options.autotune = false;
  EXPECT_EQ(Values(Range(n).Map(Spin, kAutotune), options), Expected(n));
}

}  // namespace
}  // namespace parallel_map_test_file
}  // namespace sluice
