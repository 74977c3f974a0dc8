#include "sluice/ops/batch.h"

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "sluice/io/example.h"
#include "tests/ops/test_helpers.h"

namespace sluice {
namespace batch_tensor_test_file {
namespace {

using test_ops::Collect;
using test_ops::Ints;
using test_ops::Values;

static_assert(std::is_same_v<Batched<Tensor>, Tensor>);
static_assert(std::is_same_v<Batched<int64_t>, Tensor>);
static_assert(std::is_same_v<Batched<bool>, Tensor>);
static_assert(std::is_same_v<Batched<BFloat16>, Tensor>);
static_assert(std::is_same_v<Batched<std::string>, std::vector<std::string>>);
static_assert(std::is_same_v<Batched<std::tuple<Tensor, int64_t>>, std::tuple<Tensor, Tensor>>);
static_assert(std::is_same_v<Batched<std::pair<float, Tensor>>, std::pair<Tensor, Tensor>>);
static_assert(std::is_same_v<Batched<std::tuple<int64_t, int64_t>>, std::tuple<Tensor, Tensor>>);
static_assert(std::is_same_v<Batched<std::pair<int64_t, double>>, std::pair<Tensor, Tensor>>);
static_assert(
    std::is_same_v<Batched<std::tuple<int64_t, std::string>>, std::vector<std::tuple<int64_t, std::string>>>);
static_assert(std::is_same_v<Batched<std::vector<int64_t>>, std::vector<std::vector<int64_t>>>);
static_assert(std::is_same_v<Batched<std::tuple<Tensor, std::string>>, std::vector<std::tuple<Tensor, std::string>>>);
static_assert(std::is_same_v<Batched<ParsedExample>, ParsedExample>);

Tensor Row(int64_t x) { return Tensor::FromVector<int64_t>({x, 10 * x}); }

Dataset<Tensor> Rows(int64_t n) {
  return Range(n).Map([](int64_t x) { return Row(x); });
}

TEST(BatchTensorTest, StacksIntoOneAlignedBufferInOrderWithRemainder) {
  auto got = Values(Rows(7).Batch(3));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].shape(), Shape({3, 2}));
  EXPECT_EQ(Ints(got[0]), (std::vector<int64_t>{0, 0, 1, 10, 2, 20}));
  EXPECT_EQ(got[2].shape(), Shape({1, 2}));
  EXPECT_EQ(Ints(got[2]), (std::vector<int64_t>{6, 60}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(got[1].raw_data()) % Tensor::kAlignment, 0u);
  auto dropped = Values(Rows(7).Batch(3, /*drop_remainder=*/true));
  ASSERT_EQ(dropped.size(), 2u);
  EXPECT_EQ(Rows(7).Batch(3).Cardinality(), 3);
  EXPECT_EQ(Rows(7).Batch(3, true).Cardinality(), 2);
  EXPECT_EQ(Rows(7).Repeat().Batch(3).Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Rows(7).Filter([](const Tensor&) { return true; }).Batch(3).Cardinality(), kUnknownCardinality);
}

TEST(BatchTensorTest, StringAndScalarTensors) {
  auto strings = Values(FromVector<std::string>({"a", "bb", "ccc"}).Map([](std::string s) {
                          return Tensor::Scalar<std::string>(s);
                        }).Batch(2));
  ASSERT_EQ(strings.size(), 2u);
  EXPECT_EQ(strings[0], Tensor::FromVector<std::string>({"a", "bb"}));
  EXPECT_EQ(strings[1], Tensor::FromVector<std::string>({"ccc"}));
  auto scalars = Values(Range(4).Map([](int64_t x) { return Tensor::Scalar<float>(x * 0.5f); }).Batch(4));
  ASSERT_EQ(scalars.size(), 1u);
  EXPECT_EQ(scalars[0], Tensor::FromVector<float>({0.f, 0.5f, 1.f, 1.5f}));
}

TEST(BatchTensorTest, DifferentShapesOrDtypesAreAnErrorNamingBoth) {
  auto ds = Range(1, 6).Map([](int64_t x) { return x == 4 ? Tensor::FromVector<int64_t>({1, 2, 3, 4}) : Row(x); });
  auto got = Collect(ds.Batch(2));
  ASSERT_EQ(got.size(), 3u);  // the error does not end the stream
  EXPECT_TRUE(got[0].ok());
  ASSERT_FALSE(got[1].ok());
  EXPECT_EQ(got[1].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(got[1].status().message().find("Cannot batch tensors with different shapes in component 0. First "
                                           "element had shape [2] and element 1 had shape [4]."),
            std::string::npos)
      << got[1].status();
  EXPECT_NE(got[1].status().message().find("Batch (element 1)"), std::string::npos) << got[1].status();
  EXPECT_TRUE(got[2].ok());
  auto dtypes = Collect(Range(2).Map([](int64_t x) {
                          return x == 0 ? Tensor::Scalar<int64_t>(x) : Tensor::Scalar<float>(1.f);
                        }).Batch(2));
  ASSERT_EQ(dtypes.size(), 1u);
  EXPECT_NE(dtypes[0].status().message().find("different dtypes"), std::string::npos) << dtypes[0].status();
}

TEST(BatchTensorTest, BadArgumentsAndInputErrors) {
  auto zero = Collect(Rows(3).Batch(0));
  ASSERT_EQ(zero.size(), 1u);
  EXPECT_EQ(zero[0].status().code(), absl::StatusCode::kInvalidArgument);
  auto bad_parallel = Collect(Rows(3).Batch(2, false, -5));
  ASSERT_EQ(bad_parallel.size(), 1u);
  EXPECT_EQ(bad_parallel[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Values(Rows(3).Batch(2, false, kAutotune)).size(), 2u);
  auto failing = Range(6).Map([](int64_t x) -> absl::StatusOr<Tensor> {
    if (x == 2) return absl::DataLossError("bad record");
    return Row(x);
  });
  auto got = Collect(failing.Batch(3));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].status().code(), absl::StatusCode::kDataLoss);
  ASSERT_TRUE(got[1].ok());
  EXPECT_EQ(Ints(*got[1]), (std::vector<int64_t>{3, 30, 4, 40, 5, 50}));
}

TEST(BatchTensorTest, TuplesOfTensorsAndScalars) {
  auto ds = Range(5).Map([](int64_t x) { return std::make_tuple(Row(x), x, static_cast<float>(x) / 2); });
  auto got = Values(ds.Batch(2));
  ASSERT_EQ(got.size(), 3u);
  const auto& [rows, labels, halves] = got[1];
  EXPECT_EQ(rows.shape(), Shape({2, 2}));
  EXPECT_EQ(Ints(rows), (std::vector<int64_t>{2, 20, 3, 30}));
  EXPECT_EQ(labels, Tensor::FromVector<int64_t>({2, 3}));
  EXPECT_EQ(halves, Tensor::FromVector<float>({1.f, 1.5f}));
  auto pairs = Values(Range(3).Map([](int64_t x) { return std::make_pair(x == 1, Row(x)); }).Batch(3));
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].first, Tensor::FromVector<bool>({false, true, false}));
  EXPECT_EQ(pairs[0].second.shape(), Shape({3, 2}));
  // Back again: rows of each component, scalars as rank-0 tensors.
  auto rows_again = Values(ds.Batch(2).Unbatch());
  ASSERT_EQ(rows_again.size(), 5u);
  EXPECT_EQ(std::get<0>(rows_again[4]), Row(4));
  EXPECT_EQ(std::get<1>(rows_again[4]), Tensor::Scalar<int64_t>(4));
  EXPECT_EQ(std::get<2>(rows_again[3]), Tensor::Scalar<float>(1.5f));
}

