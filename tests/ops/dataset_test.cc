#include "sluice/ops/dataset.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "tests/ops/test_helpers.h"

namespace sluice {
namespace dataset_test_file {
namespace {

using test_ops::AllInts;
using test_ops::Collect;
using test_ops::IntBatches;
using test_ops::Ints;
using test_ops::Values;

// Drains a dataset on this thread; error elements become their code's name so orders can be compared.
std::vector<int64_t> Iota(int64_t start, int64_t stop, int64_t step = 1) {
  std::vector<int64_t> v;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) v.push_back(i);
  return v;
}

TEST(RangeTest, OrdersAndCardinality) {
  EXPECT_EQ(Values(Range(5)), Iota(0, 5));
  EXPECT_EQ(Values(Range(2, 5)), Iota(2, 5));
  EXPECT_EQ(Values(Range(1, 5, 2)), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(Values(Range(5, 1, -2)), (std::vector<int64_t>{5, 3}));
  EXPECT_TRUE(Values(Range(5, 1)).empty());
  EXPECT_TRUE(Values(Range(1, 5, -1)).empty());
  EXPECT_EQ(Range(5).Cardinality(), 5);
  EXPECT_EQ(Range(1, 5, 2).Cardinality(), 2);
  EXPECT_EQ(Range(5, 1, -2).Cardinality(), 2);
  EXPECT_EQ(Range(1, 6, 2).Cardinality(), 3);
  EXPECT_EQ(Range(5, 1).Cardinality(), 0);
}

TEST(RangeTest, ZeroStepIsAnError) {
  auto got = Collect(Range(0, 5, 0));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RangeTest, DoesNotWrapAtInt64Max) {
  int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(Values(Range(max - 2, max, 5)), (std::vector<int64_t>{max - 2}));
}

TEST(FromVectorTest, YieldsValuesAndEveryIteratorStartsOver) {
  Dataset<std::string> ds = FromVector<std::string>({"a", "b", "c"});
  EXPECT_EQ(Values(ds), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(Values(ds), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(ds.Cardinality(), 3);
}

TEST(MapTest, AppliesInOrderAndChangesType) {
  auto ds = Range(4).Map([](int64_t x) { return std::to_string(x * 10); });
  EXPECT_EQ(Values(ds), (std::vector<std::string>{"0", "10", "20", "30"}));
  EXPECT_EQ(ds.Cardinality(), 4);
}

TEST(MapTest, ErrorsAndExceptionsFailOneElementNamingOpAndIndex) {
  auto ds = Range(5).Map([](int64_t x) -> absl::StatusOr<int64_t> {
    if (x == 1) return absl::InvalidArgumentError("odd one");
    if (x == 3) throw std::runtime_error("thrown");
    return x;
  });
  auto got = Collect(ds);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(*got[0], 0);
  EXPECT_EQ(got[1].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(got[1].status().message().find("Map (element 1)"), std::string::npos) << got[1].status();
  EXPECT_EQ(*got[2], 2);
  EXPECT_EQ(got[3].status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(got[3].status().message().find("Map (element 3)"), std::string::npos) << got[3].status();
  EXPECT_NE(got[3].status().message().find("thrown"), std::string::npos);
  EXPECT_EQ(*got[4], 4);
}

TEST(FilterTest, KeepsMatchingInOrder) {
  auto ds = Range(10).Filter([](const int64_t& x) { return x % 3 == 0; });
  EXPECT_EQ(Values(ds), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
}

TEST(FilterTest, PredicateErrorBecomesElement) {
  auto ds = Range(4).Filter([](const int64_t& x) -> absl::StatusOr<bool> {
    if (x == 2) return absl::DataLossError("cannot decide");
    return true;
  });
  auto got = Collect(ds);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[2].status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(got[2].status().message().find("Filter (element 2)"), std::string::npos);
}

TEST(TakeSkipTest, CountsAndNegatives) {
  EXPECT_EQ(Values(Range(10).Take(3)), Iota(0, 3));
  EXPECT_EQ(Values(Range(10).Take(-1)), Iota(0, 10));
  EXPECT_EQ(Values(Range(10).Take(20)), Iota(0, 10));
  EXPECT_TRUE(Values(Range(10).Take(0)).empty());
  EXPECT_EQ(Values(Range(10).Skip(7)), Iota(7, 10));
  EXPECT_TRUE(Values(Range(10).Skip(-1)).empty());
  EXPECT_TRUE(Values(Range(10).Skip(20)).empty());
  EXPECT_EQ(Values(Range(10).Skip(0)), Iota(0, 10));
}

TEST(TakeSkipTest, Cardinality) {
  EXPECT_EQ(Range(10).Take(3).Cardinality(), 3);
  EXPECT_EQ(Range(10).Take(-1).Cardinality(), 10);
  EXPECT_EQ(Range(10).Take(30).Cardinality(), 10);
  EXPECT_EQ(Range(10).Repeat().Take(30).Cardinality(), 30);
  EXPECT_EQ(Range(10).Filter([](const int64_t&) { return true; }).Take(3).Cardinality(), kUnknownCardinality);
  EXPECT_EQ(Range(10).Skip(3).Cardinality(), 7);
  EXPECT_EQ(Range(10).Skip(30).Cardinality(), 0);
  EXPECT_EQ(Range(10).Skip(-1).Cardinality(), 0);
  EXPECT_EQ(Range(10).Repeat().Skip(3).Cardinality(), kInfiniteCardinality);
}

TEST(BatchTest, RemainderKeptOrDropped) {
  // tf.data: range(7).batch(3) -> int64 tensors [0 1 2], [3 4 5], [6].
  std::vector<Tensor> kept = Values(Range(7).Batch(3));
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].dtype(), DType::kInt64);
  EXPECT_EQ(kept[0].shape(), Shape({3}));
  EXPECT_EQ(kept[2].shape(), Shape({1}));
  EXPECT_EQ(IntBatches(kept), (std::vector<std::vector<int64_t>>{Iota(0, 3), Iota(3, 6), Iota(6, 7)}));
  auto dropped = Values(Range(7).Batch(3, /*drop_remainder=*/true));
  ASSERT_EQ(dropped.size(), 2u);
  EXPECT_EQ(Range(7).Batch(3).Cardinality(), 3);
  EXPECT_EQ(Range(7).Batch(3, true).Cardinality(), 2);
  EXPECT_EQ(Range(6).Batch(3).Cardinality(), 2);
  EXPECT_EQ(Range(7).Repeat().Batch(3).Cardinality(), kInfiniteCardinality);
  EXPECT_TRUE(Values(Range(0).Batch(3)).empty());
}

TEST(BatchTest, BatchVectorsKeepsAnyElementAsVectors) {
  std::vector<std::vector<int64_t>> kept = Values(Range(7).BatchVectors(3));
  EXPECT_EQ(kept, (std::vector<std::vector<int64_t>>{Iota(0, 3), Iota(3, 6), Iota(6, 7)}));
  EXPECT_EQ(Values(Range(7).BatchVectors(3, /*drop_remainder=*/true)).size(), 2u);
  EXPECT_EQ(Range(7).BatchVectors(3, true).Cardinality(), 2);
  auto bad = Collect(Range(7).BatchVectors(0));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].status().message(), "BatchVectors: batch_size must be > 0, got 0");
  EXPECT_NE(Range(7).BatchVectors(3).DebugString().find("BatchVectors(batch_size=3"), std::string::npos);
}

TEST(BatchTest, BadSizeAndInputErrors) {
  auto bad = Collect(Range(7).Batch(0));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].status().code(), absl::StatusCode::kInvalidArgument);
  auto ds = Range(6)
                .Map([](int64_t x) -> absl::StatusOr<int64_t> {
                  if (x == 4) return absl::DataLossError("bad");
                  return x;
                })
                .Batch(3);
  auto got = Collect(ds);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(Ints(*got[0]), Iota(0, 3));
  EXPECT_EQ(got[1].status().code(), absl::StatusCode::kDataLoss);  // 3 collected, then 4 failed
  EXPECT_EQ(Ints(*got[2]), (std::vector<int64_t>{5}));
}

TEST(RepeatTest, EpochsAndEndless) {
  EXPECT_EQ(Values(Range(3).Repeat(2)), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_TRUE(Values(Range(3).Repeat(0)).empty());
  EXPECT_EQ(Values(Range(3).Repeat().Take(7)), (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0}));
  EXPECT_TRUE(Values(Range(0).Repeat()).empty());  // ends instead of spinning
  EXPECT_EQ(Range(3).Repeat(2).Cardinality(), 6);
  EXPECT_EQ(Range(3).Repeat().Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Range(0).Repeat().Cardinality(), 0);
  EXPECT_EQ(Range(3).Repeat(0).Cardinality(), 0);
}

TEST(EnumerateTest, PairsFromStart) {
  auto got = Values(FromVector<std::string>({"a", "b"}).Enumerate(5));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], (std::pair<int64_t, std::string>(5, "a")));
  EXPECT_EQ(got[1], (std::pair<int64_t, std::string>(6, "b")));
}

