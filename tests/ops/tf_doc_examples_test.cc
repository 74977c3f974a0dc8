// The examples in tf.data.Dataset's documentation (the `>>>` lines of each method's docstring), written
// with sluice's API, with the outputs the documentation prints; plus its cardinality rules. When one of
// these fails, sluice disagrees with tf.data's documented behaviour.
#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "tests/ops/test_helpers.h"

namespace sluice {
namespace tf_doc_examples_test_file {
namespace {

using test_ops::Collect;
using test_ops::Fill;
using test_ops::Ints;
using test_ops::Values;
using Ints64 = std::vector<int64_t>;

Tensor ScalarTensor(int64_t x) { return Tensor::Scalar<int64_t>(x); }

std::vector<Ints64> BatchRows(const std::vector<Tensor>& batches) {
  std::vector<Ints64> out;
  for (const Tensor& t : batches) out.push_back(Ints(t));
  return out;
}

TEST(TfDocExamplesTest, Range) {
  EXPECT_EQ(Values(Range(5)), (Ints64{0, 1, 2, 3, 4}));
  EXPECT_EQ(Values(Range(2, 5)), (Ints64{2, 3, 4}));
  EXPECT_EQ(Values(Range(1, 5, 2)), (Ints64{1, 3}));
  EXPECT_EQ(Values(Range(1, 5, -2)), (Ints64{}));
  EXPECT_EQ(Values(Range(5, 1)), (Ints64{}));
  EXPECT_EQ(Values(Range(5, 1, -2)), (Ints64{5, 3}));
  EXPECT_EQ(Range(5, 1, -2).Cardinality(), 2);
  EXPECT_EQ(Range(1, 5, -2).Cardinality(), 0);
}

TEST(TfDocExamplesTest, BatchAndDropRemainder) {
  std::vector<Tensor> batches = Values(Range(8).Map(ScalarTensor).Batch(3));
  EXPECT_EQ(BatchRows(batches), (std::vector<Ints64>{{0, 1, 2}, {3, 4, 5}, {6, 7}}));
  batches = Values(Range(8).Map(ScalarTensor).Batch(3, /*drop_remainder=*/true));
  EXPECT_EQ(BatchRows(batches), (std::vector<Ints64>{{0, 1, 2}, {3, 4, 5}}));
  // Numbers need no Map: tf.data batches them into int64 tensors too.
  EXPECT_EQ(BatchRows(Values(Range(8).Batch(3))), (std::vector<Ints64>{{0, 1, 2}, {3, 4, 5}, {6, 7}}));
  EXPECT_EQ(Range(8).Batch(3).Cardinality(), 3);
  EXPECT_EQ(Range(8).Batch(3, true).Cardinality(), 2);
}

TEST(TfDocExamplesTest, Shard) {
  EXPECT_EQ(Values(Range(10).Shard(3, 0)), (Ints64{0, 3, 6, 9}));
  EXPECT_EQ(Values(Range(10).Shard(3, 1)), (Ints64{1, 4, 7}));
  EXPECT_EQ(Values(Range(10).Shard(3, 2)), (Ints64{2, 5, 8}));
  EXPECT_EQ(Range(10).Shard(3, 0).Cardinality(), 4);
  EXPECT_EQ(Range(10).Shard(3, 2).Cardinality(), 3);
}

TEST(TfDocExamplesTest, TakeSkipRepeatEnumerate) {
  EXPECT_EQ(Values(Range(10).Take(3)), (Ints64{0, 1, 2}));
  EXPECT_EQ(Values(Range(10).Skip(7)), (Ints64{7, 8, 9}));
  EXPECT_EQ(Values(FromVector<int64_t>({1, 2, 3}).Repeat(3)), (Ints64{1, 2, 3, 1, 2, 3, 1, 2, 3}));
  auto enumerated = Values(FromVector<int64_t>({1, 2, 3}).Enumerate(5));
  EXPECT_EQ(enumerated, (std::vector<std::pair<int64_t, int64_t>>{{5, 1}, {6, 2}, {7, 3}}));
}

TEST(TfDocExamplesTest, ZipStopsAtTheShortestAndConcatenateAppends) {
  auto zipped = Values(Zip(Range(1, 4), Range(4, 7)));
  EXPECT_EQ(zipped, (std::vector<std::pair<int64_t, int64_t>>{{1, 4}, {2, 5}, {3, 6}}));
  EXPECT_EQ(Values(Zip(Range(1, 4), Range(13, 15))).size(), 2u);
  EXPECT_EQ(Zip(Range(1, 4), Range(13, 15)).Cardinality(), 2);
  EXPECT_EQ(Values(Range(1, 4).Concatenate(Range(4, 8))), (Ints64{1, 2, 3, 4, 5, 6, 7}));
}

TEST(TfDocExamplesTest, FilterFlatMapTakeWhileScan) {
  EXPECT_EQ(Values(FromVector<int64_t>({1, 2, 3}).Filter([](int64_t x) { return x < 3; })), (Ints64{1, 2}));
  auto flat = FromVector<Ints64>({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}).FlatMap([](const Ints64& row) {
    return FromVector(row);
  });
  EXPECT_EQ(Values(flat), (Ints64{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(Values(Range(10).TakeWhile([](int64_t x) { return x < 5; })), (Ints64{0, 1, 2, 3, 4}));
  auto sums = Range(10).Scan(int64_t{0}, [](const int64_t& state, int64_t i) {
    return std::pair<int64_t, int64_t>(state + i, state + i);
  });
  EXPECT_EQ(Values(sums), (Ints64{0, 1, 3, 6, 10, 15, 21, 28, 36, 45}));
}

TEST(TfDocExamplesTest, Interleave) {
  // range(1, 6).interleave(lambda x: repeat(x, 6), cycle_length=2, block_length=4)
  auto repeated = [](int64_t x) { return FromVector<int64_t>({x}).Repeat(6); };
  Ints64 expected = {1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5};
  EXPECT_EQ(Values(Range(1, 6).Interleave(repeated, 2, 4)), expected);
  EXPECT_EQ(Values(Range(1, 6).Interleave(repeated, 2, 4, /*num_parallel_calls=*/2, true)), expected);
}

TEST(TfDocExamplesTest, Unbatch) {
  auto rows = FromVector<Ints64>({{1, 2, 3}, {1, 2}, {1, 2, 3, 4}}).Unbatch();
  EXPECT_EQ(Values(rows), (Ints64{1, 2, 3, 1, 2, 1, 2, 3, 4}));
}

TEST(TfDocExamplesTest, PaddedBatch) {
  Dataset<Tensor> sequences = Range(1, 5).Map(Fill);  // [1], [2 2], [3 3 3], [4 4 4 4]
  std::vector<Tensor> got = Values(sequences.PaddedBatch(2));
  EXPECT_EQ(BatchRows(got), (std::vector<Ints64>{{1, 0, 2, 2}, {3, 3, 3, 0, 4, 4, 4, 4}}));
  EXPECT_EQ(got[0].shape(), Shape({2, 2}));
  EXPECT_EQ(got[1].shape(), Shape({2, 4}));
  got = Values(sequences.PaddedBatch(2, {ops::PaddedShape{5}}));
  EXPECT_EQ(BatchRows(got),
            (std::vector<Ints64>{{1, 0, 0, 0, 0, 2, 2, 0, 0, 0}, {3, 3, 3, 0, 0, 4, 4, 4, 4, 0}}));
  got = Values(sequences.PaddedBatch(2, {ops::PaddedShape{-1}}, {Tensor::Scalar<int64_t>(-1)}));
  EXPECT_EQ(BatchRows(got), (std::vector<Ints64>{{1, -1, 2, 2}, {3, 3, 3, -1, 4, 4, 4, 4}}));
}

TEST(TfDocExamplesTest, Rebatch) {
  std::vector<Tensor> got = Values(Range(8).Map(ScalarTensor).Batch(4).Rebatch(2));
  EXPECT_EQ(BatchRows(got), (std::vector<Ints64>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  got = Values(Range(16).Map(ScalarTensor).Batch(4).Rebatch(std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(
      BatchRows(got),
      (std::vector<Ints64>{{0, 1}, {2}, {3}, {4, 5}, {6}, {7}, {8, 9}, {10}, {11}, {12, 13}, {14}, {15}}));
  // rebatch(N) == unbatch().batch(N): rows cross input batch boundaries.
  got = Values(Range(7).Map(ScalarTensor).Batch(4).Rebatch(3));
  EXPECT_EQ(BatchRows(got), (std::vector<Ints64>{{0, 1, 2}, {3, 4, 5}, {6}}));
}

TEST(TfDocExamplesTest, BucketBySequenceLength) {
  std::vector<Ints64> elements = {{0}, {1, 2, 3, 4}, {5, 6, 7}, {7, 8, 9, 10, 11}, {13, 14, 15, 16, 19, 20},
                                  {21, 22}};
  Dataset<Tensor> sequences = FromVector(elements).Map([](const Ints64& v) { return Tensor::FromVector(v); });
  auto length = [](const Tensor& t) { return t.shape().dim(0); };
  std::vector<Tensor> got = Values(sequences.BucketBySequenceLength(length, {3, 5}, {2, 2, 2}));
  EXPECT_EQ(BatchRows(got),
            (std::vector<Ints64>{
                {1, 2, 3, 4, 5, 6, 7, 0}, {7, 8, 9, 10, 11, 0, 13, 14, 15, 16, 19, 20}, {0, 0, 21, 22}}));
  got = Values(sequences.BucketBySequenceLength(length, {7, 17}, {2, 2, 2}, {}, {Tensor::Scalar<int64_t>(-1)},
                                                /*pad_to_bucket_boundary=*/true));
  EXPECT_EQ(BatchRows(got), (std::vector<Ints64>{{0, -1, -1, -1, -1, -1, 1, 2, 3, 4, -1, -1},
                                                 {5, 6, 7, -1, -1, -1, 7, 8, 9, 10, 11, -1},
                                                 {13, 14, 15, 16, 19, 20, 21, 22, -1, -1, -1, -1}}));
}

TEST(TfDocExamplesTest, ChooseFromDatasets) {
  std::vector<Dataset<std::string>> datasets = {FromVector<std::string>({"foo"}).Repeat(),
                                                FromVector<std::string>({"bar"}).Repeat(),
                                                FromVector<std::string>({"baz"}).Repeat()};
  auto got = Values(ChooseFromDatasets(datasets, Range(3).Repeat(3)));
  EXPECT_EQ(got, (std::vector<std::string>{"foo", "bar", "baz", "foo", "bar", "baz", "foo", "bar", "baz"}));
  // An index out of range is an error, as tf.data's "Selector index out of range".
  auto bad = Collect(ChooseFromDatasets(datasets, FromVector<int64_t>({0, 3})));
  ASSERT_EQ(bad.size(), 2u);
  EXPECT_TRUE(bad[0].ok());
  EXPECT_FALSE(bad[1].ok());
}

TEST(TfDocExamplesTest, SampleFromDatasetsKeepsEveryElementWhenNotStopping) {
  // Without stop_on_empty_dataset the sampler drops exhausted inputs and continues: all 10 elements.
  auto got = Values(SampleFromDatasets<int64_t>({Range(0, 3), Range(100, 107)}, {0.5, 0.5}, 7));
  ASSERT_EQ(got.size(), 10u);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (Ints64{0, 1, 2, 100, 101, 102, 103, 104, 105, 106}));
}

TEST(TfDocExamplesTest, ShuffleIsAPermutationPerEpoch) {
  auto got = Values(Range(3).Shuffle(3, 11, /*reshuffle_each_iteration=*/true).Repeat(2));
  ASSERT_EQ(got.size(), 6u);
  Ints64 first(got.begin(), got.begin() + 3), second(got.begin() + 3, got.end());
  std::sort(first.begin(), first.end());
  std::sort(second.begin(), second.end());
  EXPECT_EQ(first, (Ints64{0, 1, 2}));
  EXPECT_EQ(second, (Ints64{0, 1, 2}));
  // Same seed, no reshuffle: both epochs in the same order.
  auto fixed = Values(Range(10).Shuffle(10, 11, false).Repeat(2));
  EXPECT_EQ(Ints64(fixed.begin(), fixed.begin() + 10), Ints64(fixed.begin() + 10, fixed.end()));
}

TEST(TfDocExamplesTest, CacheReplaysTheFirstPass) {
  auto squares = Range(5).Map([](int64_t x) { return x * x; }).Cache();
  EXPECT_EQ(Values(squares), (Ints64{0, 1, 4, 9, 16}));
  EXPECT_EQ(Values(squares.Repeat(2)), (Ints64{0, 1, 4, 9, 16, 0, 1, 4, 9, 16}));
}

TEST(TfDocExamplesTest, CardinalityRules) {
  EXPECT_EQ(Range(42).Cardinality(), 42);
  EXPECT_EQ(Range(42).Repeat().Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Range(42).Repeat().Take(5).Cardinality(), 5);
  EXPECT_EQ(Range(42).Repeat().Skip(5).Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Range(42).Repeat(3).Cardinality(), 126);
  EXPECT_EQ(Range(42).Repeat(0).Cardinality(), 0);
  EXPECT_EQ(Range(0).Repeat().Cardinality(), 0);
  EXPECT_EQ(Range(42).Filter([](int64_t x) { return x % 2 == 0; }).Cardinality(), kUnknownCardinality);
  // tf's RepeatDataset: count < 0 over anything but a known-empty input is infinite, even when unknown.
  EXPECT_EQ(Range(42).Filter([](int64_t) { return true; }).Repeat().Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Range(42).Filter([](int64_t) { return true; }).Repeat(3).Cardinality(), kUnknownCardinality);
  EXPECT_EQ(Range(42).Take(-1).Cardinality(), 42);
  EXPECT_EQ(Range(42).Take(100).Cardinality(), 42);
  EXPECT_EQ(Range(42).Skip(100).Cardinality(), 0);
  EXPECT_EQ(Range(42).Skip(-1).Cardinality(), 0);
  EXPECT_EQ(Range(42).Map([](int64_t x) { return x; }, 2).Cardinality(), 42);
  EXPECT_EQ(Range(42).Shuffle(10, 1).Cardinality(), 42);
  EXPECT_EQ(Range(42).Prefetch(2).Cardinality(), 42);
  EXPECT_EQ(Range(42).Enumerate().Cardinality(), 42);
  EXPECT_EQ(Range(42).Concatenate(Range(8)).Cardinality(), 50);
  EXPECT_EQ(Range(42).Concatenate(Range(8).Repeat()).Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Zip(Range(42), Range(8).Repeat()).Cardinality(), 42);
  EXPECT_EQ(Range(42).Cache().Cardinality(), 42);
  EXPECT_EQ(Range(42).TakeWhile([](int64_t) { return true; }).Cardinality(), kUnknownCardinality);
  EXPECT_EQ(Range(42).Batch(5).Repeat().Cardinality(), kInfiniteCardinality);
}

}  // namespace
}  // namespace tf_doc_examples_test_file
}  // namespace sluice
