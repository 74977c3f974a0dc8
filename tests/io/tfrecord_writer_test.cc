#include "io/tfrecord_writer.h"

#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/tfrecord_format.h"
#include "sluice/io/tfrecord.h"

namespace sluice {
namespace tfrecord_writer_test_file {
namespace {

using ::testing::HasSubstr;

#if defined(SLUICE_SANITIZED_BUILD)
constexpr int kRecordCount = 25;
#else
constexpr int kRecordCount = 100;
#endif

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Decodes a whole file's bytes; fails the test on any error unless `finish` is given.
std::vector<std::string> Decode(const std::string& bytes, Compression compression, size_t chunk,
                                absl::Status* finish = nullptr) {
  io::TFRecordDecoder decoder(compression, {});
  std::vector<std::string> records;
  size_t pos = 0;
  do {
    const size_t n = std::min(chunk, bytes.size() - pos);
    decoder.Feed(io::AsBytes(bytes).subspan(pos, n));
    pos += n;
    for (;;) {
      absl::StatusOr<std::optional<io::TFRecordView>> r = decoder.Next();
      if (!r.ok()) {
        ADD_FAILURE() << r.status();
        return records;
      }
      if (!*r) break;
      records.emplace_back((*r)->str());
    }
  } while (pos < bytes.size());
  absl::Status s = decoder.Finish();
  if (finish != nullptr) {
    *finish = s;
  } else {
    EXPECT_TRUE(s.ok()) << s;
  }
  return records;
}

std::vector<std::string> RandomRecords(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> records;
  for (int i = 0; i < n; ++i) {
    // Mostly small, some up to 100 KiB, some empty; half-compressible contents.
    size_t size = rng() % 8 == 0 ? rng() % (100 << 10) : rng() % 600;
    if (i % 17 == 0) size = 0;
    std::string r(size, '\0');
    for (auto& c : r) c = static_cast<char>(i % 2 == 0 ? rng() : 'a' + rng() % 4);
    records.push_back(std::move(r));
  }
  return records;
}

TEST(CompressionTest, ParsesTensorFlowNames) {
  EXPECT_EQ(*ParseCompression(""), Compression::kNone);
  EXPECT_EQ(*ParseCompression("NONE"), Compression::kNone);
  EXPECT_EQ(*ParseCompression("GZIP"), Compression::kGzip);
  EXPECT_EQ(*ParseCompression("ZLIB"), Compression::kZlib);
  for (const char* bad : {"ZIP", "GZIP ", " gzip", "SNAPPY", "auto", "gz"}) {
    absl::StatusOr<Compression> c = ParseCompression(bad);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(c.status().message(), HasSubstr(bad));
  }
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    EXPECT_EQ(*ParseCompression(CompressionName(c)), c);
  }
}

TEST(CompressionTest, ParsesNamesInAnyCase) {
  EXPECT_EQ(*ParseCompression("none"), Compression::kNone);
  EXPECT_EQ(*ParseCompression("None"), Compression::kNone);
  EXPECT_EQ(*ParseCompression("gzip"), Compression::kGzip);
  EXPECT_EQ(*ParseCompression("Gzip"), Compression::kGzip);
  EXPECT_EQ(*ParseCompression("gZiP"), Compression::kGzip);
  EXPECT_EQ(*ParseCompression("zlib"), Compression::kZlib);
  EXPECT_EQ(*ParseCompression("Zlib"), Compression::kZlib);
}

TEST(TFRecordWriterTest, RoundTripEveryCompression) {
  const std::vector<std::string> records = RandomRecords(kRecordCount, 42);
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    const std::string path = absl::StrCat(testing::TempDir(), "/roundtrip_", CompressionName(c), ".tfrecord");
    TFRecordWriterOptions options;
    options.compression = c;
    options.buffer_bytes = 64 << 10;  // several write(2) calls
    absl::StatusOr<TFRecordWriter> writer = TFRecordWriter::Open(path, options);
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (const std::string& r : records) ASSERT_TRUE(writer->Write(r).ok());
    EXPECT_EQ(writer->records_written(), records.size());
    ASSERT_TRUE(writer->Close().ok());
    EXPECT_TRUE(writer->Close().ok());  // idempotent
    const std::string bytes = ReadFile(path);
    for (size_t chunk : {size_t{4096}, bytes.size()}) {
      EXPECT_EQ(Decode(bytes, c, chunk), records) << CompressionName(c) << " chunk " << chunk;
    }
    if (c == Compression::kGzip) {
      EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);
      EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);
    }
    // The in-memory writer produces the same bytes.
    absl::StatusOr<std::string> in_memory = io::EncodeTFRecords(records, c);
    ASSERT_TRUE(in_memory.ok());
    EXPECT_EQ(*in_memory, bytes);
  }
}

