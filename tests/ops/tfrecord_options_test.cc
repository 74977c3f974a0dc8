// TFRecord(files, TFRecordOptions): tf.data.TFRecordDataset's buffer_size and num_parallel_reads, on
// TFRecord files written by TensorFlow.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/distribute/auto_shard.h"
#include "sluice/ops/dataset.h"
#include "sluice/ops/graph.h"
#include "tests/ops/checkpoint_helpers.h"
#include "tests/ops/test_helpers.h"
#include "tests/test_util.h"

namespace sluice::tfrecord_options_test {
namespace {

using checkpoint_testing::Pull;
using test_ops::Collect;
using test_ops::Values;
using ::testing::HasSubstr;
using Records = std::vector<std::string>;

std::vector<Records> PerFile(const std::vector<std::string>& files) {
  std::vector<Records> out;
  for (const std::string& file : files) out.push_back(Values(TFRecord({file}, Compression::kGzip)));
  return out;
}

// A record from each file in turn, files that ended skipped: tf.data's order when every file is open.
Records RoundRobin(const std::vector<Records>& files) {
  Records out;
  for (size_t row = 0;; ++row) {
    bool any = false;
    for (const Records& f : files) {
      if (row < f.size()) {
        out.push_back(f[row]);
        any = true;
      }
    }
    if (!any) return out;
  }
}

Records Sorted(Records r) {
  std::sort(r.begin(), r.end());
  return r;
}

TEST(TFRecordOptionsTest, SequentialByDefault) {
  const std::vector<std::string> files = testing_util::TaxiEvalShards(3);
  Records all;
  for (const Records& f : PerFile(files)) all.insert(all.end(), f.begin(), f.end());
  ASSERT_GT(all.size(), 100u);
  EXPECT_EQ(Values(TFRecord(files, TFRecordOptions{.compression = Compression::kGzip})), all);
}

TEST(TFRecordOptionsTest, ParallelReadsAlternateRecordsOfOpenFiles) {
  const std::vector<std::string> files = testing_util::TaxiEvalShards(3);
  const std::vector<Records> per_file = PerFile(files);
  Dataset<std::string> ds = TFRecord(files, {.compression = Compression::kGzip, .num_parallel_reads = 3});
  EXPECT_THAT(ds.DebugString(), HasSubstr("ListFiles"));
  EXPECT_EQ(Values(ds), RoundRobin(per_file));
}

// Fewer readers than files: every record once, each file's records in their order.
TEST(TFRecordOptionsTest, TwoReadersOverThreeFilesKeepEachFilesOrder) {
  const std::vector<std::string> files = testing_util::TaxiEvalShards(3);
  const std::vector<Records> per_file = PerFile(files);
  for (int64_t reads : {int64_t{2}, kAutotune}) {
    Records got = Values(TFRecord(files, {.compression = Compression::kGzip, .num_parallel_reads = reads}));
    Records all;
    for (const Records& f : per_file) all.insert(all.end(), f.begin(), f.end());
    ASSERT_EQ(Sorted(got), Sorted(all)) << "num_parallel_reads " << reads;
    if (reads != 2) continue;
    for (const Records& f : per_file) {
      Records in_got;
      for (const std::string& r : got) {
        if (std::find(f.begin(), f.end(), r) != f.end()) in_got.push_back(r);
      }
      EXPECT_EQ(in_got, f);
    }
  }
}

TEST(TFRecordOptionsTest, BufferSizeReadsTheSameRecords) {
  const std::vector<std::string> files = testing_util::TaxiEvalShards(3);
  const Records want = Values(TFRecord(files, Compression::kGzip));
  Dataset<std::string> small = TFRecord(files, {.compression = Compression::kGzip, .buffer_size = 4096});
  EXPECT_THAT(small.DebugString(), HasSubstr("buffer_size=4096"));
  EXPECT_EQ(Values(small), want);
  EXPECT_EQ(Values(TFRecord(
                files, {.compression = Compression::kGzip, .buffer_size = 777, .num_parallel_reads = 1})),
            want);
}

TEST(TFRecordOptionsTest, NegativeArgumentsAreTheOneError) {
  for (TFRecordOptions options :
       {TFRecordOptions{.buffer_size = -1}, TFRecordOptions{.num_parallel_reads = -5}}) {
    auto got = Collect(TFRecord(testing_util::TaxiEvalShards(3), options));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(got[0].status().message(), HasSubstr("TFRecord"));
  }
}

// The parallel form is made of registered parts: it serializes, rebuilds and reads the same.
TEST(TFRecordOptionsTest, ParallelReadsArePortable) {
  Dataset<std::string> ds =
      TFRecord(testing_util::TaxiEvalShards(3),
               {.compression = Compression::kGzip, .buffer_size = 65536, .num_parallel_reads = 3});
  absl::StatusOr<std::string> bytes = Serialize(ds);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<AnyDataset> any = Deserialize(*bytes);
  ASSERT_TRUE(any.ok()) << any.status();
  absl::StatusOr<Dataset<std::string>> rebuilt = any->As<std::string>();
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_EQ(rebuilt->DebugString(), ds.DebugString());
  EXPECT_EQ(Values(*rebuilt), Values(ds));
}

// FILE sharding finds the file list under the interleave.
TEST(TFRecordOptionsTest, FileShardingCutsTheFileList) {
  Dataset<std::string> ds =
      TFRecord(testing_util::TaxiEvalShards(3), {.compression = Compression::kGzip, .num_parallel_reads = 2});
  auto targets = distribute::FindFileShardTargets(*ds.node());
  ASSERT_TRUE(targets.ok()) << targets.status();
  ASSERT_EQ(targets->size(), 1u);
  EXPECT_EQ((*targets)[0].op, "ListFiles");
  EXPECT_EQ((*targets)[0].num_files, 3);
}

// Saved mid-way in compact mode (positions only) and restored: the rest, record for record.
TEST(TFRecordOptionsTest, ParallelReadsRestoreExactly) {
  Dataset<std::string> ds =
      TFRecord(testing_util::TaxiEvalShards(3), {.compression = Compression::kGzip, .num_parallel_reads = 2});
  const Records all = Values(ds);
  Options options;
  options.compact_checkpoints = true;
  for (size_t cut : {size_t{0}, size_t{7}, all.size() / 2, all.size() - 1}) {
    Iterator<std::string> it = ds.MakeIterator(options);
    auto prefix = Pull(it, cut);
    absl::StatusOr<std::string> state = it.SaveBlocking();
    ASSERT_TRUE(state.ok()) << state.status();
    EXPECT_LT(state->size(), 2048u);
    absl::StatusOr<Iterator<std::string>> restored = ds.RestoreIterator(*state, options);
    ASSERT_TRUE(restored.ok()) << restored.status();
    Records joined;
    for (auto& r : prefix) joined.push_back(*r);
    for (auto& r : Pull(*restored, all.size() + 1)) {
      ASSERT_TRUE(r.ok()) << r.status();
      joined.push_back(*r);
    }
    EXPECT_EQ(joined, all) << "cut " << cut;
  }
}

}  // namespace
}  // namespace sluice::tfrecord_options_test
