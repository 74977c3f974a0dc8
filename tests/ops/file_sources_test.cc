#include "sluice/ops/file_sources.h"

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"
#include "sluice/ops/dataset.h"
#include "sluice/io/example.h"
#include "tests/ops/test_helpers.h"

namespace sluice {
namespace {

using test_ops::Collect;

std::string Shared(const std::string& relative) { return testing_util::SharedTFRecord(relative); }

TEST(ListFilesTest, SortedWithoutShuffleAndPermutedWithIt) {
  std::string pattern = Shared("tfx_chicago_taxi_csv_example_gen/Split-train/*.gz");
  auto sorted = Collect(ListFiles({pattern}, /*shuffle=*/false));
  ASSERT_EQ(sorted.size(), 12u);
  for (size_t i = 1; i < sorted.size(); ++i) EXPECT_LT(*sorted[i - 1], *sorted[i]);
  auto shuffled = Collect(ListFiles({pattern, pattern}, /*shuffle=*/true, 5));  // duplicates removed
  ASSERT_EQ(shuffled.size(), 12u);
  std::set<std::string> a, b;
  for (auto& x : sorted) a.insert(*x);
  for (auto& x : shuffled) b.insert(*x);
  EXPECT_EQ(a, b);
}

TEST(ListFilesTest, NoMatchIsAnErrorNamingThePattern) {
  auto got = Collect(ListFiles({Shared("nothing_here_*.tfrecord")}));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(got[0].status().message().find("nothing_here_"), std::string::npos);
}

TEST(TFRecordSourceTest, ReadsFilesInOrderAndReportsCorruption) {
  auto got = Collect(TFRecord({Shared("beam_foo.tfrecord"), Shared("beam_foo_bar.tfrecord")}));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(*got[0], "foo");
  EXPECT_EQ(*got[1], "foo");
  EXPECT_EQ(*got[2], "bar");
  auto corrupt = Collect(TFRecord({Shared("derived/beam_foo_bar_corrupt_data.tfrecord")}));
  ASSERT_EQ(corrupt.size(), 2u);
  EXPECT_EQ(corrupt[0].status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(*corrupt[1], "bar");
  auto missing = Collect(TFRecord({Shared("missing.tfrecord")}));
  ASSERT_FALSE(missing.empty());
  EXPECT_EQ(missing[0].status().code(), absl::StatusCode::kNotFound);
}

// The end-to-end pipeline over the TFX taxi train split: 9,909 records once per epoch.
TEST(EndToEndTest, TaxiShardsThroughInterleaveParseShuffleBatch) {
  ParseSpec spec;
  spec.var.push_back(VarLenFeature{"fare", DType::kFloat32});
  spec.var.push_back(VarLenFeature{"trip_seconds", DType::kInt64});
  auto ds = ListFiles({Shared("tfx_chicago_taxi_csv_example_gen/Split-train/*.gz")}, true, 1)
                .Interleave([](std::string file) { return TFRecord({file}, Compression::kGzip); }, 4, 1)
                .Map([spec](std::string record) { return ParseExample(record, spec); })
                .Shuffle(1000, 7)
                .Batch(256)
                .Prefetch(2)
                .Repeat(2);
  int64_t records = 0;
  int64_t batches = 0;
  Iterator<ParsedExample> it = ds.MakeIterator();
  for (absl::StatusOr<ParsedExample> batch : it) {
    ASSERT_TRUE(batch.ok()) << batch.status();
    ASSERT_EQ(batch->var.size(), 2u);
    const int64_t rows = BatchTraits<ParsedExample>::Rows(*batch);
    EXPECT_LE(batch->var[0].values.num_elements(), rows);
    records += rows;
    ++batches;
  }
  EXPECT_EQ(records, 2 * 9909);
  EXPECT_EQ(batches, 2 * ((9909 + 255) / 256));
}

}  // namespace
}  // namespace sluice
