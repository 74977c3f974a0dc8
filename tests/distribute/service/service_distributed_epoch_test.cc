// distributed_epoch: the dispatcher hands out splits of the one splittable source, so each element is
// produced exactly once across the workers.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sluice/distribute/service.h"
#include "sluice/ops/library_functions.h"
#include "tests/distribute/service/service_test_util.h"
#include "tests/test_util.h"

namespace sluice::service {
namespace service_distributed_epoch_test_file {
namespace {

using testing::Cluster;
using testing::Drain;

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = i;
  return values;
}

TEST(ServiceDistributedEpochTest, RangeOverThreeWorkersYieldsEachElementExactlyOnce) {
  Cluster cluster = Cluster::Start(3);
  testing::Drained<int64_t> got =
      Drain(Range(10000).Distribute(cluster.Options(ProcessingMode::kDistributedEpoch)));
  EXPECT_TRUE(got.ended);
  EXPECT_TRUE(got.errors.empty()) << got.errors.front();
  std::sort(got.values.begin(), got.values.end());
  EXPECT_EQ(got.values, Iota(10000));
}

TEST(ServiceDistributedEpochTest, OpsAfterTheSourceRunOnceOverAllSplitsOfATask) {
  Cluster cluster = Cluster::Start(2);
  // Batch after the split source: a worker's batches span its splits (one pipeline per task).
  // The batches are int64[<=10] tensors, sent as tensors.
  testing::Drained<Tensor> got =
      Drain(Range(1000).Batch(10).Distribute(cluster.Options(ProcessingMode::kDistributedEpoch)));
  EXPECT_TRUE(got.ended);
  EXPECT_TRUE(got.errors.empty()) << got.errors.front();
  std::vector<int64_t> flat;
  for (const Tensor& batch : got.values) {
    EXPECT_EQ(batch.dtype(), DType::kInt64);
    flat.insert(flat.end(), batch.span<int64_t>().begin(), batch.span<int64_t>().end());
  }
  std::sort(flat.begin(), flat.end());
  EXPECT_EQ(flat, Iota(1000));
}

TEST(ServiceDistributedEpochTest, FileSourceIsSplitOneFilePerSplit) {
  std::vector<std::string> files;
  std::vector<std::string> expected;
  for (int f = 0; f < 7; ++f) {
    std::string text;
    for (int line = 0; line < 20; ++line) {
      const std::string value = absl::StrCat("file", f, "-line", line);
      absl::StrAppend(&text, value, "\n");
      expected.push_back(value);
    }
    files.push_back(testing_util::TempPath(absl::StrCat("service_split_", f, ".txt")));
    testing_util::WriteFile(files.back(), text);
  }
  Cluster cluster = Cluster::Start(3);
  testing::Drained<std::string> got =
      Drain(TextLines(files).Distribute(cluster.Options(ProcessingMode::kDistributedEpoch)));
  EXPECT_TRUE(got.ended);
  EXPECT_TRUE(got.errors.empty()) << got.errors.front();
  std::sort(got.values.begin(), got.values.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(got.values, expected);
}

// The 12 GZIP train shards TFX wrote for the Chicago taxi data (9,909 records): ListFiles is the split
// source, so each worker reads whole shards and every record arrives once.
TEST(ServiceDistributedEpochTest, TaxiShardsArriveExactlyOnce) {
  const std::string pattern =
      testing_util::SharedTFRecord("tfx_chicago_taxi_csv_example_gen/Split-train/*.gz");
  Dataset<std::string> records = ListFiles({pattern}).Interleave(kReadTFRecord.With(), /*cycle_length=*/2);
  std::vector<std::string> expected;
  for (absl::StatusOr<std::string> record : records.MakeIterator()) {
    ASSERT_TRUE(record.ok()) << record.status();
    expected.push_back(*std::move(record));
  }
  ASSERT_EQ(expected.size(), 9909u);
  Cluster cluster = Cluster::Start(3);
  testing::Drained<std::string> got =
      Drain(records.Distribute(cluster.Options(ProcessingMode::kDistributedEpoch)));
  EXPECT_TRUE(got.ended);
  EXPECT_TRUE(got.errors.empty()) << got.errors.front();
  std::sort(got.values.begin(), got.values.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_TRUE(got.values == expected) << got.values.size() << " records, expected " << expected.size();
}

TEST(ServiceDistributedEpochTest, FromVectorChunksCoverEveryValueOnce) {
  std::vector<std::string> values;
  for (int i = 0; i < 500; ++i) values.push_back(absl::StrCat("v", i));
  Cluster cluster = Cluster::Start(2);
  testing::Drained<std::string> got =
      Drain(FromVector(values).Distribute(cluster.Options(ProcessingMode::kDistributedEpoch)));
  EXPECT_TRUE(got.ended);
  EXPECT_TRUE(got.errors.empty()) << got.errors.front();
  std::sort(got.values.begin(), got.values.end());
  std::sort(values.begin(), values.end());
  EXPECT_EQ(got.values, values);
}

TEST(ServiceDistributedEpochTest, FromTensorSlicesChunksCoverEveryRowOnce) {
  const std::vector<int64_t> values = Iota(300);
  Cluster cluster = Cluster::Start(2);
  testing::Drained<int64_t> got = Drain(FromTensorSlices(Tensor::FromVector<int64_t>(values))
                                            .Distribute(cluster.Options(ProcessingMode::kDistributedEpoch))
                                            .Map([](Tensor row) { return row.data<int64_t>()[0]; }));
  EXPECT_TRUE(got.ended);
  EXPECT_TRUE(got.errors.empty()) << got.errors.front();
  std::sort(got.values.begin(), got.values.end());
  EXPECT_EQ(got.values, values);
}

TEST(ServiceDistributedEpochTest, SeveralSplittableSourcesAreRefusedNamingThem) {
  Cluster cluster = Cluster::Start(1);
  testing::Drained<int64_t> got =
      Drain(Range(5).Concatenate(Range(3)).Distribute(cluster.Options(ProcessingMode::kDistributedEpoch)));
  EXPECT_TRUE(got.ended);
  EXPECT_TRUE(got.values.empty());
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(got.errors[0].message().find("Range at /0"), std::string::npos) << got.errors[0];
  EXPECT_NE(got.errors[0].message().find("Range at /1"), std::string::npos) << got.errors[0];
}

}  // namespace
}  // namespace service_distributed_epoch_test_file
}  // namespace sluice::service
