#include "sluice/ops/padded_batch.h"

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "tests/ops/test_helpers.h"

namespace sluice {
namespace padded_batch_test_file {
namespace {

using test_ops::Collect;
using test_ops::Fill;
using test_ops::Ints;
using test_ops::Values;

// tf.data's docstring example: range(1, 5).map(lambda x: tf.fill([x], x)).
Dataset<Tensor> Sequences(int64_t start, int64_t stop) { return Range(start, stop).Map(Fill); }

TEST(PaddedBatchTest, PadsToTheLongestInEachBatch) {
  auto got = Values(Sequences(1, 5).PaddedBatch(2));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].shape(), Shape({2, 2}));
  EXPECT_EQ(Ints(got[0]), (std::vector<int64_t>{1, 0, 2, 2}));
  EXPECT_EQ(got[1].shape(), Shape({2, 4}));
  EXPECT_EQ(Ints(got[1]), (std::vector<int64_t>{3, 3, 3, 0, 4, 4, 4, 4}));
}

TEST(PaddedBatchTest, FixedShapeAndCustomPaddingValue) {
  auto fixed = Values(Sequences(1, 5).PaddedBatch(2, {{5}}));
  ASSERT_EQ(fixed.size(), 2u);
  EXPECT_EQ(Ints(fixed[0]), (std::vector<int64_t>{1, 0, 0, 0, 0, 2, 2, 0, 0, 0}));
  auto custom = Values(Sequences(1, 5).PaddedBatch(2, {{5}}, {Tensor::Scalar<int64_t>(-1)}));
  ASSERT_EQ(custom.size(), 2u);
  EXPECT_EQ(Ints(custom[1]), (std::vector<int64_t>{3, 3, 3, -1, -1, 4, 4, 4, 4, -1}));
  auto unknown = Values(Sequences(1, 4).PaddedBatch(3, {{ops::kUnknownDim}}, {Tensor::Scalar<int64_t>(9)}));
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(Ints(unknown[0]), (std::vector<int64_t>{1, 9, 9, 2, 2, 9, 3, 3, 3}));
}

TEST(PaddedBatchTest, RemainderCardinalityAndTwoDimensions) {
  auto ds = Sequences(1, 6);
  EXPECT_EQ(Values(ds.PaddedBatch(2)).size(), 3u);
  EXPECT_EQ(Values(ds.PaddedBatch(2, {}, {}, /*drop_remainder=*/true)).size(), 2u);
  EXPECT_EQ(ds.PaddedBatch(2).Cardinality(), 3);
  EXPECT_EQ(ds.PaddedBatch(2, {}, {}, true).Cardinality(), 2);
  EXPECT_EQ(ds.Repeat().PaddedBatch(2).Cardinality(), kInfiniteCardinality);
  // [x, 2] matrices padded to [3, -1]: rows padded to 3, columns to the batch's widest (2).
  auto matrices = Range(1, 3).Map([](int64_t x) {
    std::vector<int64_t> v(static_cast<size_t>(2 * x), x);
    return *Tensor::FromVector<int64_t>(v).Reshape(Shape({x, 2}));
  });
  auto got = Values(matrices.PaddedBatch(2, {{3, -1}}));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].shape(), Shape({2, 3, 2}));
  EXPECT_EQ(Ints(got[0]), (std::vector<int64_t>{1, 1, 0, 0, 0, 0, 2, 2, 2, 2, 0, 0}));
}

TEST(PaddedBatchTest, StringsPadWithEmptyAndTuplesPadPerComponent) {
  auto words = FromVector<std::vector<std::string>>({{"a"}, {"b", "c"}}).Map([](std::vector<std::string> v) {
    return Tensor::FromVector<std::string>(v);
  });
  auto got = Values(words.PaddedBatch(2));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], *Tensor::FromVector<std::string>({"a", "", "b", "c"}).Reshape(Shape({2, 2})));
  auto pairs = Range(1, 4).Map([](int64_t x) { return std::make_tuple(Fill(x), Tensor::Scalar<float>(x)); });
  auto padded = Values(pairs.PaddedBatch(3, {{4}, {}}, {Tensor::Scalar<int64_t>(-1), Tensor::Scalar<float>(0)}));
  ASSERT_EQ(padded.size(), 1u);
  EXPECT_EQ(std::get<0>(padded[0]).shape(), Shape({3, 4}));
  EXPECT_EQ(std::get<1>(padded[0]), Tensor::FromVector<float>({1.f, 2.f, 3.f}));
}