TEST(BatchTensorTest, NumbersAndTuplesOfNumbersBatchComponentWise) {
  // tf.data: range(5).map(lambda x: (x, x)).batch(2) -> ([0 1], [0 1]), ([2 3], [2 3]), ([4], [4]).
  auto pairs = Values(Range(5).Map([](int64_t x) { return std::make_pair(x, x); }).Batch(2));
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[1].first, Tensor::FromVector<int64_t>({2, 3}));
  EXPECT_EQ(pairs[1].second, Tensor::FromVector<int64_t>({2, 3}));
  EXPECT_EQ(pairs[2].first.shape(), Shape({1}));
  // Mixed dtypes keep each component's own: int64 and double.
  auto mixed =
      Values(Range(3).Map([](int64_t x) { return std::make_tuple(x, x * 0.25, x % 2 == 0); }).Batch(3));
  ASSERT_EQ(mixed.size(), 1u);
  EXPECT_EQ(std::get<0>(mixed[0]), Tensor::FromVector<int64_t>({0, 1, 2}));
  EXPECT_EQ(std::get<1>(mixed[0]), Tensor::FromVector<double>({0, 0.25, 0.5}));
  EXPECT_EQ(std::get<2>(mixed[0]), Tensor::FromVector<bool>({true, false, true}));
  // Enumerate's (index, value) pairs: an index tensor and a value tensor, as tf.data's enumerate().batch().
  auto enumerated = Values(Range(10, 13).Enumerate().Batch(3));
  ASSERT_EQ(enumerated.size(), 1u);
  EXPECT_EQ(enumerated[0].first, Tensor::FromVector<int64_t>({0, 1, 2}));
  EXPECT_EQ(enumerated[0].second, Tensor::FromVector<int64_t>({10, 11, 12}));
  // Half and bfloat16 numbers stack into tensors of their dtype.
  auto halves =
      Values(Range(2).Map([](int64_t x) { return FloatToBFloat16(static_cast<float>(x) + 0.5f); }).Batch(2));
  ASSERT_EQ(halves.size(), 1u);
  EXPECT_EQ(halves[0].dtype(), DType::kBFloat16);
  EXPECT_EQ(BFloat16ToFloat(halves[0].span<BFloat16>()[1]), 1.5f);
  // The parallel stacking gives the same tensors.
  EXPECT_EQ(Values(Range(7).Batch(3, false, kAutotune)), Values(Range(7).Batch(3)));
  // Unbatch gives the numbers back as rank-0 tensors, as tf.data's unbatch.
  auto rows = Values(Range(5).Map([](int64_t x) { return std::make_pair(x, x * 10); }).Batch(2).Unbatch());
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[3].first, Tensor::Scalar<int64_t>(3));
  EXPECT_EQ(rows[3].second, Tensor::Scalar<int64_t>(30));
}