TEST(ShardTest, KeepsEveryNthAndValidates) {
  EXPECT_EQ(Values(Range(10).Shard(3, 1)), (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(Range(10).Shard(3, 0).Cardinality(), 4);
  EXPECT_EQ(Range(10).Shard(3, 1).Cardinality(), 3);
  EXPECT_EQ(Range(10).Shard(3, 2).Cardinality(), 3);
  // (-1 is kShardHint, a placeholder: auto_shard_op_test.cc.)
  for (auto [n, i] : {std::pair<int64_t, int64_t>{0, 0}, {-2, 0}, {3, 3}, {3, -1}}) {
    auto got = Collect(Range(10).Shard(n, i));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].status().code(), absl::StatusCode::kInvalidArgument) << n << " " << i;
  }
}

// What a shard gives of `input` (x < 0 is an error element), written as values and "E".
std::vector<std::string> ShardOfErrors(const std::vector<int64_t>& input, int64_t n, int64_t i) {
  auto ds = FromVector(input)
                .Map([](int64_t x) -> absl::StatusOr<int64_t> {
                  if (x < 0) return absl::DataLossError("bad");
                  return x;
                })
                .Shard(n, i);
  std::vector<std::string> got;
  for (const absl::StatusOr<int64_t>& e : Collect(ds)) got.push_back(e.ok() ? std::to_string(*e) : "E");
  return got;
}

