// FromTensors and FromTensorSlices: tf.data's from_tensors / from_tensor_slices documentation examples,
// their errors, cardinality, and saving and restoring mid-way (full and compact).
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "tests/ops/checkpoint_helpers.h"
#include "tests/ops/test_helpers.h"

namespace sluice::from_tensors_test {
namespace {

using checkpoint_testing::Pull;
using test_ops::Collect;
using test_ops::Ints;
using test_ops::Values;
using ::testing::HasSubstr;
using Ints64 = std::vector<int64_t>;

// A [rows, cols] int64 tensor holding 0, 1, 2, ... row by row.
Tensor Counting(int64_t rows, int64_t cols) {
  Tensor t = Tensor::Empty(DType::kInt64, Shape({rows, cols}));
  int64_t* data = t.data<int64_t>();
  for (int64_t i = 0; i < rows * cols; ++i) data[i] = i;
  return t;
}

std::vector<Ints64> RowsOf(const std::vector<Tensor>& tensors) {
  std::vector<Ints64> out;
  for (const Tensor& t : tensors) out.push_back(Ints(t));
  return out;
}

// from_tensor_slices([1, 2, 3]) -> 1, 2, 3 (scalars).
TEST(FromTensorSlicesTest, VectorGivesScalars) {
  std::vector<Tensor> rows = Values(FromTensorSlices(Tensor::FromVector<int64_t>({1, 2, 3})));
  ASSERT_EQ(rows.size(), 3u);
  for (const Tensor& row : rows) EXPECT_EQ(row.shape().rank(), 0u);
  EXPECT_EQ(RowsOf(rows), (std::vector<Ints64>{{1}, {2}, {3}}));
}

// The case: a [4, 3] tensor gives four [3] rows, views of the value's buffer.
TEST(FromTensorSlicesTest, MatrixGivesRows) {
  const Tensor matrix = Counting(4, 3);
  Dataset<Tensor> ds = FromTensorSlices(matrix);
  EXPECT_EQ(ds.Cardinality(), 4);
  std::vector<Tensor> rows = Values(ds);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].shape(), Shape({3}));
  EXPECT_EQ(RowsOf(rows), (std::vector<Ints64>{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9, 10, 11}}));
  EXPECT_TRUE(rows[2].SharesBufferWith(matrix));
  // Every iteration starts again from row 0.
  EXPECT_EQ(RowsOf(Values(ds)), RowsOf(rows));
}

// from_tensor_slices(([1, 2], [3, 4], [5, 6])) -> (1, 3, 5), (2, 4, 6).
TEST(FromTensorSlicesTest, TupleSlicesEachComponent) {
  auto ds = FromTensorSlices(std::make_tuple(Tensor::FromVector<int64_t>({1, 2}),
                                             Tensor::FromVector<int64_t>({3, 4}),
                                             Tensor::FromVector<int64_t>({5, 6})));
  auto rows = Values(ds);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(Ints(std::get<0>(rows[0])), Ints64{1});
  EXPECT_EQ(Ints(std::get<1>(rows[0])), Ints64{3});
  EXPECT_EQ(Ints(std::get<2>(rows[0])), Ints64{5});
  EXPECT_EQ(Ints(std::get<0>(rows[1])), Ints64{2});
  EXPECT_EQ(Ints(std::get<1>(rows[1])), Ints64{4});
  EXPECT_EQ(Ints(std::get<2>(rows[1])), Ints64{6});
}

// The documentation's features and labels: a [3, 2] tensor and three strings.
TEST(FromTensorSlicesTest, FeaturesAndLabels) {
  Tensor features = Tensor::Empty(DType::kInt64, Shape({3, 2}));
  const int64_t values[] = {1, 3, 2, 1, 3, 3};
  for (int i = 0; i < 6; ++i) features.data<int64_t>()[i] = values[i];
  const Tensor labels = Tensor::FromVector<std::string>({"A", "B", "A"});
  auto rows = Values(FromTensorSlices(std::make_pair(features, labels)));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(Ints(rows[1].first), (Ints64{2, 1}));
  EXPECT_EQ(rows[1].second.data<std::string>()[0], "B");
  EXPECT_EQ(rows[2].second.shape().rank(), 0u);
}

