#include "sluice/ops/file_sources.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"
#include "sluice/ops/dataset.h"
#include "sluice/io/example.h"
#include "tests/ops/test_helpers.h"

namespace sluice {
namespace file_sources_test_file {
namespace {

using test_ops::Collect;
using test_ops::Values;
using ::testing::HasSubstr;

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

// ListFiles over `n` names that need not exist (the node takes matched names; nothing opens them).
Dataset<std::string> Listed(int n, bool shuffle, std::optional<uint64_t> seed) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back(absl::StrCat("/data/shard-", 10000 + i));
  return Dataset<std::string>(std::make_shared<ops::ListFilesNode>(std::move(names), shuffle, seed));
}

// The pass counter belongs to the iterator (issue #12): every iterator of a seeded ListFiles lists the
// same orders, at once or one after another, and its epochs still differ.
TEST(ListFilesTest, IteratorsOfOneDefinitionListTheSameOrders) {
  auto ds = Listed(200, /*shuffle=*/true, /*seed=*/4).Repeat(2);
  std::vector<std::string> alone = Values(ds);
  ASSERT_EQ(alone.size(), 400u);
  EXPECT_NE(std::vector<std::string>(alone.begin(), alone.begin() + 200),
            std::vector<std::string>(alone.begin() + 200, alone.end()));
  EXPECT_EQ(Values(ds), alone);
  // Interleaved Next calls on this thread.
  Iterator<std::string> a = ds.MakeIterator();
  Iterator<std::string> b = ds.MakeIterator();
  std::vector<std::string> from_a, from_b;
  for (size_t i = 0; i < alone.size(); ++i) {
    absl::StatusOr<std::optional<std::string>> x = a.NextBlocking();
    absl::StatusOr<std::optional<std::string>> y = b.NextBlocking();
    ASSERT_TRUE(x.ok() && x->has_value() && y.ok() && y->has_value());
    from_a.push_back(**x);
    from_b.push_back(**y);
  }
  EXPECT_EQ(from_a, alone);
  EXPECT_EQ(from_b, alone);
  // And on two threads, the names feeding parallel work (Repeat under Prefetch ends each epoch's parallel
  // Map on a pool worker: see async_teardown_test).
  auto parallel = Listed(200, true, 4).Map([](std::string s) { return s; }, 2).Repeat(2).Prefetch(2);
  std::vector<std::vector<std::string>> got(2);
  std::thread t0([&] { got[0] = Values(parallel); });
  std::thread t1([&] { got[1] = Values(parallel); });
  t0.join();
  t1.join();
  EXPECT_EQ(got[0], alone);
  EXPECT_EQ(got[1], alone);
}

TEST(ListFilesTest, UnseededDrawsItsSeedPerIterator) {
  auto ds = Listed(1000, /*shuffle=*/true, std::nullopt);
  std::vector<Param> params = ds.node()->params();
  for (const Param& p : params) EXPECT_NE(p.name, "seed");
  std::vector<std::string> first = Values(ds);
  std::vector<std::string> second = Values(ds);
  ASSERT_EQ(first.size(), 1000u);
  EXPECT_EQ(std::set<std::string>(first.begin(), first.end()), std::set<std::string>(second.begin(), second.end()));
  EXPECT_NE(first, second);  // two uniform orders of 1000 names agree with probability 1/1000!
  // Without a shuffle every iterator lists the sorted names.
  std::vector<std::string> sorted = Values(Listed(50, false, std::nullopt));
  EXPECT_TRUE(std::is_sorted(sorted.begin(), sorted.end()));
  EXPECT_EQ(Values(Listed(50, false, std::nullopt)), sorted);
}

// Params describe the sources completely: file lists are lists, so no character in a path is lost.
TEST(FileSourceParamsTest, FileListsAreListsAndEveryParamIsThere) {
  std::vector<std::string> files = {"/data/a,b.tfrecord", "/data/c d.tfrecord", "/data/\"quoted\""};
  auto tfrecord = TFRecord(files, Compression::kGzip);
  std::vector<Param> params = tfrecord.node()->params();
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[0].name, "files");
  EXPECT_EQ(std::get<std::vector<std::string>>(params[0].value), files);
  EXPECT_EQ(params[1].name, "compression");
  EXPECT_EQ(std::get<std::string>(params[1].value), "GZIP");
  EXPECT_EQ(params[2].name, "read_mode");
  EXPECT_EQ(std::get<std::string>(params[2].value), "auto");