// tf.data's ShardDataset skips to its next element and takes it; an error ends that call without counting
// as a position, and an error met while skipping also drops what that skip had counted.
TEST(ShardTest, ErrorsTakeNoPositionAsInTfData) {
  using V = std::vector<std::string>;
  // Taken positions: 0, 3 -> 0, 2 once the error is not counted.
  EXPECT_EQ(ShardOfErrors({0, -1, 1, 2, 3}, 2, 0), (V{"0", "E", "2"}));
  EXPECT_EQ(ShardOfErrors({0, -1, 1, 2, 3}, 2, 1), (V{"E", "1", "3"}));
  // Shard(3, 0): after 0 the skip passes 1 then meets the error; its count is dropped, so the next call
  // skips 2 and 3 afresh and takes 4.
  EXPECT_EQ(ShardOfErrors({0, 1, -1, 2, 3, 4, 5}, 3, 0), (V{"0", "E", "4"}));
  // An error at the element to take: the skip before it counted.
  EXPECT_EQ(ShardOfErrors({0, 1, -1, 2, 3, 4}, 3, 2), (V{"E", "2"}));
  EXPECT_EQ(ShardOfErrors({-1, -1}, 2, 1), (V{"E", "E"}));
}

TEST(PrefetchTest, SameElementsSameOrder) {
  auto ds = Range(1000).Map([](int64_t x) { return x * 2; }).Prefetch(4);
  std::vector<int64_t> expected;
  for (int64_t i = 0; i < 1000; ++i) expected.push_back(2 * i);
  EXPECT_EQ(Values(ds), expected);
  EXPECT_EQ(ds.Cardinality(), 1000);
  EXPECT_EQ(Values(Range(10).Prefetch(kAutotune)), Iota(0, 10));
  EXPECT_EQ(Values(Range(10).Prefetch(0)), Iota(0, 10));
  auto bad = Collect(Range(10).Prefetch(-5));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PrefetchTest, ChainedPrefetchesOnPrivatePool) {
  auto ds = Range(500).Prefetch(2).Map([](int64_t x) { return x + 1; }).Prefetch(3).Batch(7);
  Options options;
  options.thread_pool_size = 2;
  Iterator<Tensor> it = ds.MakeIterator(options);
  int64_t expected = 1;
  int64_t count = 0;
  for (absl::StatusOr<Tensor> batch : it) {
    ASSERT_TRUE(batch.ok());
    for (int64_t x : Ints(*batch)) EXPECT_EQ(x, expected++);
    count += batch->shape().dim(0);
  }
  EXPECT_EQ(count, 500);
}

