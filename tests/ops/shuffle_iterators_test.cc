// Shuffle's random state belongs to the iterator (issue #12): iterators of one definition, at once or one
// after another, each give the sequence of orders one iterator alone gives; unseeded shuffles draw their
// seed per iterator.
#include "sluice/ops/shuffle.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <thread>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "sluice/ops/op_node.h"
#include "tests/ops/test_helpers.h"

namespace sluice {
namespace shuffle_iterators_test_file {
namespace {

using test_ops::Values;

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

std::vector<int64_t> Sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Two iterators of `ds`, their Next calls alternating on this thread.
std::pair<std::vector<int64_t>, std::vector<int64_t>> Interleaved(const Dataset<int64_t>& ds) {
  Iterator<int64_t> a = ds.MakeIterator();
  Iterator<int64_t> b = ds.MakeIterator();
  std::vector<int64_t> from_a, from_b;
  bool a_done = false, b_done = false;
  while (!a_done || !b_done) {
    for (auto [it, out, done] : {std::tuple{&a, &from_a, &a_done}, std::tuple{&b, &from_b, &b_done}}) {
      if (*done) continue;
      absl::StatusOr<std::optional<int64_t>> x = it->NextBlocking();
      EXPECT_TRUE(x.ok()) << x.status();
      if (!x.ok() || !x->has_value()) {
        *done = true;
      } else {
        out->push_back(**x);
      }
    }
  }
  return {from_a, from_b};
}

// The orders of the first iterator before issue #12 (when a definition held the pass counter), printed
// by that code: a seeded pipeline's output in one iterator must not change.
TEST(ShuffleIteratorsTest, OrdersWithinOneIteratorAreUnchanged) {
  EXPECT_EQ(Values(Range(12).Shuffle(12, 9).Repeat(3)),
            (std::vector<int64_t>{10, 0, 1, 9, 6, 7, 4, 11, 5, 8, 3, 2,    //
                                  2, 9, 0, 6, 3, 8, 10, 7, 1, 4, 5, 11,    //
                                  11, 5, 10, 6, 4, 0, 8, 1, 7, 2, 9, 3}));
  EXPECT_EQ(Values(Range(16).Shuffle(4, 42).Repeat(2)),
            (std::vector<int64_t>{1, 4, 3, 0, 2, 6, 8, 7, 9, 10, 12, 11, 14, 15, 5, 13,  //
                                  0, 3, 5, 6, 1, 7, 9, 2, 11, 12, 10, 4, 8, 13, 15, 14}));
  EXPECT_EQ(Values(Range(10).Shuffle(10, 5, /*reshuffle_each_iteration=*/false).Repeat(2)),
            (std::vector<int64_t>{9, 0, 6, 5, 1, 4, 3, 2, 7, 8, 9, 0, 6, 5, 1, 4, 3, 2, 7, 8}));
}

TEST(ShuffleIteratorsTest, EverySeparateIteratorGivesTheSameOrders) {
  // Before issue #12 the second iterator got the second pass's order; now each starts at pass 0.
  auto ds = Range(100).Shuffle(100, 3).Repeat(2);
  std::vector<int64_t> alone = Values(ds);
  ASSERT_EQ(alone.size(), 200u);
  EXPECT_NE(std::vector<int64_t>(alone.begin(), alone.begin() + 100),
            std::vector<int64_t>(alone.begin() + 100, alone.end()));  // the epochs of one iterator differ
  EXPECT_EQ(Values(ds), alone);
  EXPECT_EQ(Values(ds), alone);
}

TEST(ShuffleIteratorsTest, InterleavedIteratorsGiveTheOrderOfOneAlone) {
  for (bool reshuffle : {true, false}) {
    SCOPED_TRACE(reshuffle);
    auto ds = Range(300).Shuffle(50, 11, reshuffle).Repeat(3);
    std::vector<int64_t> alone = Values(ds);
    auto [a, b] = Interleaved(ds);
    EXPECT_EQ(a, alone);
    EXPECT_EQ(b, alone);
  }
}

TEST(ShuffleIteratorsTest, IteratorsOnTwoThreadsGiveTheOrderOfOneAlone) {
  // Prefetch and a parallel Map put the shuffle's streams on pool threads as well.
  auto ds = Range(2000).Map([](int64_t x) { return x; }, 2).Shuffle(100, 5).Prefetch(4).Repeat(3);
  std::vector<int64_t> alone = Values(ds);
  ASSERT_EQ(alone.size(), 6000u);
  for (int round = 0; round < 5; ++round) {
    std::vector<std::vector<int64_t>> got(2);
    std::thread t0([&] { got[0] = Values(ds); });
    std::thread t1([&] { got[1] = Values(ds); });
    t0.join();
    t1.join();
    EXPECT_EQ(got[0], alone);
    EXPECT_EQ(got[1], alone);
  }
}

TEST(ShuffleIteratorsTest, UnseededDrawsPerIteratorNotPerDefinition) {
  auto ds = Range(1000).Shuffle(1000);
  for (const Param& p : ds.node()->params()) EXPECT_NE(p.name, "seed");
  std::vector<int64_t> first = Values(ds);
  std::vector<int64_t> second = Values(ds);
  EXPECT_EQ(Sorted(first), Iota(1000));
  EXPECT_EQ(Sorted(second), Iota(1000));
  // Two independent uniform permutations of 1000 are equal with probability 1/1000!.
  EXPECT_NE(first, second);
  auto [a, b] = Interleaved(ds);
  EXPECT_NE(a, b);
  // Within one iterator an unseeded shuffle still reshuffles per epoch, and without reshuffling repeats.
  std::vector<int64_t> two = Values(ds.Repeat(2));
  EXPECT_NE(std::vector<int64_t>(two.begin(), two.begin() + 1000), std::vector<int64_t>(two.begin() + 1000, two.end()));
  std::vector<int64_t> fixed = Values(Range(1000).Shuffle(1000, std::nullopt, false).Repeat(2));
  EXPECT_EQ(std::vector<int64_t>(fixed.begin(), fixed.begin() + 1000),
            std::vector<int64_t>(fixed.begin() + 1000, fixed.end()));
}

TEST(ShuffleIteratorsTest, SeededParams) {
  auto ds = Range(10).Shuffle(4, 77, false);
  std::vector<Param> params = ds.node()->params();
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[0].name, "buffer_size");
  EXPECT_EQ(std::get<int64_t>(params[0].value), 4);
  EXPECT_EQ(params[1].name, "reshuffle_each_iteration");
  EXPECT_EQ(std::get<bool>(params[1].value), false);
  EXPECT_EQ(params[2].name, "seed");
  EXPECT_EQ(std::get<int64_t>(params[2].value), 77);
}

// A shuffle built per element by an Interleave's function is a new definition each time: each starts
// at pass 0 (the same order for equal seeds), even when its node takes a dead one's address.
TEST(ShuffleIteratorsTest, InnerShufflesOfAnInterleaveStartAfresh) {
  auto inner = [](int64_t) { return Range(10).Shuffle(10, 21); };
  std::vector<int64_t> one = Values(Range(10).Shuffle(10, 21));
  std::vector<int64_t> got = Values(Range(50).Interleave(inner, /*cycle_length=*/1));
  ASSERT_EQ(got.size(), 500u);
  for (size_t k = 0; k < 50; ++k) {
    EXPECT_EQ(std::vector<int64_t>(got.begin() + 10 * k, got.begin() + 10 * (k + 1)), one) << k;
  }
}

}  // namespace
}  // namespace shuffle_iterators_test_file
}  // namespace sluice
