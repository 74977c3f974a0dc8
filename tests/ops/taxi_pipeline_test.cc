// End to end over the real TFX Chicago taxi train split (12 GZIP shards, 9,909 tf.train.Examples):
// ListFiles -> Interleave(TFRecord GZIP) -> ParseExample -> Shuffle -> Batch -> Repeat(2).
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "sluice/io/example.h"
#include "tests/test_util.h"

namespace sluice {
namespace taxi_pipeline_test_file {
namespace {

constexpr int64_t kTrainRecords = 9909;
constexpr int64_t kBatch = 256;
constexpr int64_t kBatchesPerEpoch = (kTrainRecords + kBatch - 1) / kBatch;

std::string TrainShards() {
  return testing_util::SharedTFRecord("tfx_chicago_taxi_csv_example_gen/Split-train/*.gz");
}

Dataset<std::string> Records() {
  return ListFiles({TrainShards()}, /*shuffle=*/true, /*seed=*/3)
      .Interleave([](std::string file) { return TFRecord({file}, Compression::kGzip); }, /*cycle_length=*/4,
                  /*block_length=*/2);
}

// Real features with their real dtypes: always-present ints and strings as fixed scalars, nullable ones
// (CsvExampleGen writes an empty Feature for an empty CSV cell) as var-len.
ParseSpec TaxiSpec() {
  ParseSpec spec;
  spec.fixed.push_back({"trip_start_hour", DType::kInt64, Shape({}), std::nullopt});
  spec.fixed.push_back({"trip_start_day", DType::kInt64, Shape({}), std::nullopt});
  spec.fixed.push_back({"trip_start_month", DType::kInt64, Shape({}), std::nullopt});
  spec.fixed.push_back({"trip_start_timestamp", DType::kInt64, Shape({}), std::nullopt});
  spec.fixed.push_back({"payment_type", DType::kString, Shape({}), std::nullopt});
  spec.var.push_back({"fare", DType::kFloat32});
  spec.var.push_back({"trip_miles", DType::kFloat32});
  spec.var.push_back({"company", DType::kString});
  spec.var.push_back({"pickup_census_tract", DType::kInt64});
  return spec;
}

struct EpochTotals {
  int64_t records = 0;
  int64_t timestamp_sum = 0;  // the same records each epoch, whatever the order
};

// Checks one batch's layout and values; adds it to `totals`.
void CheckBatch(const ParsedExample& batch, const ParseSpec& spec, EpochTotals* totals) {
  const int64_t rows = BatchTraits<ParsedExample>::Rows(batch);
  ASSERT_GT(rows, 0);
  ASSERT_TRUE(BatchTraits<ParsedExample>::Validate(batch).ok());
  Tensor hour = *FeatureByKey(batch, spec, "trip_start_hour");
  Tensor day = *FeatureByKey(batch, spec, "trip_start_day");
  Tensor month = *FeatureByKey(batch, spec, "trip_start_month");
  Tensor timestamp = *FeatureByKey(batch, spec, "trip_start_timestamp");
  Tensor payment = *FeatureByKey(batch, spec, "payment_type");
  ASSERT_EQ(hour.shape(), Shape({rows}));
  ASSERT_EQ(payment.dtype(), DType::kString);
  ASSERT_EQ(payment.shape(), Shape({rows}));
  for (int64_t i = 0; i < rows; ++i) {
    const size_t r = static_cast<size_t>(i);
    ASSERT_GE(hour.span<int64_t>()[r], 0);
    ASSERT_LE(hour.span<int64_t>()[r], 23);
    ASSERT_GE(day.span<int64_t>()[r], 1);
    ASSERT_LE(day.span<int64_t>()[r], 7);
    ASSERT_GE(month.span<int64_t>()[r], 1);
    ASSERT_LE(month.span<int64_t>()[r], 12);
    ASSERT_FALSE(payment.span<std::string>()[r].empty());
    totals->timestamp_sum += timestamp.span<int64_t>()[r];
  }
  VarLenValues fare = *VarFeatureByKey(batch, spec, "fare");
  ASSERT_EQ(fare.values.dtype(), DType::kFloat32);
  ASSERT_EQ(fare.row_lengths.shape(), Shape({rows}));
  for (int64_t length : fare.row_lengths.span<int64_t>()) ASSERT_LE(length, 1);
  VarLenValues company = *VarFeatureByKey(batch, spec, "company");
  ASSERT_EQ(company.values.dtype(), DType::kString);
  totals->records += rows;
}

void RunTwoEpochs(const Dataset<ParsedExample>& ds, const ParseSpec& spec) {
  std::vector<EpochTotals> epochs(2);
  int64_t batches = 0;
  Iterator<ParsedExample> it = ds.MakeIterator();
  for (absl::StatusOr<ParsedExample> batch : it) {
    ASSERT_TRUE(batch.ok()) << batch.status();
    ASSERT_LT(batches, 2 * kBatchesPerEpoch);
    // Batch sits before Repeat, so each epoch is exactly kBatchesPerEpoch batches, the last one short.
    EpochTotals& epoch = epochs[static_cast<size_t>(batches / kBatchesPerEpoch)];
    CheckBatch(*batch, spec, &epoch);
    if (batches % kBatchesPerEpoch == kBatchesPerEpoch - 1) {
      EXPECT_EQ(BatchTraits<ParsedExample>::Rows(*batch), kTrainRecords % kBatch);
    }
    ++batches;
  }
  EXPECT_EQ(batches, 2 * kBatchesPerEpoch);
  EXPECT_EQ(epochs[0].records, kTrainRecords);
  EXPECT_EQ(epochs[1].records, kTrainRecords);
  EXPECT_EQ(epochs[0].timestamp_sum, epochs[1].timestamp_sum);
}

TEST(TaxiPipelineTest, ParseEachRecordThenShuffleAndBatch) {
  ParseSpec spec = TaxiSpec();
  auto ds = Records().ParseExample(spec).Shuffle(1000, /*seed=*/7).Batch(kBatch).Prefetch(2).Repeat(2);
  EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);  // file sources are unknown, as in tf.data
  RunTwoEpochs(ds, spec);
}

TEST(TaxiPipelineTest, ShuffleAndBatchRecordsThenParseVectorised) {
  ParseSpec spec = TaxiSpec();
  auto ds = Records().Shuffle(1000, /*seed=*/7).Batch(kBatch).ParseExample(spec).Prefetch(2).Repeat(2);
  RunTwoEpochs(ds, spec);
}

// Sanitizer builds read half the shards (00..05, 4,954 records per the data's sidecar) to stay fast.
#if defined(SLUICE_SANITIZED_BUILD)
constexpr int64_t kSubsetShards = 6;
constexpr int64_t kSubsetRecords = 826 + 826 + 826 + 825 + 826 + 825;
#else
constexpr int64_t kSubsetShards = 12;
constexpr int64_t kSubsetRecords = kTrainRecords;
#endif

Dataset<std::string> SubsetRecords() {
  return ListFiles({TrainShards()}, /*shuffle=*/false)
      .Take(kSubsetShards)
      .Interleave([](std::string file) { return TFRecord({file}, Compression::kGzip); }, 3, 1);
}

TEST(TaxiPipelineTest, UnbatchAndRebatchKeepEveryRecord) {
  ParseSpec spec = TaxiSpec();
  auto batches = SubsetRecords().Batch(100).ParseExample(spec).Rebatch(kBatch);
  int64_t records = 0;
  int64_t full = 0;
  for (const absl::StatusOr<ParsedExample>& batch : batches.MakeIterator()) {
    ASSERT_TRUE(batch.ok()) << batch.status();
    const int64_t rows = BatchTraits<ParsedExample>::Rows(*batch);
    full += rows == kBatch ? 1 : 0;
    records += rows;
  }
  EXPECT_EQ(records, kSubsetRecords);
  EXPECT_EQ(full, kSubsetRecords / kBatch);
  int64_t rows = 0;
  for (const absl::StatusOr<ParsedExample>& row :
       SubsetRecords().Batch(500).ParseExample(spec).Unbatch().MakeIterator()) {
    ASSERT_TRUE(row.ok()) << row.status();
    ASSERT_EQ(row->fixed[0].shape(), Shape({}));
    ++rows;
  }
  EXPECT_EQ(rows, kSubsetRecords);
}

}  // namespace
}  // namespace taxi_pipeline_test_file
}  // namespace sluice
