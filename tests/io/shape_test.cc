#include "sluice/io/shape.h"

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace sluice {
namespace shape_test_file {
namespace {

std::vector<int64_t> Dims(const Shape& shape) { return shape.dims(); }

TEST(ShapeTest, ScalarByDefault) {
  Shape scalar;
  EXPECT_EQ(scalar.rank(), 0u);
  EXPECT_EQ(scalar.num_elements(), 1);
  EXPECT_TRUE(scalar.dims().empty());
  EXPECT_EQ(scalar.DebugString(), "[]");
  EXPECT_EQ(scalar, Shape({}));
}

// Every rank from scalar to well past the inline storage, so both representations and the boundary run.
TEST(ShapeTest, InlineAndHeapRanks) {
  for (size_t rank = 0; rank <= 2 * Shape::kInlineRank + 1; ++rank) {
    std::vector<int64_t> dims;
    for (size_t i = 0; i < rank; ++i) dims.push_back(static_cast<int64_t>(i + 2));
    const Shape shape(dims);
    ASSERT_EQ(shape.rank(), rank);
    EXPECT_EQ(Dims(shape), dims);
    int64_t product = 1;
    for (size_t i = 0; i < rank; ++i) {
      EXPECT_EQ(shape.dim(i), dims[i]);
      product *= dims[i];
    }
    EXPECT_EQ(shape.num_elements(), product);
    EXPECT_EQ(Shape(std::span<const int64_t>(dims)), shape);
  }
}

TEST(ShapeTest, CopyIsIndependent) {
  for (Shape original : {Shape({2, 3}), Shape({1, 2, 3, 4, 5, 6, 7})}) {
    Shape copy = original;
    EXPECT_EQ(copy, original);
    copy.set_dim(0, 9);
    EXPECT_EQ(original.dim(0), original.rank() == 2 ? 2 : 1);
    EXPECT_EQ(copy.dim(0), 9);
    EXPECT_NE(copy, original);
  }
}

TEST(ShapeTest, CopyAssignBetweenRepresentations) {
  const Shape small({4});
  const Shape large({1, 2, 3, 4, 5, 6});
  const Shape other_large({6, 5, 4, 3, 2, 1});
  Shape s = small;
  s = large;  // inline -> heap
  EXPECT_EQ(s, large);
  s = other_large;  // heap -> heap of the same rank
  EXPECT_EQ(s, other_large);
  s = small;  // heap -> inline
  EXPECT_EQ(s, small);
  const Shape& self = s;
  s = self;
  EXPECT_EQ(s, small);
}

TEST(ShapeTest, MovedFromIsAUsableScalar) {
  for (Shape original : {Shape({2, 3}), Shape({1, 2, 3, 4, 5, 6, 7})}) {
    const Shape expected = original;
    Shape moved = std::move(original);
    EXPECT_EQ(moved, expected);
    EXPECT_EQ(original.rank(), 0u);  // NOLINT(bugprone-use-after-move): the moved-from state is specified
    EXPECT_EQ(original.num_elements(), 1);
    original = Shape({8, 9});
    EXPECT_EQ(Dims(original), (std::vector<int64_t>{8, 9}));

    Shape assigned({7});
    assigned = std::move(moved);
    EXPECT_EQ(assigned, expected);
    EXPECT_EQ(moved.rank(), 0u);  // NOLINT(bugprone-use-after-move)
    moved = assigned;             // reusable as a copy target too
    EXPECT_EQ(moved, expected);
  }
}

TEST(ShapeTest, Equality) {
  EXPECT_EQ(Shape({2, 3}), Shape({2, 3}));
  EXPECT_NE(Shape({2, 3}), Shape({3, 2}));
  EXPECT_NE(Shape({2}), Shape({2, 1}));
  EXPECT_NE(Shape({}), Shape({1}));
  EXPECT_EQ(Shape({1, 2, 3, 4, 5}), Shape({1, 2, 3, 4, 5}));
  EXPECT_NE(Shape({1, 2, 3, 4, 5}), Shape({1, 2, 3, 4, 6}));
  EXPECT_NE(Shape({1, 2, 3, 4}), Shape({1, 2, 3, 4, 1}));
}

TEST(ShapeTest, LargeRank) {
  std::vector<int64_t> dims(200, 1);
  dims[199] = 5;
  Shape shape(dims);
  EXPECT_EQ(shape.rank(), 200u);
  EXPECT_EQ(shape.num_elements(), 5);
  Shape prepended = shape.Prepend(3);
  EXPECT_EQ(prepended.rank(), 201u);
  EXPECT_EQ(prepended.dim(0), 3);
  EXPECT_EQ(prepended.dim(200), 5);
  EXPECT_EQ(prepended.num_elements(), 15);
}

TEST(ShapeTest, PrependCrossesIntoTheHeap) {
  const Shape inline_full({1, 2, 3, 4});
  ASSERT_EQ(inline_full.rank(), Shape::kInlineRank);
  EXPECT_EQ(Dims(inline_full.Prepend(9)), (std::vector<int64_t>{9, 1, 2, 3, 4}));
  EXPECT_EQ(Dims(Shape().Prepend(5)), (std::vector<int64_t>{5}));
}

TEST(ShapeTest, Validity) {
  EXPECT_TRUE(Shape({0, 5}).IsValid());
  EXPECT_FALSE(Shape({2, -1}).IsValid());
  EXPECT_FALSE(Shape({std::numeric_limits<int64_t>::max(), 2}).IsValid());
  EXPECT_FALSE(Shape({1, 1, 1, 1, 1, -3}).IsValid());
  EXPECT_EQ(Shape({2, 3}).DebugString(), "[2,3]");
  EXPECT_EQ(Shape({1, 2, 3, 4, 5}).DebugString(), "[1,2,3,4,5]");
}

TEST(ShapeTest, DimsConvertToAVector) {
  const Shape shape({4, 5, 6});
  const std::vector<int64_t>& bound = shape.dims();  // a temporary copy, as ops bind it
  EXPECT_EQ(bound, (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(shape.dims().size(), 3u);
  EXPECT_EQ(shape.dims()[2], 6);
  EXPECT_EQ(std::vector<int64_t>(shape.dims().begin() + 1, shape.dims().end()), (std::vector<int64_t>{5, 6}));
}

}  // namespace
}  // namespace shape_test_file
}  // namespace sluice
