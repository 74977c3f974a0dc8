// Dataset::AutoShard, written from tf.data's auto-shard tests (auto_shard_dataset_test.py: ten files of
// ten records, worker 3 of 5 reads files 3 and 8) and shard_dataset_op.cc (SHARD_HINT).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/io/tfrecord.h"
#include "sluice/ops/auto_shard.h"
#include "sluice/ops/dataset.h"
#include "sluice/ops/graph.h"
#include "tests/ops/test_helpers.h"
#include "tests/test_util.h"

namespace sluice::auto_shard_op_test {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

constexpr int kFiles = 10;
constexpr int kRecordsPerFile = 10;

std::string Record(int record, int file) { return absl::StrCat("Record ", record, " of file ", file); }

// Records of `files`, file by file.
std::vector<std::string> RecordsOf(const std::vector<int>& files) {
  std::vector<std::string> out;
  for (int f : files) {
    for (int r = 0; r < kRecordsPerFile; ++r) out.push_back(Record(r, f));
  }
  return out;
}

class AutoShardOpTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    files_ = new std::vector<std::string>();
    for (int f = 0; f < kFiles; ++f) {
      std::string path = testing_util::TempPath(absl::StrCat("auto_shard_op_", f, ".tfrecord"));
      absl::StatusOr<TFRecordWriter> writer = TFRecordWriter::Open(path);
      ASSERT_TRUE(writer.ok()) << writer.status();
      for (int r = 0; r < kRecordsPerFile; ++r) ASSERT_TRUE(writer->Write(Record(r, f)).ok());
      ASSERT_TRUE(writer->Close().ok());
      files_->push_back(path);
    }
  }
  static void TearDownTestSuite() {
    delete files_;
    files_ = nullptr;
  }
  static const std::vector<std::string>& files() { return *files_; }

  // list_files(shuffle=False).flat_map(TFRecordDataset), as the tf.data tests build it.
  static Dataset<std::string> FlatMapReader() {
    return ListFiles(files(), /*shuffle=*/false).FlatMap([](std::string file) { return TFRecord({file}); });
  }

 private:
  static std::vector<std::string>* files_;
};

std::vector<std::string>* AutoShardOpTest::files_ = nullptr;

TEST_F(AutoShardOpTest, FileShardsTheReaderBehindAFlatMap) {
  auto ds = FlatMapReader().AutoShard(5, 3);
  EXPECT_EQ(test_ops::Values(ds), RecordsOf({3, 8}));
  absl::StatusOr<distribute::ShardDecision> decision = ops::FindAutoShardDecision(*ds.node());
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->applied, AutoShardPolicy::kFile);
  EXPECT_EQ(decision->reason, "");
  EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
}

TEST_F(AutoShardOpTest, FileShardsBelowBatchAndMap) {
  auto ds = FlatMapReader()
                .Map([](std::string s) { return s + "!"; })
                .Batch(5)
                .AutoShard(5, 3, AutoShardPolicy::kFile);
  std::vector<std::string> flat;
  for (const std::vector<std::string>& batch : test_ops::Values(ds)) {
    EXPECT_EQ(batch.size(), 5u);
    flat.insert(flat.end(), batch.begin(), batch.end());
  }
  std::vector<std::string> expected;
  for (const std::string& r : RecordsOf({3, 8})) expected.push_back(r + "!");
  EXPECT_EQ(flat, expected);
}

TEST_F(AutoShardOpTest, FileShardsEveryBranchOfZipAndConcatenate) {
  auto zipped = Zip(FlatMapReader(), FlatMapReader()).AutoShard(5, 3);
  std::vector<std::string> firsts;
  for (const auto& [a, b] : test_ops::Values(zipped)) {
    EXPECT_EQ(a, b);
    firsts.push_back(a);
  }
  EXPECT_EQ(firsts, RecordsOf({3, 8}));

  auto concatenated = FlatMapReader().Concatenate(FlatMapReader()).AutoShard(5, 3);
  std::vector<std::string> expected = RecordsOf({3, 8});
  std::vector<std::string> twice = expected;
  twice.insert(twice.end(), expected.begin(), expected.end());
  EXPECT_EQ(test_ops::Values(concatenated), twice);
}

