// Batch with num_parallel_calls: the same batches as the inline form, stacked on the pool.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "sluice/io/tensor.h"
#include "tests/ops/test_helpers.h"

namespace sluice {
namespace parallel_batch_test_file {
namespace {

using test_ops::Collect;

Tensor PairRow(int64_t x) { return Tensor::FromVector<int64_t>({x, x * 10}); }

TEST(ParallelBatchTest, DeterministicEqualsInlineForNumbersAndTensors) {
  Options options;
  options.thread_pool_size = 2;
  for (bool drop : {false, true}) {
    for (int64_t calls : {int64_t{2}, int64_t{3}, kAutotune}) {
      Dataset<int64_t> numbers = Range(1000);
      auto inline_numbers = Collect(numbers.Batch(7, drop), options);
      auto parallel_numbers = Collect(numbers.Batch(7, drop, calls), options);
      ASSERT_EQ(inline_numbers.size(), parallel_numbers.size()) << drop << " " << calls;
      for (size_t i = 0; i < inline_numbers.size(); ++i) {
        ASSERT_TRUE(parallel_numbers[i].ok());
        EXPECT_EQ(*inline_numbers[i], *parallel_numbers[i]) << "batch " << i;
      }
      Dataset<Tensor> rows = numbers.Map(PairRow);
      auto inline_tensors = Collect(rows.Batch(7, drop), options);
      auto parallel_tensors = Collect(rows.Batch(7, drop, calls), options);
      ASSERT_EQ(inline_tensors.size(), parallel_tensors.size());
      for (size_t i = 0; i < inline_tensors.size(); ++i) {
        ASSERT_TRUE(parallel_tensors[i].ok());
        EXPECT_EQ(*inline_tensors[i], *parallel_tensors[i]) << "batch " << i;
      }
    }
  }
}

TEST(ParallelBatchTest, NondeterministicKeepsEveryBatch) {
  Options options;
  options.thread_pool_size = 2;
  auto batches = Collect(Range(500).Batch(10, false, 2, /*deterministic=*/false), options);
  ASSERT_EQ(batches.size(), 50u);
  std::vector<int64_t> seen;
  for (const auto& b : batches) {
    ASSERT_TRUE(b.ok());
    std::vector<int64_t> values = test_ops::Ints(*b);
    ASSERT_EQ(values.size(), 10u);
    // Each batch is still ten consecutive elements: grouping happens in order before stacking.
    for (size_t j = 1; j < values.size(); ++j) EXPECT_EQ(values[j], values[0] + static_cast<int64_t>(j));
    seen.insert(seen.end(), values.begin(), values.end());
  }
  std::sort(seen.begin(), seen.end());
  for (int64_t i = 0; i < 500; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)], i);
}

TEST(ParallelBatchTest, ErrorsKeepTheirPlaceAndNameTheBatch) {
  // Element 5 fails in the map: the partial batch {4} is dropped and the error takes its place (tf.data).
  // Grouping goes on from 6: {6, 7, 8, 9} cannot be stacked (9 has another shape), then {10, 11}.
  auto make = [](int64_t x) -> absl::StatusOr<Tensor> {
    if (x == 5) return absl::DataLossError("bad record");
    if (x == 9) return Tensor::FromVector<int64_t>({x});
    return PairRow(x);
  };
  Options options;
  options.thread_pool_size = 2;
  auto batches = Collect(Range(12).Map(make).Batch(4, false, 2), options);
  ASSERT_EQ(batches.size(), 4u);
  EXPECT_TRUE(batches[0].ok());
  EXPECT_EQ(batches[1].status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(batches[2].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(batches[2].status().message().find("Batch (element 2)"), std::string::npos)
      << batches[2].status().message();
  ASSERT_TRUE(batches[3].ok());
  EXPECT_EQ(batches[3]->shape(), Shape({2, 2}));
}

TEST(ParallelBatchTest, CardinalityAndParams) {
  Dataset<Tensor> ds = Range(10).Batch(3, false, 2);
  EXPECT_EQ(ds.Cardinality(), 4);
  EXPECT_EQ(Range(10).Batch(3, true, kAutotune).Cardinality(), 3);
  EXPECT_NE(ds.DebugString().find("num_parallel_calls=2"), std::string::npos) << ds.DebugString();
  auto bad = Collect(Range(10).Batch(3, false, -7));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ParallelBatchTest, DestroyedMidStreamWithStackingInFlight) {
  Options options;
  options.thread_pool_size = 2;
  for (int round = 0; round < 20; ++round) {
    Iterator<Tensor> it = Range(100000).Map(PairRow).Batch(64, false, 2).MakeIterator(options);
    for (int i = 0; i < round % 4; ++i) ASSERT_TRUE(it.NextBlocking().ok());
  }
}

}  // namespace
}  // namespace parallel_batch_test_file
}  // namespace sluice