TEST(PaddedBatchTest, NumbersAndTuplesWithNumbersPadAsBatchStacksThem) {
  // Numbers are rank-0: nothing to pad, so PaddedBatch stacks them as Batch does.
  auto numbers = Values(Range(5).PaddedBatch(2));
  ASSERT_EQ(numbers.size(), 3u);
  EXPECT_EQ(numbers[1], Tensor::FromVector<int64_t>({2, 3}));
  EXPECT_EQ(Values(Range(5).PaddedBatch(2, {{}}, {}, /*drop_remainder=*/true)).size(), 2u);
  // tf.data's (sequence, label) case: the sequence padded, the label number stacked.
  auto labelled = Range(1, 4).Map([](int64_t x) { return std::make_pair(Fill(x), x * 10); });
  auto got = Values(labelled.PaddedBatch(3));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].first.shape(), Shape({3, 3}));
  EXPECT_EQ(Ints(got[0].first), (std::vector<int64_t>{1, 0, 0, 2, 2, 0, 3, 3, 3}));
  EXPECT_EQ(got[0].second, Tensor::FromVector<int64_t>({10, 20, 30}));
  // A number's padded shape must be rank 0.
  auto wrong_rank = Collect(Range(3).PaddedBatch(2, {{4}}));
  ASSERT_FALSE(wrong_rank.empty());
  EXPECT_EQ(wrong_rank[0].status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PaddedBatchTest, ElementLargerThanPaddedShapeIsDataLoss) {
  // tf's padded_batch_test: [6, 5, 5, 5, 5] filled, padded to [5] -> DataLossError.
  auto ds = FromVector<int64_t>({6, 5, 5, 5, 5}).Map(Fill).PaddedBatch(4, {{5}});
  auto got = Collect(ds);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(got[0].status().message().find("Attempted to pad to a smaller size than the input element."),
            std::string::npos)
      << got[0].status();
  EXPECT_TRUE(got[1].ok());  // errors are elements; the stream goes on
}

TEST(PaddedBatchTest, RankAndDtypeMismatchesAreInvalidArgument) {
  auto rank = Collect(Sequences(1, 3).PaddedBatch(2, {{2, 2}}));
  ASSERT_EQ(rank.size(), 1u);
  EXPECT_EQ(rank[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(rank[0].status().message().find("expected rank 2 but got element with rank 1"), std::string::npos)
      << rank[0].status();
  auto mixed = Collect(Range(1, 3).Map([](int64_t x) { return x == 1 ? Fill(1) : Tensor::Scalar<int64_t>(2); })
                           .PaddedBatch(2));
  ASSERT_EQ(mixed.size(), 1u);
  EXPECT_EQ(mixed[0].status().code(), absl::StatusCode::kInvalidArgument);
  auto dtype = Collect(Sequences(1, 3).PaddedBatch(2, {}, {Tensor::Scalar<float>(1.f)}));
  ASSERT_EQ(dtype.size(), 1u);
  EXPECT_EQ(dtype[0].status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PaddedBatchTest, BadArgumentsMakeAnErrorDataset) {
  for (const Dataset<Tensor>& ds :
       {Sequences(1, 3).PaddedBatch(0), Sequences(1, 3).PaddedBatch(2, {{1}, {2}}),
        Sequences(1, 3).PaddedBatch(2, {{-2}}), Sequences(1, 3).PaddedBatch(2, {}, {Fill(2)}),
        Sequences(1, 3).PaddedBatch(2, {}, {Tensor::Scalar<int64_t>(0), Tensor::Scalar<int64_t>(0)})}) {
    auto got = Collect(ds);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].status().code(), absl::StatusCode::kInvalidArgument) << got[0].status();
  }
  auto failing = Range(1, 5).Map([](int64_t x) -> absl::StatusOr<Tensor> {
    if (x == 1) return absl::NotFoundError("gone");
    return Fill(x);
  });
  auto got = Collect(failing.PaddedBatch(2));
  ASSERT_EQ(got.size(), 3u);  // the error, [2 3], [4]
  EXPECT_EQ(got[0].status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(got[1]->shape(), Shape({2, 3}));
  EXPECT_EQ(got[2]->shape(), Shape({1, 4}));
}

TEST(PaddedBatchTest, DebugStringAndDestructionMidStream) {
  std::string s = Sequences(1, 3).PaddedBatch(2, {{5}}, {Tensor::Scalar<int64_t>(-1)}, true).DebugString();
  EXPECT_NE(s.find("PaddedBatch(batch_size=2, padded_shapes=[[5]]"), std::string::npos) << s;
  for (int round = 0; round < 10; ++round) {
    Iterator<Tensor> it = Sequences(1, 400).Prefetch(3).PaddedBatch(3).Prefetch(2).MakeIterator();
    for (int i = 0; i < round % 3; ++i) ASSERT_TRUE(it.NextBlocking().ok());
  }
}

}  // namespace
}  // namespace padded_batch_test_file
}  // namespace sluice