TEST_F(AutoShardOpTest, FileShardsAReaderOverFileNames) {
  EXPECT_EQ(test_ops::Values(TFRecord(files()).AutoShard(5, 0)), RecordsOf({0, 5}));
  // The parallel reader is ListFiles -> Interleave underneath: sharded the same way.
  auto parallel = TFRecord(files(), TFRecordOptions{.num_parallel_reads = 2}).AutoShard(5, 4);
  EXPECT_THAT(test_ops::Values(parallel), ::testing::UnorderedElementsAreArray(RecordsOf({4, 9})));
}

TEST_F(AutoShardOpTest, DataKeepsEveryNthElement) {
  std::vector<std::string> all = test_ops::Values(FlatMapReader());
  std::vector<std::string> expected;
  for (size_t i = 3; i < all.size(); i += 5) expected.push_back(all[i]);
  auto ds = FlatMapReader().AutoShard(5, 3, AutoShardPolicy::kData);
  EXPECT_EQ(test_ops::Values(ds), expected);
  EXPECT_EQ(ops::FindAutoShardDecision(*ds.node())->applied, AutoShardPolicy::kData);
  EXPECT_EQ(Range(23).AutoShard(5, 3, AutoShardPolicy::kData).Cardinality(), 4);
}

TEST_F(AutoShardOpTest, AutoFallsBackToDataWhereNoFileSourceIsFound) {
  auto ds = Range(20).AutoShard(5, 1);
  EXPECT_THAT(test_ops::Values(ds), ElementsAre(1, 6, 11, 16));
  absl::StatusOr<distribute::ShardDecision> decision = ops::FindAutoShardDecision(*ds.node());
  ASSERT_TRUE(decision.ok());
  EXPECT_EQ(decision->applied, AutoShardPolicy::kData);
  EXPECT_THAT(decision->reason, HasSubstr("Range"));
  // One branch without files is enough to shard the whole graph by DATA.
  auto mixed =
      Zip(FlatMapReader(), Range(1000).Map([](int64_t x) { return std::to_string(x); })).AutoShard(5, 3);
  EXPECT_EQ(ops::FindAutoShardDecision(*mixed.node())->applied, AutoShardPolicy::kData);
  EXPECT_EQ(test_ops::Values(mixed).size(), 20u);
}

TEST_F(AutoShardOpTest, FileWithoutAFileSourceIsTheOneErrorElement) {
  auto ds = Range(20).AutoShard(5, 1, AutoShardPolicy::kFile);
  std::vector<absl::StatusOr<int64_t>> out = test_ops::Collect(ds);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out[0].status().message()), HasSubstr("Range"));
  EXPECT_THAT(std::string(out[0].status().message()), HasSubstr("DATA"));
}

TEST_F(AutoShardOpTest, FewerFilesThanWorkersIsAnErrorUnderFileAndAuto) {
  for (AutoShardPolicy policy : {AutoShardPolicy::kFile, AutoShardPolicy::kAuto}) {
    auto ds = TFRecord({files()[0], files()[1]}).AutoShard(5, 0, policy);
    std::vector<absl::StatusOr<std::string>> out = test_ops::Collect(ds);
    ASSERT_EQ(out.size(), 1u) << AutoShardPolicyName(policy);
    EXPECT_EQ(out[0].status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(out[0].status().message()), HasSubstr("2 file(s), fewer than the 5 workers"));
  }
}