TEST(PrefetchTest, DestroyedMidStreamStopsProducer) {
  for (int round = 0; round < 20; ++round) {
    auto ds = Range(0, 1000000).Prefetch(8).Map([](int64_t x) { return x; }).Prefetch(2);
    Iterator<int64_t> it = ds.MakeIterator();
    for (int i = 0; i < round; ++i) ASSERT_TRUE(it.NextBlocking().ok());
  }  // each iterator is destroyed with its producers running or blocked on a full buffer
}

Task<int64_t> SumWithCoroutine(Dataset<int64_t> ds) {
  Iterator<int64_t> it = ds.MakeIterator();
  int64_t sum = 0;
  for (;;) {
    absl::StatusOr<std::optional<int64_t>> next = co_await it.Next();
    if (!next.ok() || !next->has_value()) break;
    sum += **next;
  }
  co_return sum;
}

TEST(IteratorTest, CoroutineNextOverSyncAndAsyncPipelines) {
  EXPECT_EQ(SyncWait(SumWithCoroutine(Range(100))), 4950);
  EXPECT_EQ(SyncWait(SumWithCoroutine(Range(100).Prefetch(3))), 4950);
}

TEST(IteratorTest, EndStaysEnd) {
  Iterator<int64_t> it = Range(1).MakeIterator();
  ASSERT_EQ(**it.NextBlocking(), 0);
  for (int i = 0; i < 3; ++i) {
    auto next = it.NextBlocking();
    ASSERT_TRUE(next.ok());
    EXPECT_FALSE(next->has_value());
  }
}

TEST(DatasetTest, DebugStringNamesOpsAndParams) {
  std::string s = Range(10).Map([](int64_t x) { return x; }, "identity").Batch(4, true).DebugString();
  EXPECT_NE(s.find("Batch(batch_size=4, drop_remainder=true, num_parallel_calls=0)"), std::string::npos) << s;
  EXPECT_NE(s.find("Map(f=\"identity\")"), std::string::npos) << s;
  EXPECT_NE(s.find("Range(start=0, stop=10, step=1)"), std::string::npos) << s;
}

TEST(DatasetTest, DebugStringElidesLongValuesButParamsKeepThem) {
  std::string long_name(500, 'f');
  auto ds = Range(3).Map([](int64_t x) { return x; }, long_name);
  std::string s = ds.DebugString();
  EXPECT_NE(s.find("...\" (500 chars)"), std::string::npos) << s;
  EXPECT_LT(s.size(), 300u) << s;
  ASSERT_EQ(ds.node()->params().size(), 1u);
  EXPECT_EQ(std::get<FunctionParam>(ds.node()->params()[0].value).name, long_name);
}

TEST(DatasetTest, OneDefinitionManyConcurrentIterators) {
  auto ds = Range(2000).Map([](int64_t x) { return x * 3; }).Prefetch(4);
  std::vector<std::thread> threads;
  std::vector<int64_t> sums(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&ds, &sums, t] {
      Iterator<int64_t> it = ds.MakeIterator();
      for (absl::StatusOr<int64_t> x : it) sums[t] += *x;
    });
  }
  for (auto& t : threads) t.join();
  for (int64_t s : sums) EXPECT_EQ(s, 3 * 1999 * 2000 / 2);
}

}  // namespace
}  // namespace dataset_test_file
}  // namespace sluice

