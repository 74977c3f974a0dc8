#include "sluice/ops/rebatch.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "tests/ops/test_helpers.h"

namespace sluice {
namespace rebatch_op_test_file {
namespace {

using test_ops::Collect;
using test_ops::Ints;
using test_ops::Values;

Dataset<Tensor> Scalars(int64_t n) {
  return Range(n).Map([](int64_t x) { return Tensor::Scalar<int64_t>(x); });
}

std::vector<std::vector<int64_t>> AllInts(const std::vector<Tensor>& batches) {
  std::vector<std::vector<int64_t>> out;
  for (const Tensor& t : batches) out.push_back(Ints(t));
  return out;
}

using Rows = std::vector<std::vector<int64_t>>;

TEST(RebatchTest, TfDocExamples) {
  EXPECT_EQ(AllInts(Values(Scalars(6).Batch(2).Rebatch(3))), (Rows{{0, 1, 2}, {3, 4, 5}}));
  EXPECT_EQ(AllInts(Values(Scalars(7).Batch(4).Rebatch(3))), (Rows{{0, 1, 2}, {3, 4, 5}, {6}}));
  EXPECT_EQ(AllInts(Values(Scalars(7).Batch(2).Rebatch(3, /*drop_remainder=*/true))), (Rows{{0, 1, 2}, {3, 4, 5}}));
  EXPECT_EQ(AllInts(Values(Scalars(8).Batch(4).Rebatch(std::vector<int64_t>{2, 1, 1}))),
            (Rows{{0, 1}, {2}, {3}, {4, 5}, {6}, {7}}));
}

TEST(RebatchTest, ListFormRemainderAndZeroSizes) {
  EXPECT_EQ(AllInts(Values(Scalars(5).Batch(5).Rebatch(std::vector<int64_t>{2, 2}))), (Rows{{0, 1}, {2, 3}, {4}}));
  EXPECT_EQ(AllInts(Values(Scalars(5).Batch(5).Rebatch(std::vector<int64_t>{2, 2}, true))), (Rows{{0, 1}, {2, 3}}));
  auto with_zero = Values(Scalars(4).Batch(4).Rebatch(std::vector<int64_t>{2, 0}));
  ASSERT_EQ(with_zero.size(), 4u);
  EXPECT_EQ(with_zero[1].shape(), Shape({0}));
  EXPECT_EQ(Ints(with_zero[2]), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(Values(Scalars(0).Batch(4).Rebatch(3)).empty());
}

TEST(RebatchTest, SlicesShareTheInputBufferAndMergesCopy) {
  auto got = Values(Scalars(8).Batch(8).Rebatch(4));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].SharesBufferWith(got[1]));  // both views of the one input batch
  auto merged = Values(Scalars(6).Batch(2).Rebatch(3));
  EXPECT_FALSE(merged[0].SharesBufferWith(merged[1]));
}

TEST(RebatchTest, EqualsUnbatchThenBatchOverManySizes) {
  for (int64_t in : {1, 2, 3, 5, 8}) {
    for (int64_t out : {1, 2, 3, 4, 7, 16}) {
      for (bool drop : {false, true}) {
        auto rebatched = AllInts(Values(Scalars(23).Batch(in).Rebatch(out, drop)));
        auto reference = AllInts(Values(Scalars(23).Batch(in).Unbatch().Batch(out, drop)));
        EXPECT_EQ(rebatched, reference) << in << " -> " << out << " drop " << drop;
      }
    }
  }
}

TEST(RebatchTest, VectorsTuplesAndMultiDimensionalRows) {
  auto vectors = Values(Range(7).BatchVectors(3).Rebatch(2));
  ASSERT_EQ(vectors.size(), 4u);
  EXPECT_EQ(vectors[1], (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(vectors[3], (std::vector<int64_t>{6}));
  auto tuples = Values(Range(5).Map([](int64_t x) { return std::make_tuple(Tensor::FromVector<int64_t>({x, -x}), x); })
                           .Batch(2)
                           .Rebatch(3));
  ASSERT_EQ(tuples.size(), 2u);
  EXPECT_EQ(std::get<0>(tuples[0]).shape(), Shape({3, 2}));
  EXPECT_EQ(Ints(std::get<0>(tuples[0])), (std::vector<int64_t>{0, 0, 1, -1, 2, -2}));
  EXPECT_EQ(Ints(std::get<1>(tuples[1])), (std::vector<int64_t>{3, 4}));
}

TEST(RebatchTest, ErrorsAndCardinality) {
  for (const Dataset<Tensor>& ds : {Scalars(4).Batch(2).Rebatch(0), Scalars(4).Batch(2).Rebatch(-1),
                                    Scalars(4).Batch(2).Rebatch(std::vector<int64_t>{}),
                                    Scalars(4).Batch(2).Rebatch(std::vector<int64_t>{0, 0})}) {
    auto got = Collect(ds);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].status().code(), absl::StatusCode::kInvalidArgument);
  }
  // A scalar is not a batch; an input error passes through and the collected rows are kept.
  auto inputs = FromVector<Tensor>({Tensor::FromVector<int64_t>({0, 1}), Tensor::Scalar<int64_t>(7),
                                    Tensor::FromVector<int64_t>({2, 3})});
  auto got = Collect(inputs.Rebatch(3));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(got[0].status().message().find("Rebatch (element 0)"), std::string::npos) << got[0].status();
  EXPECT_EQ(Ints(*got[1]), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(Ints(*got[2]), (std::vector<int64_t>{3}));
  auto failing = Range(3).Map([](int64_t x) -> absl::StatusOr<Tensor> {
    if (x == 1) return absl::UnavailableError("flaky");
    return Tensor::FromVector<int64_t>({x, x});
  });
  auto passed = Collect(failing.Rebatch(3));
  ASSERT_EQ(passed.size(), 3u);
  EXPECT_EQ(passed[0].status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(Ints(*passed[2]), (std::vector<int64_t>{2}));
  EXPECT_EQ(Ints(*passed[1]), (std::vector<int64_t>{0, 0, 2}));
  EXPECT_EQ(passed[1]->shape(), Shape({3}));
  auto mixed = Collect(FromVector<Tensor>({Tensor::FromVector<int64_t>({1}), Tensor::FromVector<float>({1.f})}).Rebatch(2));
  ASSERT_EQ(mixed.size(), 1u);
  EXPECT_EQ(mixed[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Scalars(8).Batch(4).Rebatch(3).Cardinality(), kUnknownCardinality);
  EXPECT_EQ(Scalars(8).Batch(4).Repeat().Rebatch(3).Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Scalars(8).Batch(4).Rebatch(2, true).Unbatch().Cardinality(), kUnknownCardinality);
  EXPECT_NE(Scalars(8).Batch(4).Rebatch(std::vector<int64_t>{2, 1}).DebugString().find(
                "Rebatch(batch_sizes=[2, 1], drop_remainder=false)"),
            std::string::npos);
}

TEST(RebatchTest, ParsedExamplesAndDestructionMidStream) {
  ParseSpec spec;
  spec.fixed.push_back({"x", DType::kInt64, Shape({}), std::nullopt});
  spec.var.push_back({"v", DType::kFloat32});
  std::vector<std::string> records;
  for (int64_t i = 0; i < 7; ++i) {
    std::vector<float> v(static_cast<size_t>(i % 3), static_cast<float>(i));
    records.push_back(ExampleBuilder().AddInt64s("x", {i}).AddFloats("v", std::span<const float>(v)).Serialize());
  }
  auto batches = Values(FromVector(records).Batch(3).ParseExample(spec).Rebatch(2));
  ASSERT_EQ(batches.size(), 4u);
  EXPECT_EQ(Ints(batches[1].fixed[0]), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Ints(batches[1].var[0].row_lengths), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(batches[1].var[0].values, Tensor::FromVector<float>({2.f, 2.f}));
  EXPECT_EQ(Ints(batches[2].var[0].row_lengths), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(batches[2].var[0].values, Tensor::FromVector<float>({4.f, 5.f, 5.f}));
  for (int round = 0; round < 10; ++round) {
    Iterator<Tensor> it = Scalars(500).Prefetch(2).Batch(7).Prefetch(2).Rebatch(5).MakeIterator();
    for (int i = 0; i < round % 3; ++i) ASSERT_TRUE(it.NextBlocking().ok());
  }
}

}  // namespace
}  // namespace rebatch_op_test_file
}  // namespace sluice