TEST_F(AutoShardOpTest, OffAndOneWorkerReadEverything) {
  EXPECT_EQ(test_ops::Values(FlatMapReader().AutoShard(5, 3, AutoShardPolicy::kOff)).size(), 100u);
  for (AutoShardPolicy policy :
       {AutoShardPolicy::kFile, AutoShardPolicy::kData, AutoShardPolicy::kAuto, AutoShardPolicy::kHint}) {
    auto ds = FlatMapReader().AutoShard(1, 0, policy);
    EXPECT_EQ(test_ops::Values(ds).size(), 100u) << AutoShardPolicyName(policy);
    EXPECT_EQ(ops::FindAutoShardDecision(*ds.node())->applied, AutoShardPolicy::kOff);
  }
  EXPECT_EQ(Range(7).AutoShard(1, 0).Cardinality(), 7);
}

TEST_F(AutoShardOpTest, BadArgumentsAreInvalidArgument) {
  for (auto [workers, index] : std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {-1, 0}, {2, 2}, {2, -1}}) {
    std::vector<absl::StatusOr<int64_t>> out = test_ops::Collect(Range(4).AutoShard(workers, index));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].status().code(), absl::StatusCode::kInvalidArgument) << workers << " " << index;
    EXPECT_THAT(std::string(out[0].status().message()), HasSubstr("AutoShard"));
  }
}

TEST_F(AutoShardOpTest, HintReplacesEveryPlaceholder) {
  // tf.data's service test: range(20).shard(SHARD_HINT, index=anything) on worker 1 of 5.
  auto ds = Range(20).Shard(kShardHint, 17).AutoShard(5, 1, AutoShardPolicy::kHint);
  EXPECT_THAT(test_ops::Values(ds), ElementsAre(1, 6, 11, 16));
  EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
  // Both branches' placeholders; nothing else is sharded.
  auto zipped = Zip(Range(10).Shard(kShardHint, 0), Range(100)).AutoShard(2, 1, AutoShardPolicy::kHint);
  EXPECT_THAT(test_ops::Values(zipped),
              ElementsAre(std::pair<int64_t, int64_t>{1, 0}, std::pair<int64_t, int64_t>{3, 1},
                          std::pair<int64_t, int64_t>{5, 2}, std::pair<int64_t, int64_t>{7, 3},
                          std::pair<int64_t, int64_t>{9, 4}));
  EXPECT_EQ(distribute::FindShardHints(*zipped.node()), (std::vector<std::string>{"/0/0"}));
}

TEST_F(AutoShardOpTest, HintWithoutPlaceholdersReadsEverythingAndSaysSo) {
  auto ds = Range(6).AutoShard(3, 1, AutoShardPolicy::kHint);
  EXPECT_THAT(test_ops::Values(ds), ElementsAre(0, 1, 2, 3, 4, 5));
  EXPECT_THAT(ops::FindAutoShardDecision(*ds.node())->reason, HasSubstr("no Shard(kShardHint"));
}

TEST_F(AutoShardOpTest, APlaceholderOutsideHintIsFailedPrecondition) {
  for (auto ds : {Range(20).Shard(kShardHint, 0), Range(20).Shard(kShardHint, 0).AutoShard(2, 0)}) {
    std::vector<absl::StatusOr<int64_t>> out = test_ops::Collect(ds);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(out[0].status().message()), HasSubstr("AutoShardPolicy HINT"));
  }
  // Other negative counts stay argument errors.
  std::vector<absl::StatusOr<int64_t>> out = test_ops::Collect(Range(4).Shard(-2, 0));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(AutoShardOpTest, AnOuterAutoShardShardsAnInnerOneByData) {
  // The walk stops at AutoShard (tf.data's does at AutoShardDataset): 2 of files {3, 8}'s 20 records.
  auto ds = FlatMapReader().AutoShard(5, 3).AutoShard(10, 0);
  EXPECT_EQ(ops::FindAutoShardDecision(*ds.node())->applied, AutoShardPolicy::kData);
  EXPECT_THAT(test_ops::Values(ds), ElementsAre(Record(0, 3), Record(0, 8)));
}