  params = FixedLengthRecords(files, 8, 2, 3).node()->params();
  ASSERT_EQ(params.size(), 6u);
  EXPECT_EQ(std::get<std::vector<std::string>>(params[0].value), files);
  EXPECT_EQ(params[2].name, "record_bytes");
  EXPECT_EQ(std::get<int64_t>(params[2].value), 8);
  EXPECT_EQ(std::get<int64_t>(params[3].value), 2);
  EXPECT_EQ(params[4].name, "footer_bytes");
  EXPECT_EQ(std::get<int64_t>(params[4].value), 3);
  EXPECT_EQ(std::get<std::string>(params[5].value), "auto");

  params = ops::ListFilesNode(files, /*shuffle=*/true, /*seed=*/9).params();
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(std::get<std::vector<std::string>>(params[0].value), files);
  EXPECT_EQ(params[1].name, "shuffle");
  EXPECT_TRUE(std::get<bool>(params[1].value));
  EXPECT_EQ(params[2].name, "seed");
  EXPECT_EQ(std::get<int64_t>(params[2].value), 9);
  EXPECT_EQ(ops::ListFilesNode(files, false, std::nullopt).params().size(), 2u);

  // DebugString stays readable: a long list is elided, the params keep every name.
  std::vector<std::string> many;
  for (int i = 0; i < 500; ++i) many.push_back(absl::StrCat("/data/train-", i, ".tfrecord"));
  auto big = TFRecord(many);
  std::string debug = big.DebugString();
  EXPECT_THAT(debug, HasSubstr("TFRecord(files=[\"/data/train-0.tfrecord\", "));
  EXPECT_THAT(debug, HasSubstr("... (500 in all)], compression=\"\", read_mode=\"auto\")"));
  EXPECT_LT(debug.size(), 400u) << debug;
  EXPECT_EQ(std::get<std::vector<std::string>>(big.node()->params()[0].value), many);
}

TEST(FileSourceParamsTest, ReadModeIsAParamAndEveryModeReads) {
  EXPECT_EQ(ops::ReadModeName(ReadMode::kAuto), "auto");
  EXPECT_EQ(ops::ReadModeName(ReadMode::kRead), "read");
  EXPECT_EQ(ops::ReadModeName(ReadMode::kMmap), "mmap");
  for (ReadMode mode : {ReadMode::kAuto, ReadMode::kRead, ReadMode::kMmap}) {
    absl::StatusOr<ReadMode> parsed = ops::ParseReadMode(ops::ReadModeName(mode));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, mode);
  }
  absl::StatusOr<ReadMode> bad = ops::ParseReadMode("MMAP");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("'MMAP'"));

  std::vector<std::string> files = {Shared("beam_foo.tfrecord"), Shared("beam_foo_bar.tfrecord")};
  for (ReadMode mode : {ReadMode::kRead, ReadMode::kMmap}) {
    auto node = std::make_shared<ops::RecordFileNode>(files, ops::RecordFormat::kTFRecord, Compression::kNone,
                                                      ops::FixedLengthLayout{}, mode);
    EXPECT_EQ(std::get<std::string>(node->params().back().value), ops::ReadModeName(mode));
    EXPECT_EQ(Values(Dataset<std::string>(node)), (std::vector<std::string>{"foo", "foo", "bar"}));
  }
}

}  // namespace
}  // namespace file_sources_test_file
}  // namespace sluice
