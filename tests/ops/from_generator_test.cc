#include "sluice/ops/from_generator.h"

#include <atomic>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/engine/async_generator.h"
#include "sluice/ops/dataset.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/thread_pool.h"
#include "tests/ops/test_helpers.h"

namespace sluice {
namespace from_generator_test_file {
namespace {

using test_ops::Collect;
using test_ops::Values;

// A named functor factory: each call returns a fresh counter from 0 to n.
struct CountTo {
  int n;
  std::atomic<int>* calls;
  auto operator()() const {
    calls->fetch_add(1);
    return [i = 0, n = n]() mutable -> std::optional<int> {
      if (i >= n) return std::nullopt;
      return i++;
    };
  }
};

TEST(FromGeneratorTest, CallableRestartsEveryIteration) {
  std::atomic<int> calls{0};
  auto ds = FromGenerator(CountTo{4, &calls}, "count_to_4");
  EXPECT_EQ(Values(ds), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(Values(ds), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
  EXPECT_EQ(Values(ds.Repeat(2)), (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_NE(ds.DebugString().find("FromGenerator(generator=\"count_to_4\")"), std::string::npos) << ds.DebugString();
  EXPECT_TRUE(Values(FromGenerator(CountTo{0, &calls})).empty());
}

TEST(FromGeneratorTest, StatusErrorsAreElementsAndTheStreamGoesOn) {
  auto ds = FromGenerator([] {
    return [i = 0]() mutable -> absl::StatusOr<std::optional<std::string>> {
      ++i;
      if (i == 2) return absl::DataLossError("bad record");
      if (i > 3) return std::optional<std::string>();
      return std::optional<std::string>(std::to_string(i));
    };
  });
  auto got = Collect(ds);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(*got[0], "1");
  EXPECT_EQ(got[1].status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(got[1].status().message().find("FromGenerator (element 1)"), std::string::npos) << got[1].status();
  EXPECT_EQ(*got[2], "3");
}

TEST(FromGeneratorTest, ExceptionsEndTheStreamWithAnError) {
  auto ds = FromGenerator([] {
    return [i = 0]() mutable -> std::optional<int> {
      if (i == 2) throw std::runtime_error("generator blew up");
      return i++;
    };
  });
  auto got = Collect(ds);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(*got[1], 1);
  EXPECT_EQ(got[2].status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(got[2].status().message().find("FromGenerator (element 2)"), std::string::npos) << got[2].status();
  EXPECT_NE(got[2].status().message().find("generator blew up"), std::string::npos);

  auto factory_throws = FromGenerator([]() -> std::function<std::optional<int>()> {
    throw std::runtime_error("no source");
  });
  auto bad = Collect(factory_throws);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(bad[0].status().message().find("no source"), std::string::npos);
}

AsyncGenerator<int64_t> Squares(int64_t n) {
  for (int64_t i = 0; i < n; ++i) co_yield i * i;
}

AsyncGenerator<int64_t> SquaresOnPool(int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    co_await ThreadPool::Default().Schedule();  // yields from a pool thread
    co_yield i * i;
  }
}

struct SquaresFactory {
  int64_t n;
  bool on_pool;
  AsyncGenerator<int64_t> operator()() const { return on_pool ? SquaresOnPool(n) : Squares(n); }
};

TEST(FromGeneratorTest, CoroutineSource) {
  auto ds = FromGenerator(SquaresFactory{5, false});
  EXPECT_EQ(Values(ds), (std::vector<int64_t>{0, 1, 4, 9, 16}));
  EXPECT_EQ(Values(ds), (std::vector<int64_t>{0, 1, 4, 9, 16}));
  auto hopping = FromGenerator(SquaresFactory{100, true}).Map([](int64_t x) { return x + 1; });
  std::vector<int64_t> got = Values(hopping);
  ASSERT_EQ(got.size(), 100u);
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(got[i], i * i + 1);
}

AsyncGenerator<absl::StatusOr<std::string>> WithErrors() {
  co_yield std::string("a");
  co_yield absl::StatusOr<std::string>(absl::NotFoundError("missing shard"));
  co_yield std::string("b");
  throw std::runtime_error("coroutine failed");
}

AsyncGenerator<int> ThrowsAfterOne() {
  co_yield 1;
  throw std::runtime_error("plain coroutine failed");
}

TEST(FromGeneratorTest, CoroutineErrorsAndExceptions) {
  auto got = Collect(FromGenerator(&WithErrors));
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(*got[0], "a");
  EXPECT_EQ(got[1].status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(got[1].status().message().find("FromGenerator (element 1)"), std::string::npos) << got[1].status();
  EXPECT_EQ(*got[2], "b");
  EXPECT_EQ(got[3].status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(got[3].status().message().find("coroutine failed"), std::string::npos) << got[3].status();

  auto plain = Collect(FromGenerator(&ThrowsAfterOne));
  ASSERT_EQ(plain.size(), 2u);
  EXPECT_EQ(*plain[0], 1);
  EXPECT_EQ(plain[1].status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(plain[1].status().message().find("plain coroutine failed"), std::string::npos);
}

Task<int64_t> SumFirst(Dataset<int64_t> ds, int n) {
  Iterator<int64_t> it = ds.MakeIterator();
  int64_t sum = 0;
  for (int i = 0; i < n; ++i) {
    absl::StatusOr<std::optional<int64_t>> next = co_await it.Next();
    if (!next.ok() || !next->has_value()) break;
    sum += **next;
  }
  co_return sum;
}

TEST(FromGeneratorTest, DestroyedMidStream) {
  // Endless sources abandoned part-way, synchronously, from a coroutine, and behind a prefetch.
  auto endless = FromGenerator([] {
    return [i = int64_t{0}]() mutable -> std::optional<int64_t> { return i++; };
  });
  EXPECT_EQ(Collect(endless, 10).size(), 10u);
  EXPECT_EQ(SyncWait(SumFirst(endless, 5)), 10);
  for (int round = 0; round < 10; ++round) {
    auto ds = FromGenerator(SquaresFactory{1000000, true}).Prefetch(4);
    Iterator<int64_t> it = ds.MakeIterator();
    for (int i = 0; i < round; ++i) ASSERT_TRUE(it.NextBlocking().ok());
  }
}

}  // namespace
}  // namespace from_generator_test_file
}  // namespace sluice
