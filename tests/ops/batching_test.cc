#include "sluice/ops/batching.h"

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace sluice {
namespace batching_test_file {
namespace {

static_assert(IsBatchable<std::vector<int>>);
static_assert(IsBatchable<Tensor>);
static_assert(!IsBatchable<int>);
static_assert(IsConcatenable<std::tuple<Tensor, Tensor>>);
static_assert(IsConcatenable<std::pair<Tensor, Tensor>>);
static_assert(IsConcatenable<ParsedExample>);
static_assert(IsConcatenable<std::vector<std::string>>);
static_assert(!IsBatchable<std::tuple<Tensor, int>>);

TEST(BatchTraitsTest, VectorRowsAndSlices) {
  std::vector<std::string> batch = {"a", "b", "c", "d"};
  EXPECT_EQ(BatchTraits<std::vector<std::string>>::Rows(batch), 4);
  EXPECT_EQ(*BatchTraits<std::vector<std::string>>::Slice(batch, 1, 3), (std::vector<std::string>{"b", "c"}));
  EXPECT_TRUE(BatchTraits<std::vector<std::string>>::Slice(batch, 4, 4)->empty());
  std::vector<std::string> moved = *BatchTraits<std::vector<std::string>>::Slice(std::move(batch), 2, 4);
  EXPECT_EQ(moved, (std::vector<std::string>{"c", "d"}));
}

TEST(BatchTraitsTest, VectorRejectsBadRanges) {
  std::vector<int> batch = {1, 2, 3};
  EXPECT_EQ(BatchTraits<std::vector<int>>::Slice(batch, 2, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BatchTraits<std::vector<int>>::Slice(batch, 0, 4).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BatchTraits<std::vector<int>>::Slice(batch, -1, 1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BatchTraitsTest, TensorSlicesShareRows) {
  Tensor batch = Tensor::FromVector<int64_t>({0, 1, 2, 3, 4, 5});
  batch = *batch.Reshape(Shape({3, 2}));
  EXPECT_EQ(BatchTraits<Tensor>::Rows(batch), 3);
  Tensor tail = *BatchTraits<Tensor>::Slice(batch, 1, 3);
  EXPECT_EQ(tail.shape(), Shape({2, 2}));
  EXPECT_EQ(tail.span<int64_t>()[0], 2);
  EXPECT_TRUE(tail.SharesBufferWith(batch));
  EXPECT_EQ(BatchTraits<Tensor>::Slice(batch, 0, 4).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BatchTraits<Tensor>::Rows(Tensor::Scalar<int64_t>(7)), 0);
}

TEST(BatchTraitsTest, ConcatVectorsAndTensors) {
  EXPECT_EQ(*BatchTraits<std::vector<int>>::Concat({{1, 2}, {}, {3}}), (std::vector<int>{1, 2, 3}));
  Tensor a = *Tensor::FromVector<int64_t>({0, 1, 2, 3}).Reshape(Shape({2, 2}));
  Tensor b = *Tensor::FromVector<int64_t>({4, 5}).Reshape(Shape({1, 2}));
  Tensor joined = *BatchTraits<Tensor>::Concat({a, b});
  EXPECT_EQ(joined, *Tensor::FromVector<int64_t>({0, 1, 2, 3, 4, 5}).Reshape(Shape({3, 2})));
  EXPECT_TRUE(BatchTraits<Tensor>::Concat({a})->SharesBufferWith(a));
  EXPECT_EQ(BatchTraits<Tensor>::Concat({}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BatchTraits<Tensor>::Concat({a, Tensor::FromVector<int64_t>({1, 2, 3})}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BatchTraits<Tensor>::Concat({a, Tensor::Scalar<int64_t>(1)}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BatchTraits<Tensor>::Concat({Tensor::FromVector<std::string>({"x"}), Tensor::FromVector<std::string>({"y"})})
                .value(),
            Tensor::FromVector<std::string>({"x", "y"}));
}

TEST(StackBatchTest, TensorsTuplesAndErrors) {
  std::vector<Tensor> rows = {Tensor::FromVector<float>({1, 2}), Tensor::FromVector<float>({3, 4})};
  Tensor stacked = *ops::StackBatch<Tensor>(std::move(rows));
  EXPECT_EQ(stacked, *Tensor::FromVector<float>({1, 2, 3, 4}).Reshape(Shape({2, 2})));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(stacked.raw_data()) % Tensor::kAlignment, 0u);
  std::vector<Tensor> mismatched = {Tensor::FromVector<float>({1, 2, 3}), Tensor::FromVector<float>({1}),
                                    Tensor::FromVector<float>({1, 2, 3, 4})};
  absl::Status error = ops::StackBatch<Tensor>(std::move(mismatched)).status();
  EXPECT_EQ(error.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(error.message(),
            "Cannot batch tensors with different shapes in component 0. First element had shape [3] and element 1 "
            "had shape [1].");
  EXPECT_EQ(ops::StackBatch<Tensor>({}).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<std::tuple<Tensor, int32_t>> pairs = {{Tensor::Scalar<double>(0.5), 1}, {Tensor::Scalar<double>(1.5), 2}};
  auto [x, y] = *ops::StackBatch<std::tuple<Tensor, int32_t>>(std::move(pairs));
  EXPECT_EQ(x, Tensor::FromVector<double>({0.5, 1.5}));
  EXPECT_EQ(y, Tensor::FromVector<int32_t>({1, 2}));
  std::vector<std::string> words = {"a", "b"};
  EXPECT_EQ(*ops::StackBatch<std::string>(std::move(words)), (std::vector<std::string>{"a", "b"}));
}

TEST(BatchTraitsTest, TupleRowsSlicesAndValidation) {
  using Pair = std::pair<Tensor, Tensor>;
  Pair batch{*Tensor::FromVector<int64_t>({0, 1, 2, 3, 4, 5}).Reshape(Shape({3, 2})),
             Tensor::FromVector<std::string>({"a", "b", "c"})};
  EXPECT_EQ(BatchTraits<Pair>::Rows(batch), 3);
  Pair tail = *BatchTraits<Pair>::Slice(batch, 1, 3);
  EXPECT_EQ(tail.second, Tensor::FromVector<std::string>({"b", "c"}));
  EXPECT_TRUE(tail.first.SharesBufferWith(batch.first));
  EXPECT_EQ(BatchTraits<Pair>::Slice(batch, 2, 4).status().code(), absl::StatusCode::kInvalidArgument);
  Pair joined = *BatchTraits<Pair>::Concat({tail, batch});
  EXPECT_EQ(BatchTraits<Pair>::Rows(joined), 5);
  EXPECT_TRUE(BatchTraits<Pair>::Validate(batch).ok());
  Pair ragged{batch.first, Tensor::FromVector<std::string>({"a"})};
  EXPECT_EQ(BatchTraits<Pair>::Validate(ragged).code(), absl::StatusCode::kInvalidArgument);
  Pair scalar{batch.first, Tensor::Scalar<int64_t>(1)};
  EXPECT_EQ(BatchTraits<Pair>::Validate(scalar).code(), absl::StatusCode::kInvalidArgument);
}

TEST(BatchTraitsTest, ParsedExampleRowsSlicesAndConcat) {
  ParsedExample batch;
  batch.fixed.push_back(Tensor::FromVector<int64_t>({10, 11, 12}));
  batch.var.push_back({Tensor::FromVector<float>({1, 2, 3}), Tensor::FromVector<int64_t>({2, 0, 1})});
  EXPECT_EQ(BatchTraits<ParsedExample>::Rows(batch), 3);
  ASSERT_TRUE(BatchTraits<ParsedExample>::Validate(batch).ok());
  ParsedExample tail = *BatchTraits<ParsedExample>::Slice(batch, 1, 3);
  EXPECT_EQ(tail.fixed[0], Tensor::FromVector<int64_t>({11, 12}));
  EXPECT_EQ(tail.var[0].values, Tensor::FromVector<float>({3}));
  EXPECT_EQ(tail.var[0].row_lengths, Tensor::FromVector<int64_t>({0, 1}));
  ParsedExample joined = *BatchTraits<ParsedExample>::Concat({tail, batch});
  EXPECT_EQ(joined.fixed[0], Tensor::FromVector<int64_t>({11, 12, 10, 11, 12}));
  EXPECT_EQ(joined.var[0].values, Tensor::FromVector<float>({3, 1, 2, 3}));
  EXPECT_EQ(joined.var[0].row_lengths, Tensor::FromVector<int64_t>({0, 1, 2, 0, 1}));
  ParsedExample broken = batch;
  broken.var[0].row_lengths = Tensor::FromVector<int64_t>({2, 2, 1});
  EXPECT_EQ(BatchTraits<ParsedExample>::Validate(broken).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BatchTraits<ParsedExample>::Slice(broken, 0, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BatchTraits<ParsedExample>::Slice(batch, 0, 4).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace batching_test_file
}  // namespace sluice
