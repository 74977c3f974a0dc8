#include "sluice/engine/async_generator.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"

namespace sluice {
namespace async_generator_test_file {
namespace {

AsyncGenerator<int> Count(int n) {
  for (int i = 0; i < n; ++i) co_yield i;
}

// One link of a chain: pulls from its upstream (owned by value) and forwards each element plus one.
AsyncGenerator<int> PlusOne(AsyncGenerator<int> upstream) {
  while (std::optional<int> x = co_await upstream.Next()) co_yield *x + 1;
}

AsyncGenerator<int> BuildChain(int n, int depth) {
  AsyncGenerator<int> gen = Count(n);
  for (int i = 0; i < depth; ++i) gen = PlusOne(std::move(gen));
  return gen;
}

Task<std::vector<int>> Drain(AsyncGenerator<int> gen) {
  std::vector<int> out;
  while (std::optional<int> x = co_await gen.Next()) out.push_back(*x);
  co_return out;
}

Task<long> SumAndCount(AsyncGenerator<int> gen, long* count) {
  long sum = 0;
  while (std::optional<int> x = co_await gen.Next()) {
    sum += *x;
    ++*count;
  }
  co_return sum;
}

TEST(AsyncGeneratorTest, YieldsInOrderThenEnds) {
  EXPECT_EQ(SyncWait(Drain(Count(5))), (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(AsyncGeneratorTest, EmptyGenerator) { EXPECT_TRUE(SyncWait(Drain(Count(0))).empty()); }

TEST(AsyncGeneratorTest, NextAfterEndStaysEnded) {
  auto task = [](AsyncGenerator<int> gen) -> Task<int> {
    int ends = 0;
    while (co_await gen.Next()) {
    }
    for (int i = 0; i < 3; ++i) {
      if (!(co_await gen.Next())) ++ends;
    }
    co_return ends;
  };
  EXPECT_EQ(SyncWait(task(Count(2))), 3);
}

TEST(AsyncGeneratorTest, ChainThirtyTwoDeepCarriesHundredThousand) {
  constexpr int kDepth = 32;
  constexpr int kElements = 100000;
  long count = 0;
  long sum = SyncWait(SumAndCount(BuildChain(kElements, kDepth), &count));
  EXPECT_EQ(count, kElements);
  // sum of (i + 32) for i in [0, n)
  EXPECT_EQ(sum, static_cast<long>(kElements) * (kElements - 1) / 2 + static_cast<long>(kDepth) * kElements);
}

struct DropCounter {
  int* drops;
  explicit DropCounter(int* d) : drops(d) {}
  DropCounter(const DropCounter&) = delete;
  DropCounter& operator=(const DropCounter&) = delete;
  ~DropCounter() { ++*drops; }
};

AsyncGenerator<int> CountsDrops(int* drops) {
  DropCounter counter(drops);
  for (int i = 0;; ++i) co_yield i;
}

TEST(AsyncGeneratorTest, DroppedMidStreamFreesEverything) {
  int drops = 0;
  {
    AsyncGenerator<int> gen = PlusOne(PlusOne(CountsDrops(&drops)));
    auto take_three = [](AsyncGenerator<int>* g) -> Task<int> {
      int last = -1;
      for (int i = 0; i < 3; ++i) last = *(co_await g->Next());
      co_return last;
    };
    EXPECT_EQ(SyncWait(take_three(&gen)), 4);
    EXPECT_EQ(drops, 0);
  }
  EXPECT_EQ(drops, 1);
}

TEST(AsyncGeneratorTest, NeverStartedGeneratorIsFreed) {
  int drops = 0;
  { AsyncGenerator<int> gen = CountsDrops(&drops); }
  EXPECT_EQ(drops, 0);  // body never ran, so the local never existed
}

AsyncGenerator<std::string> Lvalues() {
  std::string s = "a";
  co_yield s;  // copied: the generator keeps its own
  s += "b";
  co_yield s;
  co_yield "literal";  // converted
}

TEST(AsyncGeneratorTest, YieldsLvaluesAndConversions) {
  auto drain = [](AsyncGenerator<std::string> gen) -> Task<std::vector<std::string>> {
    std::vector<std::string> out;
    while (auto x = co_await gen.Next()) out.push_back(*x);
    co_return out;
  };
  EXPECT_EQ(SyncWait(drain(Lvalues())), (std::vector<std::string>{"a", "ab", "literal"}));
}

AsyncGenerator<std::unique_ptr<int>> MoveOnlyElements() {
  co_yield std::make_unique<int>(1);
  co_yield std::make_unique<int>(2);
}

TEST(AsyncGeneratorTest, MoveOnlyElements) {
  auto drain = [](AsyncGenerator<std::unique_ptr<int>> gen) -> Task<int> {
    int sum = 0;
    while (auto x = co_await gen.Next()) sum += **x;
    co_return sum;
  };
  EXPECT_EQ(SyncWait(drain(MoveOnlyElements())), 3);
}

AsyncGenerator<absl::StatusOr<int>> ErrorsThenMore() {
  co_yield 1;
  co_yield absl::DataLossError("bad record");
  co_yield 3;
  throw std::runtime_error("user code failed");
}

TEST(AsyncGeneratorTest, ErrorsAreElementsAndExceptionsBecomeAFinalError) {
  auto drain = [](AsyncGenerator<absl::StatusOr<int>> gen) -> Task<std::vector<absl::StatusOr<int>>> {
    std::vector<absl::StatusOr<int>> out;
    while (auto x = co_await gen.Next()) out.push_back(std::move(*x));
    co_return out;
  };
  std::vector<absl::StatusOr<int>> got = SyncWait(drain(ErrorsThenMore()));
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(*got[0], 1);
  EXPECT_EQ(got[1].status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(*got[2], 3);
  EXPECT_EQ(got[3].status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(got[3].status().message().find("user code failed"), std::string::npos);
}

AsyncGenerator<int> ThrowsPlain() {
  co_yield 1;
  throw std::logic_error("plain");
}

TEST(AsyncGeneratorTest, ExceptionsRethrownForPlainTypes) {
  auto drain = [](AsyncGenerator<int> gen) -> Task<int> {
    int n = 0;
    while (co_await gen.Next()) ++n;
    co_return n;
  };
  EXPECT_THROW(SyncWait(drain(ThrowsPlain())), std::logic_error);
}

AsyncGenerator<int> StopsWhenAsked() {
  for (int i = 0;; ++i) {
    std::stop_token token = co_await CurrentStopToken();
    if (token.stop_requested()) co_return;
    co_yield i;
  }
}

TEST(AsyncGeneratorTest, SeesConsumersStopToken) {
  std::stop_source source;
  auto drain = [](AsyncGenerator<int> gen, std::stop_source* stop) -> Task<int> {
    int n = 0;
    while (co_await gen.Next()) {
      if (++n == 10) stop->request_stop();
    }
    co_return n;
  };
  EXPECT_EQ(SyncWait(drain(PlusOne(StopsWhenAsked()), &source), source.get_token()), 10);
}

}  // namespace
}  // namespace async_generator_test_file
}  // namespace sluice
