#include "sluice/ops/file_sources.h"

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "io/tfrecord_format.h"
#include "io/zlib_stream.h"
#include "sluice/ops/dataset.h"
#include "tests/test_util.h"
#include "tests/ops/test_helpers.h"

namespace sluice {
namespace fixed_length_records_test_file {
namespace {

using test_ops::Collect;

using testing_util::Compress;
using testing_util::TempPath;
using testing_util::WriteFile;


// A file of `records` records of `size` bytes ("r<i>" padded with '.') between a header and a footer.
std::string MakeFile(const std::string& name, int records, size_t size, const std::string& header,
                     const std::string& footer, Compression compression, std::vector<std::string>* expected) {
  std::string body;
  for (int i = 0; i < records; ++i) {
    std::string r = absl::StrCat("r", i, name);
    r.resize(size, '.');
    expected->push_back(r);
    body += r;
  }
  std::string path = TempPath(name);
  WriteFile(path, Compress(header + body + footer, compression));
  return path;
}

TEST(FixedLengthRecordsTest, HeaderRecordsFooterAcrossFilesAndCompressions) {
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    std::vector<std::string> expected;
    std::string a = MakeFile(absl::StrCat("flr_a", static_cast<int>(c)), 30, 9, "HEAD", "FT", c, &expected);
    std::string b = MakeFile(absl::StrCat("flr_b", static_cast<int>(c)), 5, 9, "HEAD", "FT", c, &expected);
    auto ds = FixedLengthRecords({a, b}, 9, 4, 2, c);
    std::vector<std::string> got;
    for (auto& x : Collect(ds)) {
      ASSERT_TRUE(x.ok()) << x.status();
      got.push_back(*x);
    }
    EXPECT_EQ(got, expected);
    EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
    got.clear();
    for (auto& x : Collect(ds)) got.push_back(*x);  // every iterator starts over
    EXPECT_EQ(got, expected);
  }
  std::vector<std::string> expected;
  std::string plain = MakeFile("flr_plain", 3, 2, "", "", Compression::kNone, &expected);
  auto ds = FixedLengthRecords({plain}, 2);
  EXPECT_EQ(Collect(ds).size(), 3u);
  std::string debug = ds.DebugString();
  EXPECT_NE(debug.find("FixedLengthRecords("), std::string::npos) << debug;
  EXPECT_NE(debug.find("record_bytes=2, header_bytes=0, footer_bytes=0"), std::string::npos) << debug;
}

TEST(FixedLengthRecordsTest, TruncatedTrailingRecordIsDataLossNamingFileAndOffset) {
  std::string path = TempPath("flr_truncated");
  WriteFile(path, "HHabcdefgFF");  // header 2, body "abcdefg" = 2 records of 3 and 1 byte left, footer 2
  auto got = Collect(FixedLengthRecords({path}, 3, 2, 2));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(*got[0], "abc");
  EXPECT_EQ(*got[1], "def");
  EXPECT_EQ(got[2].status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(got[2].status().message().find(path), std::string::npos) << got[2].status();
  EXPECT_NE(got[2].status().message().find("offset 8"), std::string::npos) << got[2].status();
  // A file shorter than header + footer, then a missing file; the next file is still read.
  std::string short_file = TempPath("flr_short");
  WriteFile(short_file, "HHF");
  std::string good = TempPath("flr_good");
  WriteFile(good, "HHxyzFF");
  auto more = Collect(FixedLengthRecords({short_file, TempPath("flr_missing"), good}, 3, 2, 2));
  ASSERT_EQ(more.size(), 3u);
  EXPECT_EQ(more[0].status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(more[1].status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(*more[2], "xyz");
}

TEST(FixedLengthRecordsTest, BadArgumentsAreOneInvalidArgument) {
  for (auto [record, header, footer] : {std::tuple<int64_t, int64_t, int64_t>{0, 0, 0}, {-3, 0, 0}, {4, -1, 0},
                                        {4, 0, -2}}) {
    auto got = Collect(FixedLengthRecords({"/nonexistent"}, record, header, footer));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].status().code(), absl::StatusCode::kInvalidArgument) << record << header << footer;
  }
}

TEST(FixedLengthRecordsTest, DestroyedMidStream) {
  std::vector<std::string> expected;
  std::string path = MakeFile("flr_big", 20000, 16, "", "", Compression::kNone, &expected);
  std::string gz = MakeFile("flr_big_gz", 20000, 16, "", "", Compression::kGzip, &expected);
  for (int round = 0; round < 6; ++round) {
    auto ds = FixedLengthRecords({path}, 16);
    Iterator<std::string> it = ds.MakeIterator();
    for (int i = 0; i < round * 100; ++i) ASSERT_TRUE(it.NextBlocking().ok());
    auto gz_ds = FixedLengthRecords({gz}, 16, 0, 0, Compression::kGzip).Prefetch(2);
    Iterator<std::string> it2 = gz_ds.MakeIterator();
    for (int i = 0; i < round; ++i) ASSERT_TRUE(it2.NextBlocking().ok());
  }
}

}  // namespace
}  // namespace fixed_length_records_test_file
}  // namespace sluice