namespace sluice {
namespace dataset_test_file {
namespace {

std::vector<int64_t> Sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(ShuffleTest, PermutationReproducibleBySeed) {
  auto ds = Range(100).Shuffle(10, 42, /*reshuffle_each_iteration=*/false);
  std::vector<int64_t> a = Values(ds);
  std::vector<int64_t> b = Values(ds);
  EXPECT_EQ(Sorted(a), Iota(0, 100));
  EXPECT_EQ(a, b);  // same seed, no reshuffle: same order every pass
  EXPECT_NE(a, Iota(0, 100));
  EXPECT_EQ(Values(Range(100).Shuffle(10, 42, false)), a);  // an equal definition gives the same order
  EXPECT_NE(Values(Range(100).Shuffle(10, 43, false)), a);
  EXPECT_EQ(ds.Cardinality(), 100);
}

TEST(ShuffleTest, BufferBoundsHowFarAnElementMoves) {
  // With buffer_size b, output i can only be an input element < i + b.
  std::vector<int64_t> out = Values(Range(1000).Shuffle(5, 7));
  for (size_t i = 0; i < out.size(); ++i) EXPECT_LT(out[i], static_cast<int64_t>(i) + 5);
  EXPECT_EQ(Values(Range(50).Shuffle(1, 3)), Iota(0, 50));  // buffer 1 is the identity
}

TEST(ShuffleTest, ReshuffleEachIterationChangesOrderPerEpochAndKeepsEpochsApart) {
  auto ds = Range(20).Shuffle(20, 9, /*reshuffle_each_iteration=*/true).Repeat(3);
  std::vector<int64_t> all = Values(ds);
  ASSERT_EQ(all.size(), 60u);
  std::vector<int64_t> e0(all.begin(), all.begin() + 20), e1(all.begin() + 20, all.begin() + 40),
      e2(all.begin() + 40, all.end());
  EXPECT_EQ(Sorted(e0), Iota(0, 20));  // an epoch is drained before the next begins
  EXPECT_EQ(Sorted(e1), Iota(0, 20));
  EXPECT_EQ(Sorted(e2), Iota(0, 20));
  EXPECT_NE(e0, e1);
  EXPECT_NE(e1, e2);
  auto fixed = Values(Range(20).Shuffle(20, 9, /*reshuffle_each_iteration=*/false).Repeat(2));
  EXPECT_EQ(std::vector<int64_t>(fixed.begin(), fixed.begin() + 20), std::vector<int64_t>(fixed.begin() + 20, fixed.end()));
}

TEST(ShuffleTest, BadBufferSize) {
  auto got = Collect(Range(5).Shuffle(0));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(InterleaveTest, CycleAndBlockOrderAsTfData) {
  // tf.data's documented example: range(1, 6).interleave(lambda x: repeat(x, 6), cycle_length=2,
  // block_length=4) gives 1111 2222 11 22 3333 4444 33 44 5555 55.
  auto ds = Range(1, 6).Interleave(
      [](int64_t x) { return Range(6).Map([x](int64_t) { return x; }); }, 2, 4);
  std::vector<int64_t> expected = {1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4,
                                   3, 3, 4, 4, 5, 5, 5, 5, 5, 5};
  EXPECT_EQ(Values(ds), expected);
  EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
}

TEST(InterleaveTest, CycleOneEqualsFlatMap) {
  auto f = [](int64_t x) { return Range(x); };
  EXPECT_EQ(Values(Range(5).Interleave(f, 1, 3)), Values(Range(5).FlatMap(f)));
  EXPECT_EQ(Values(Range(4).FlatMap(f)), (std::vector<int64_t>{0, 0, 1, 0, 1, 2}));
}

TEST(InterleaveTest, ErrorsAndBadArguments) {
  auto ds = Range(3).Interleave(
      [](int64_t x) -> absl::StatusOr<Dataset<int64_t>> {
        if (x == 1) return absl::NotFoundError("no such shard");
        return Range(2);
      },
      3, 1);
  auto got = Collect(ds);
  int errors = 0;
  for (auto& x : got) errors += x.ok() ? 0 : 1;
  EXPECT_EQ(errors, 1);
  EXPECT_EQ(got.size(), 5u);
  auto bad = Collect(Range(3).Interleave([](int64_t) { return Range(1); }, 0, 1));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(InterleaveTest, SubDatasetsMayBeAsync) {
  auto ds = Range(4).Interleave([](int64_t x) { return Range(x * 10, x * 10 + 3).Prefetch(2); }, 2, 1);
  EXPECT_EQ(Values(ds), (std::vector<int64_t>{0, 10, 1, 11, 2, 12, 20, 30, 21, 31, 22, 32}));
}

TEST(ZipConcatenateTest, ZipStopsAtShortest) {
  auto got = Values(Zip(Range(5), FromVector<std::string>({"a", "b", "c"})));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2], (std::pair<int64_t, std::string>(2, "c")));
  EXPECT_EQ(Zip(Range(5), Range(3)).Cardinality(), 3);
  EXPECT_EQ(Zip(Range(5), Range(3).Repeat()).Cardinality(), 5);
  EXPECT_EQ(Zip(Range(5).Repeat(), Range(3).Repeat()).Cardinality(), kInfiniteCardinality);
}

TEST(ZipConcatenateTest, ZipOfThreeIsATupleAndStopsAtTheShortest) {
  auto ds = Zip(Range(1, 4), Range(4, 7), FromVector<std::string>({"x", "y"}));
  auto got = Values(ds);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1], (std::tuple<int64_t, int64_t, std::string>(2, 5, "y")));
  EXPECT_EQ(ds.Cardinality(), 2);
  EXPECT_EQ(ds.node()->inputs().size(), 3u);
  EXPECT_EQ(Zip(Range(3).Repeat(), Range(4).Repeat(), Range(5).Repeat(), Range(2)).Cardinality(), 2);
  EXPECT_EQ(Zip(Range(3), Range(4), Range(5).Filter([](int64_t) { return true; })).Cardinality(),
            kUnknownCardinality);
}

TEST(ZipConcatenateTest, ZipErrorDropsEarlierInputsElementsAndDoesNotAdvanceLaterOnes) {
  // As tf's ZipDataset: inputs are advanced in order and the step returns at the first error.
  auto failing = Range(3).Map([](int64_t x) -> absl::StatusOr<int64_t> {
    if (x == 1) return absl::DataLossError("bad");
    return x;
  });
  auto got = Collect(Zip(Range(10, 13), failing, Range(20, 23)));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(*got[0], (std::tuple<int64_t, int64_t, int64_t>(10, 0, 20)));
  EXPECT_EQ(got[1].status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(*got[2], (std::tuple<int64_t, int64_t, int64_t>(12, 2, 21)));  // 11 dropped, 21 not taken
}

TEST(ZipConcatenateTest, ZipKeepsTakenElementsAcrossAPendingInput) {
  auto slow = Range(100, 300).Prefetch(1);
  auto got = Values(Zip(Range(200), slow, Range(5, 205)));
  ASSERT_EQ(got.size(), 200u);
  for (int64_t i = 0; i < 200; ++i) {
    EXPECT_EQ(got[static_cast<size_t>(i)], (std::tuple<int64_t, int64_t, int64_t>(i, 100 + i, 5 + i)));
  }
}

TEST(ZipConcatenateTest, ConcatenateInOrder) {
  auto ds = Range(3).Concatenate(Range(10, 12));
  EXPECT_EQ(Values(ds), (std::vector<int64_t>{0, 1, 2, 10, 11}));
  EXPECT_EQ(ds.Cardinality(), 5);
  EXPECT_EQ(Range(3).Concatenate(Range(1).Repeat()).Cardinality(), kInfiniteCardinality);
}

TEST(TakeWhileUnbatchTest, Basics) {
  EXPECT_EQ(Values(Range(10).TakeWhile([](const int64_t& x) { return x < 4; })), Iota(0, 4));
  EXPECT_EQ(AllInts(Values(Range(7).Batch(3).Unbatch())), Iota(0, 7));
  EXPECT_EQ(Values(Range(7).BatchVectors(3).Unbatch()), Iota(0, 7));
}

}  // namespace
}  // namespace dataset_test_file
}  // namespace sluice