TEST_F(AutoShardOpTest, ElementSpecPassesThrough) {
  EXPECT_EQ(Range(4).Batch(2).AutoShard(2, 0).element_spec(), Range(4).Batch(2).element_spec());
}

// Every cut restores exactly, full and compact; the restored iterator shards as the saved one did.
TEST_F(AutoShardOpTest, CheckpointsRestoreAtEveryCut) {
  struct Case {
    std::string name;
    Dataset<std::string> ds;
  };
  std::vector<Case> cases = {
      {"FILE", TFRecord(files()).AutoShard(4, 1, AutoShardPolicy::kFile)},
      {"DATA", TFRecord(files()).AutoShard(4, 1, AutoShardPolicy::kData)},
      {"HINT", TFRecord(files()).Shard(kShardHint, 0).AutoShard(4, 1, AutoShardPolicy::kHint)},
      {"parallel FILE", TFRecord(files(), TFRecordOptions{.num_parallel_reads = 3}).AutoShard(4, 2)},
  };
  for (const Case& c : cases) {
    for (bool compact : {false, true}) {
      Options options;
      options.compact_checkpoints = compact;
      const std::vector<std::string> full = test_ops::Values(c.ds, options);
      ASSERT_FALSE(full.empty()) << c.name;
      for (size_t cut = 0; cut <= full.size(); cut += 3) {
        Iterator<std::string> it = c.ds.MakeIterator(options);
        std::vector<std::string> seen;
        for (size_t i = 0; i < cut; ++i) {
          absl::StatusOr<std::optional<std::string>> next = it.NextBlocking();
          ASSERT_TRUE(next.ok() && next->has_value()) << c.name << " cut " << cut;
          seen.push_back(**next);
        }
        absl::StatusOr<std::string> state = it.SaveBlocking();
        ASSERT_TRUE(state.ok()) << c.name << " cut " << cut << ": " << state.status();
        absl::StatusOr<Iterator<std::string>> restored = c.ds.RestoreIterator(*state, options);
        ASSERT_TRUE(restored.ok()) << c.name << " cut " << cut << ": " << restored.status();
        for (;;) {
          absl::StatusOr<std::optional<std::string>> next = restored->NextBlocking();
          ASSERT_TRUE(next.ok()) << next.status();
          if (!next->has_value()) break;
          seen.push_back(**next);
        }
        EXPECT_EQ(seen, full) << c.name << (compact ? " compact" : " full") << " cut " << cut;
      }
    }
  }
}

TEST_F(AutoShardOpTest, ChangedShardArgumentsAreRefusedAtRestore) {
  Iterator<std::string> it = TFRecord(files()).AutoShard(4, 1).MakeIterator();
  ASSERT_TRUE(it.NextBlocking().ok());
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  absl::StatusOr<Iterator<std::string>> other = TFRecord(files()).AutoShard(4, 2).RestoreIterator(*state);
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(other.status().message()), HasSubstr("AutoShard"));
}

TEST_F(AutoShardOpTest, RoundTripsThroughItsGraph) {
  for (AutoShardPolicy policy : {AutoShardPolicy::kFile, AutoShardPolicy::kData, AutoShardPolicy::kHint}) {
    auto ds = TFRecord(files(), TFRecordOptions{.num_parallel_reads = 2});
    if (policy == AutoShardPolicy::kHint) ds = ds.Shard(kShardHint, 0);
    ds = ds.AutoShard(5, 2, policy);
    absl::StatusOr<std::string> bytes = Serialize(ds);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    absl::StatusOr<Dataset<std::string>> rebuilt = BuildTyped<std::string>(*bytes);
    ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
    const std::vector<std::string> original = test_ops::Values(ds);
    EXPECT_FALSE(original.empty());
    EXPECT_THAT(test_ops::Values(*rebuilt), ElementsAreArray(original)) << AutoShardPolicyName(policy);
  }
}

}  // namespace
}  // namespace sluice::auto_shard_op_test