TEST(TFRecordWriterTest, CompressionLevels) {
  const std::vector<std::string> records = RandomRecords(20, 5);
  for (int level : {0, 1, 9}) {
    absl::StatusOr<std::string> bytes = io::EncodeTFRecords(records, Compression::kZlib, level);
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(Decode(*bytes, Compression::kZlib, 1000), records);
  }
  EXPECT_EQ(io::EncodeTFRecords(records, Compression::kGzip, 11).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TFRecordWriterTest, FlushMakesRecordsVisible) {
  const std::string path = absl::StrCat(testing::TempDir(), "/flush.tfrecord.gz");
  TFRecordWriterOptions options;
  options.compression = Compression::kGzip;
  absl::StatusOr<TFRecordWriter> writer = TFRecordWriter::Open(path, options);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(writer->Write("one").ok());
  ASSERT_TRUE(writer->Write("two").ok());
  ASSERT_TRUE(writer->Flush().ok());
  absl::Status finish;
  EXPECT_EQ(Decode(ReadFile(path), Compression::kGzip, 100, &finish), (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(finish.code(), absl::StatusCode::kDataLoss);  // the gzip trailer is not there yet
  ASSERT_TRUE(writer->Write("three").ok());
  ASSERT_TRUE(writer->Close().ok());
  EXPECT_EQ(Decode(ReadFile(path), Compression::kGzip, 100),
            (std::vector<std::string>{"one", "two", "three"}));
}

TEST(TFRecordWriterTest, WriteAfterCloseFails) {
  const std::string path = absl::StrCat(testing::TempDir(), "/closed.tfrecord");
  absl::StatusOr<TFRecordWriter> writer = TFRecordWriter::Open(path);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(writer->Close().ok());
  absl::Status s = writer->Write("late");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_EQ(ReadFile(path), "");
}

TEST(TFRecordWriterTest, OpenErrorsNameThePath) {
  const std::string path = absl::StrCat(testing::TempDir(), "/no/such/dir/x.tfrecord");
  absl::StatusOr<TFRecordWriter> writer = TFRecordWriter::Open(path);
  ASSERT_FALSE(writer.ok());
  EXPECT_EQ(writer.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(writer.status().message(), HasSubstr(path));

  TFRecordWriterOptions options;
  options.compression = Compression::kGzip;
  options.compression_level = 42;
  absl::StatusOr<TFRecordWriter> bad_level = TFRecordWriter::Open(testing::TempDir() + "/lvl", options);
  ASSERT_FALSE(bad_level.ok());
  EXPECT_EQ(bad_level.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TFRecordWriterTest, WriteErrorsAreReportedAndSticky) {
  // /dev/full accepts open() and fails every write with ENOSPC.
  std::ifstream probe("/dev/full");
  if (!probe) GTEST_SKIP() << "no /dev/full";
  TFRecordWriterOptions options;
  options.buffer_bytes = 16;
  absl::StatusOr<TFRecordWriter> writer = TFRecordWriter::Open("/dev/full", options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  absl::Status s = writer->Write("this record is longer than the buffer");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("/dev/full: write failed at file offset 0"));
  EXPECT_EQ(writer->Write("again"), s);
  EXPECT_EQ(writer->Close(), s);
}

TEST(TFRecordWriterTest, MovedWriterKeepsWriting) {
  const std::string path = absl::StrCat(testing::TempDir(), "/moved.tfrecord");
  absl::StatusOr<TFRecordWriter> writer = TFRecordWriter::Open(path);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(writer->Write("a").ok());
  TFRecordWriter moved = *std::move(writer);
  ASSERT_TRUE(moved.Write("b").ok());
  EXPECT_EQ(moved.path(), path);
  { TFRecordWriter destroyed_without_close = std::move(moved); }
  EXPECT_EQ(Decode(ReadFile(path), Compression::kNone, 7), (std::vector<std::string>{"a", "b"}));
}

TEST(TFRecordBufferWriterTest, FramingMatchesAppendTFRecord) {
  absl::StatusOr<io::TFRecordBufferWriter> w = io::TFRecordBufferWriter::Create(Compression::kNone);
  ASSERT_TRUE(w.ok());
  std::string expected;
  for (const std::string& r : RandomRecords(10, 9)) {
    ASSERT_TRUE(w->Write(r).ok());
    io::AppendTFRecord(absl::string_view(r), &expected);
  }
  ASSERT_TRUE(w->Finish().ok());
  EXPECT_FALSE(w->Write("x").ok());
  EXPECT_EQ(w->TakeOutput(), expected);
}

}  // namespace
}  // namespace tfrecord_writer_test_file
}  // namespace sluice