TEST(BatchTensorTest, OtherElementsStayVectorsAndBatchVectorsKeepsAnyElementAsOne) {
  // A tuple with a component that is neither a Tensor nor a number: a vector of the tuples.
  auto got = Values(Range(3).Map([](int64_t x) { return std::make_tuple(x, std::to_string(x)); }).Batch(2));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].size(), 2u);
  EXPECT_EQ(std::get<1>(got[1][0]), "2");
  // BatchVectors: the same groups for numbers, tuples of numbers and tensors.
  auto numbers = Values(Range(5).Map([](int64_t x) { return std::make_pair(x, x + 1); }).BatchVectors(2));
  ASSERT_EQ(numbers.size(), 3u);
  EXPECT_EQ(numbers[1], (std::vector<std::pair<int64_t, int64_t>>{{2, 3}, {3, 4}}));
  auto tensors = Values(Rows(3).BatchVectors(2, /*drop_remainder=*/true));
  ASSERT_EQ(tensors.size(), 1u);
  ASSERT_EQ(tensors[0].size(), 2u);
  EXPECT_EQ(tensors[0][1], Row(1));
}

TEST(UnbatchTensorTest, RowsAreViewsOfTheBatchAndCardinalityFollowsStaticBatchSize) {
  auto batches = Values(Rows(4).Batch(4));
  ASSERT_EQ(batches.size(), 1u);
  auto rows = Values(Rows(7).Batch(3).Unbatch());
  ASSERT_EQ(rows.size(), 7u);
  for (int64_t i = 0; i < 7; ++i) EXPECT_EQ(rows[static_cast<size_t>(i)], Row(i));
  auto one = Values(FromVector<Tensor>({batches[0]}).Unbatch());
  ASSERT_EQ(one.size(), 4u);
  EXPECT_TRUE(one[2].SharesBufferWith(batches[0]));
  EXPECT_EQ(Rows(7).Batch(3, true).Unbatch().Cardinality(), 6);
  EXPECT_EQ(Rows(7).Batch(3).Unbatch().Cardinality(), kUnknownCardinality);
  EXPECT_EQ(Rows(7).Repeat().Batch(3).Unbatch().Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Range(7).Batch(2, true).Unbatch().Cardinality(), 6);
  EXPECT_EQ(Values(Range(7).Batch(3).Unbatch()).size(), 7u);
}

