#include "sluice/batching.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace sluice {
namespace {

static_assert(IsBatchable<std::vector<int>>);
static_assert(IsBatchable<Tensor>);
static_assert(!IsBatchable<int>);

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

}  // namespace
}  // namespace sluice