TEST(FromTensorSlicesTest, InvalidValuesAreTheOneError) {
  auto scalar = Collect(FromTensorSlices(Tensor::Scalar<int64_t>(7)));
  ASSERT_EQ(scalar.size(), 1u);
  EXPECT_EQ(scalar[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(scalar[0].status().message(), HasSubstr("FromTensorSlices"));

  auto ragged =
      Collect(FromTensorSlices(std::make_tuple(Tensor::FromVector<int64_t>({1, 2, 3}), Counting(2, 2))));
  ASSERT_EQ(ragged.size(), 1u);
  EXPECT_EQ(ragged[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ragged[0].status().message(), HasSubstr("Component 0 had size 3 but component 1 had size 2"));
}

TEST(FromTensorSlicesTest, EmptyDimensionGivesNothing) {
  Dataset<Tensor> ds = FromTensorSlices(Tensor::Empty(DType::kFloat32, Shape({0, 5})));
  EXPECT_EQ(ds.Cardinality(), 0);
  EXPECT_TRUE(Values(ds).empty());
}

// from_tensors([1, 2, 3]) -> one [3] tensor; from_tensors(([1, 2, 3], 'A')) -> one pair.
TEST(FromTensorsTest, OneElement) {
  Dataset<Tensor> one = FromTensors(Tensor::FromVector<int64_t>({1, 2, 3}));
  EXPECT_EQ(one.Cardinality(), 1);
  EXPECT_EQ(RowsOf(Values(one)), (std::vector<Ints64>{{1, 2, 3}}));
  auto pair = Values(
      FromTensors(std::make_pair(Tensor::FromVector<int64_t>({1, 2, 3}), Tensor::Scalar<std::string>("A"))));
  ASSERT_EQ(pair.size(), 1u);
  EXPECT_EQ(Ints(pair[0].first), (Ints64{1, 2, 3}));
  EXPECT_EQ(pair[0].second.data<std::string>()[0], "A");
  // Any element type, as tf.data's nested structures.
  EXPECT_EQ(Values(FromTensors<int64_t>(5).Repeat(3)), (Ints64{5, 5, 5}));
}

// Batch of the slices is the value again, in pieces (tf.data's from_tensor_slices(x).batch(n)).
TEST(FromTensorSlicesTest, BatchOfSlices) {
  std::vector<Tensor> batches = Values(FromTensorSlices(Counting(5, 2)).Batch(2));
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].shape(), Shape({2, 2}));
  EXPECT_EQ(Ints(batches[1]), (Ints64{4, 5, 6, 7}));
  EXPECT_EQ(batches[2].shape(), Shape({1, 2}));
}

// Saved after `cut` rows, restored: the rest, row for row; in full and compact mode.
TEST(FromTensorSlicesTest, SaveAndRestoreMidway) {
  const Dataset<Tensor> ds = FromTensorSlices(Counting(6, 2)).Map([](Tensor t) { return t; });
  const std::vector<Ints64> all = RowsOf(Values(ds));
  for (bool compact : {false, true}) {
    Options options;
    options.compact_checkpoints = compact;
    for (size_t cut = 0; cut <= all.size(); ++cut) {
      Iterator<Tensor> it = ds.MakeIterator(options);
      auto prefix = Pull(it, cut);
      absl::StatusOr<std::string> state = it.SaveBlocking();
      ASSERT_TRUE(state.ok()) << state.status();
      absl::StatusOr<Iterator<Tensor>> restored = ds.RestoreIterator(*state, options);
      ASSERT_TRUE(restored.ok()) << restored.status();
      std::vector<Ints64> joined;
      for (auto& row : prefix) joined.push_back(Ints(*row));
      for (auto& row : Pull(*restored, 100)) {
        ASSERT_TRUE(row.ok()) << row.status();
        joined.push_back(Ints(*row));
      }
      EXPECT_EQ(joined, all) << "compact=" << compact << " cut=" << cut;
    }
  }
}

TEST(FromTensorsTest, SaveAndRestoreAfterTheElement) {
  const Dataset<Tensor> ds = FromTensors(Counting(2, 2)).Repeat(3);
  Iterator<Tensor> it = ds.MakeIterator();
  ASSERT_EQ(Pull(it, 2).size(), 2u);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  absl::StatusOr<Iterator<Tensor>> restored = ds.RestoreIterator(*state);
  ASSERT_TRUE(restored.ok()) << restored.status();
  auto rest = Pull(*restored, 10);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(Ints(*rest[0]), (Ints64{0, 1, 2, 3}));
}

// A state saved from another value's slices is refused, not restored into the wrong data.
TEST(FromTensorSlicesTest, RestoreIntoAnotherValueFails) {
  Iterator<Tensor> it = FromTensorSlices(Counting(4, 2)).MakeIterator();
  ASSERT_EQ(Pull(it, 1).size(), 1u);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  auto restored = FromTensorSlices(Counting(3, 2)).RestoreIterator(*state);
  ASSERT_FALSE(restored.ok());
  EXPECT_EQ(restored.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(restored.status().message(), HasSubstr("FromTensorSlices"));
}

}  // namespace
}  // namespace sluice::from_tensors_test