TEST(UnbatchTensorTest, ScalarsAndRaggedTuplesAreErrors) {
  auto scalar = Collect(FromVector<Tensor>({Tensor::Scalar<int64_t>(1), Tensor::FromVector<int64_t>({2, 3})}).Unbatch());
  ASSERT_EQ(scalar.size(), 3u);
  EXPECT_EQ(scalar[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(scalar[0].status().message().find("Unbatch (element 0)"), std::string::npos) << scalar[0].status();
  EXPECT_EQ(*scalar[2], Tensor::Scalar<int64_t>(3));
  auto ragged = Collect(FromVector<std::pair<Tensor, Tensor>>(
                            {{Tensor::FromVector<int64_t>({1, 2, 3}), Tensor::FromVector<int64_t>({1, 2})}})
                            .Unbatch());
  ASSERT_EQ(ragged.size(), 1u);
  EXPECT_NE(ragged[0].status().message().find("Component 0 had size 3 but component 1 had size 2"),
            std::string::npos)
      << ragged[0].status();
  auto empty = Values(FromVector<Tensor>({Tensor::Zeros(DType::kFloat32, Shape({0, 3}))}).Unbatch());
  EXPECT_TRUE(empty.empty());
}

ParseSpec TestSpec() {
  ParseSpec spec;
  spec.fixed.push_back({"label", DType::kInt64, Shape({}), std::nullopt});
  spec.fixed.push_back({"pos", DType::kFloat32, Shape({2}), Tensor::FromVector<float>({0.f, 0.f})});
  spec.var.push_back({"tags", DType::kString});
  return spec;
}

std::string Record(int64_t i) {
  ExampleBuilder b;
  b.AddInt64s("label", {i}).AddFloats("pos", {static_cast<float>(i), 1.f});
  std::vector<std::string> tags;
  for (int64_t t = 0; t < i % 3; ++t) tags.push_back(absl::StrCat("t", i, "_", t));
  b.AddBytes("tags", std::span<const std::string>(tags));
  return b.Serialize();
}

TEST(BatchParsedExampleTest, StackedLikeParseExampleBatchAndUnbatchedBack) {
  ParseSpec spec = TestSpec();
  std::vector<std::string> records;
  for (int64_t i = 0; i < 5; ++i) records.push_back(Record(i));
  auto per_record = FromVector(records).ParseExample(spec);
  auto batched = Values(per_record.Batch(5));
  ASSERT_EQ(batched.size(), 1u);
  std::vector<std::string_view> views(records.begin(), records.end());
  absl::StatusOr<ParsedExample> expected = ParseExampleBatch(views, spec);
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_EQ(batched[0].fixed.size(), 2u);
  EXPECT_EQ(batched[0].fixed[0], expected->fixed[0]);
  EXPECT_EQ(batched[0].fixed[1], expected->fixed[1]);
  EXPECT_EQ(batched[0].var[0].values, expected->var[0].values);
  EXPECT_EQ(batched[0].var[0].row_lengths, expected->var[0].row_lengths);
  EXPECT_EQ(BatchTraits<ParsedExample>::Rows(batched[0]), 5);
  auto rows = Values(per_record.Batch(2).Unbatch());
  auto direct = Values(per_record);
  ASSERT_EQ(rows.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(rows[i].fixed[0], direct[i].fixed[0]) << i;
    EXPECT_EQ(rows[i].fixed[1], direct[i].fixed[1]) << i;
    EXPECT_EQ(rows[i].var[0].values, direct[i].var[0].values) << i;
    EXPECT_EQ(rows[i].var[0].row_lengths, direct[i].var[0].row_lengths) << i;
  }
}

TEST(BatchDestructionTest, DestroyedMidStreamWithWorkInFlight) {
  // Prefetch puts a producer on the pool; destroying the iterators mid-batch must join it cleanly.
  for (int round = 0; round < 20; ++round) {
    auto ds = Rows(1000).Prefetch(4).Batch(7).Prefetch(2).Unbatch().Batch(5);
    Iterator<Tensor> it = ds.MakeIterator();
    for (int i = 0; i < round % 4; ++i) ASSERT_TRUE(it.NextBlocking().ok());
  }
}

}  // namespace
}  // namespace batch_tensor_test_file
}  // namespace sluice
