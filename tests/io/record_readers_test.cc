#include "sluice/io/record_readers.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/tfrecord_format.h"
#include "io/zlib_stream.h"
#include "sluice/engine/reactor.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/thread_pool.h"
#include "sluice/io/tfrecord.h"
#include "tests/sanitized_build.h"
#include "tests/test_util.h"

namespace sluice {
namespace record_readers_test_file {
namespace {

using testing_util::BackendModeName;
using testing_util::BackendModeTest;
using testing_util::BackendModeValues;
using testing_util::Compress;
using testing_util::RandomBytes;
using testing_util::ReadWholeFile;
using testing_util::SharedTFRecordDir;
using testing_util::TempPath;
using testing_util::WriteFile;

namespace fs = std::filesystem;
using ::testing::HasSubstr;

#if defined(SLUICE_SANITIZED_BUILD)
constexpr int kPropertyIterations = 8;
#else
constexpr int kPropertyIterations = 60;
#endif

// Everything a reader produced: records (with offsets) and error elements, in order.
struct Collected {
  std::vector<std::string> records;
  std::vector<uint64_t> offsets;
  std::vector<absl::Status> errors;
  std::vector<size_t> error_positions;  // number of records before each error
};

// Pulls at most `limit` elements (a reader that never ends fails the test instead of hanging).
Task<Collected> Collect(AsyncGenerator<absl::StatusOr<Record>> gen, size_t limit = 10'000'000) {
  Collected out;
  for (size_t i = 0; i < limit; ++i) {
    std::optional<absl::StatusOr<Record>> r = co_await gen.Next();
    if (!r.has_value()) co_return out;
    if (!r->ok()) {
      out.errors.push_back(r->status());
      out.error_positions.push_back(out.records.size());
      continue;
    }
    out.records.emplace_back((*r)->str());
    out.offsets.push_back((*r)->offset);
  }
  ADD_FAILURE() << "reader did not end within " << limit << " elements";
  co_return out;
}

// The synchronous decoder over the whole file at once: the reference.
Collected ReferenceTFRecords(const std::string& path, Compression compression, bool skip_corrupt = false) {
  const std::string bytes = ReadWholeFile(path);
  TFRecordReaderOptions reader_options;
  reader_options.compression = compression;
  reader_options.skip_corrupt_records = skip_corrupt;
  io::TFRecordDecoder decoder(compression, io::ParserOptionsFor(reader_options, path));
  decoder.Feed(io::AsBytes(bytes));
  Collected out;
  absl::Status last;
  for (int guard = 0; guard < 10'000'000; ++guard) {
    absl::StatusOr<std::optional<io::TFRecordView>> r = decoder.Next();
    if (!r.ok()) {
      if (r.status() == last) return out;
      last = r.status();
      out.errors.push_back(r.status());
      out.error_positions.push_back(out.records.size());
      continue;
    }
    if (!r->has_value()) break;
    last = absl::OkStatus();
    out.records.emplace_back((*r)->str());
    out.offsets.push_back((*r)->offset);
  }
  absl::Status finished = decoder.Finish();
  if (!finished.ok() && finished != last) {
    out.errors.push_back(finished);
    out.error_positions.push_back(out.records.size());
  }
  return out;
}

// The block source under test, set by ReaderTest::SetUp (tests run one at a time).
ReadMode g_mode = ReadMode::kRead;

ReadOptions DefaultIo() {
  ReadOptions io;
  io.mode = g_mode;
  return io;
}

// Small blocks, or small mmap windows (page-rounded), so that records straddle them.
ReadOptions SmallBlocks(size_t block_size, int depth) {
  ReadOptions io = DefaultIo();
  io.block_size = block_size;
  io.blocks_in_flight = depth;
  io.mmap_window = block_size;
  return io;
}

class ReaderTest : public BackendModeTest {
 protected:
  void SetUp() override {
    BackendModeTest::SetUp();
    g_mode = mode();
  }
};

std::string WriteTFRecordFile(const std::string& name, const std::vector<std::string>& records,
                              Compression compression) {
  const std::string path = TempPath(name);
  TFRecordWriterOptions options;
  options.compression = compression;
  absl::StatusOr<TFRecordWriter> writer = TFRecordWriter::Open(path, options);
  EXPECT_TRUE(writer.ok()) << writer.status();
  for (const std::string& r : records) EXPECT_TRUE(writer->Write(r).ok());
  EXPECT_TRUE(writer->Close().ok());
  return path;
}

using TFRecordTest = ReaderTest;

TEST_P(TFRecordTest, SharedFilesMatchSynchronousDecoder) {
  const fs::path dir = SharedTFRecordDir();
  ASSERT_TRUE(fs::is_directory(dir)) << dir << " not found: set SLUICE_SHARED_DIR";
  struct Expect {
    fs::path path;
    Compression compression;
    size_t count;
  };
  std::vector<Expect> files = {
      {dir / "beam_foo.tfrecord", Compression::kNone, 1},
      {dir / "beam_foo_bar.tfrecord", Compression::kNone, 2},
      {dir / "beam_bar_foo.tfrecord", Compression::kNone, 2},
      {dir / "torchdata_example.tfrecord", Compression::kNone, 4},
      {dir / "torchdata_sequence_example.tfrecord", Compression::kNone, 4},
      {dir / "derived" / "torchdata_example.tfrecord.gz", Compression::kGzip, 4},
      {dir / "derived" / "torchdata_example.tfrecord.zlib", Compression::kZlib, 4},
      {dir / "derived" / "tfx_penguin_eval_uncompressed.tfrecord", Compression::kNone, 100},
      {dir / "tfx_penguin" / "Split-train" / "data_tfrecord-00000-of-00001.gz", Compression::kGzip, 234},
      {dir / "tfx_penguin" / "Split-eval" / "data_tfrecord-00000-of-00001.gz", Compression::kGzip, 100},
      {dir / "tfx_tfrecord_sequence" / "data_tfrecord_eval.gz", Compression::kGzip, 4500},
  };
  const std::vector<size_t> train_counts = {826, 826, 826, 825, 826, 825, 826, 826, 826, 826, 826, 825};
  const std::vector<size_t> eval_counts = {424, 425, 424, 424, 424, 425, 425, 424, 424, 424, 424, 424};
  for (const auto& [split, counts] : {std::pair{"Split-train", train_counts}, std::pair{"Split-eval", eval_counts}}) {
    std::vector<fs::path> shards;
    for (const auto& e : fs::directory_iterator(dir / "tfx_chicago_taxi_csv_example_gen" / split)) {
      shards.push_back(e.path());
    }
    std::sort(shards.begin(), shards.end());
    ASSERT_EQ(shards.size(), counts.size());
    // Sanitizer builds read 3 shards per split (the rest are counted in the normal build).
    for (size_t i = 0; i < (testing_util::kSanitizedBuild ? 3 : shards.size()); ++i) {
      files.push_back({shards[i], Compression::kGzip, counts[i]});
    }
  }
  std::vector<fs::path> external;
  for (const auto& e : fs::directory_iterator(dir / "tfx_external_tfrecord")) external.push_back(e.path());
  std::sort(external.begin(), external.end());
  ASSERT_EQ(external.size(), 2u);
  files.push_back({external[0], Compression::kGzip, 9988});
  files.push_back({external[1], Compression::kGzip, 5012});

  size_t checked = 0;
  for (const Expect& e : files) {
    TFRecordReaderOptions options;
    options.compression = e.compression;
    // 4 KiB blocks make records straddle blocks; the default exercises the one-block path.
    const Collected want = ReferenceTFRecords(e.path.string(), e.compression);
    for (const ReadOptions& io : {SmallBlocks(4096, 3), DefaultIo()}) {
      // Sanitizer builds read the large files once, with the default blocks, to stay fast.
      if (testing_util::kSanitizedBuild && io.block_size == 4096 && fs::file_size(e.path) > 50'000) continue;
      Collected got = SyncWait(Collect(ReadTFRecords(reactor(), e.path.string(), options, io)));
      EXPECT_TRUE(got.errors.empty()) << e.path << ": " << got.errors[0];
      EXPECT_EQ(got.records.size(), e.count) << e.path;
      EXPECT_EQ(got.records, want.records) << e.path;
      EXPECT_EQ(got.offsets, want.offsets) << e.path;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 11u + (testing_util::kSanitizedBuild ? 6u : 24u) + 2u);
}

TEST_P(TFRecordTest, SharedTruncatedFile) {
  const std::string path = (SharedTFRecordDir() / "derived" / "beam_foo_bar_truncated.tfrecord").string();
  for (size_t block : {size_t{7}, size_t{4096}}) {
    Collected got = SyncWait(Collect(ReadTFRecords(reactor(), path, {}, SmallBlocks(block, 2))));
    ASSERT_EQ(got.records, std::vector<std::string>{"foo"});
    ASSERT_EQ(got.errors.size(), 1u);
    EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kDataLoss);
    EXPECT_EQ(got.errors[0].message(),
              absl::StrCat(path, ": truncated record at offset 19: expected 19 bytes, file ends after 17"));
  }
}

TEST_P(TFRecordTest, SharedCorruptDataFileContinuesOrSkips) {
  const std::string path = (SharedTFRecordDir() / "derived" / "beam_foo_bar_corrupt_data.tfrecord").string();
  Collected got = SyncWait(Collect(ReadTFRecords(reactor(), path, {}, SmallBlocks(5, 2))));
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_EQ(got.error_positions[0], 0u);
  EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.errors[0].message(), HasSubstr(absl::StrCat(path, ": corrupted record at offset 0: data CRC mismatch")));
  EXPECT_EQ(got.records, std::vector<std::string>{"bar"});
  EXPECT_EQ(got.offsets, std::vector<uint64_t>{19});

  TFRecordReaderOptions skip;
  skip.skip_corrupt_records = true;
  Collected skipped = SyncWait(Collect(ReadTFRecords(reactor(), path, skip, DefaultIo())));
  EXPECT_TRUE(skipped.errors.empty());
  EXPECT_EQ(skipped.records, std::vector<std::string>{"bar"});
}

TEST_P(TFRecordTest, GeneratedRecordsAcrossBlockBoundaries) {
  std::vector<std::string> records;
  for (size_t size : {size_t{0}, size_t{1}, size_t{100}, size_t{4080}, size_t{4096}, size_t{5000}, size_t{65536},
                      size_t{70000}, size_t{300 << 10}, size_t{0}, size_t{17}}) {
    records.push_back(RandomBytes(size, static_cast<uint32_t>(records.size())));
  }
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    const std::string path = WriteTFRecordFile(absl::StrCat("gen_", static_cast<int>(c)), records, c);
    TFRecordReaderOptions options;
    options.compression = c;
    for (const auto& [block, depth] : {std::pair{size_t{4096}, 1}, std::pair{size_t{4096}, 4},
                                       std::pair{size_t{10000}, 2}, std::pair{size_t{1} << 20, 2}}) {
      if (testing_util::kSanitizedBuild && (depth == 1 || block == (size_t{1} << 20))) continue;
      ReadOptions io = SmallBlocks(block, depth);
      io.min_zero_copy_bytes = 1000;  // exercise both views and copies
      Collected got = SyncWait(Collect(ReadTFRecords(reactor(), path, options, io)));
      EXPECT_TRUE(got.errors.empty()) << got.errors[0];
      EXPECT_EQ(got.records, records) << "compression " << CompressionName(c) << " block " << block;
      EXPECT_EQ(got.offsets, ReferenceTFRecords(path, c).offsets);
    }
  }
}

// Blocks of 4 MiB and more have the data CRCs of their second half checked on the reactor's thread;
// the elements, offsets and errors must be exactly those of the synchronous decoder.
TEST_P(TFRecordTest, LargeBlocksCheckCrcsInParallelWithTheSameResults) {
  std::vector<std::string> records;
  for (int i = 0; i < 70; ++i) records.push_back(RandomBytes(i % 7 == 3 ? 5000 : 150'000 + 37 * i, 1000 + i));
  const std::string path = WriteTFRecordFile("parallel_crc", records, Compression::kNone);
  std::string bytes = ReadWholeFile(path);
  std::vector<uint64_t> offsets = ReferenceTFRecords(path, Compression::kNone).offsets;
  ASSERT_EQ(offsets.size(), records.size());
  // Bad data in records early and late in the first 4 MiB window, in one straddling two windows, and in
  // the last record.
  std::vector<size_t> corrupt = {2, 20, 24, 25, 69};
  for (size_t k : corrupt) bytes[offsets[k] + 12 + records[k].size() / 2] ^= 0x5a;
  WriteFile(path, bytes);
  ReadOptions io = DefaultIo();
  io.block_size = size_t{4} << 20;
  io.mmap_window = size_t{4} << 20;
  for (bool skip : {false, true}) {
    TFRecordReaderOptions options;
    options.skip_corrupt_records = skip;
    Collected want = ReferenceTFRecords(path, Compression::kNone, skip);
    Collected got = SyncWait(Collect(ReadTFRecords(reactor(), path, options, io)));
    EXPECT_EQ(got.records.size(), records.size() - corrupt.size());
    EXPECT_TRUE(got.records == want.records);  // not EXPECT_EQ: it would print megabytes
    EXPECT_EQ(got.offsets, want.offsets);
    EXPECT_EQ(got.errors, want.errors);
    EXPECT_EQ(got.error_positions, want.error_positions);
    EXPECT_EQ(got.errors.size(), skip ? 0u : corrupt.size());
  }
  // A bad length CRC late in a window ends the file there, after every record before it.
  bytes[offsets[22] + 9] ^= 0x40;
  WriteFile(path, bytes);
  Collected want = ReferenceTFRecords(path, Compression::kNone);
  Collected got = SyncWait(Collect(ReadTFRecords(reactor(), path, {}, io)));
  EXPECT_TRUE(got.records == want.records);
  EXPECT_EQ(got.errors, want.errors);
  ASSERT_FALSE(got.errors.empty());
  EXPECT_THAT(got.errors.back().message(), HasSubstr(absl::StrCat("corrupted record at offset ", offsets[22])));
}

// Destroying the reader while the reactor may still be checking a block's second half.
TEST_P(TFRecordTest, LargeBlocksDestroyedMidCheck) {
  std::vector<std::string> records;
  for (int i = 0; i < 60; ++i) records.push_back(RandomBytes(200'000, 2000 + i));
  const std::string path = WriteTFRecordFile("parallel_crc_destroy", records, Compression::kNone);
  ReadOptions io = DefaultIo();
  io.block_size = size_t{4} << 20;
  io.mmap_window = size_t{4} << 20;
  auto take = [](AsyncGenerator<absl::StatusOr<Record>> gen, size_t n) -> Task<size_t> {
    size_t ok = 0;
    for (size_t i = 0; i < n; ++i) {
      std::optional<absl::StatusOr<Record>> r = co_await gen.Next();
      if (r.has_value() && r->ok()) ++ok;
    }
    co_return ok;  // `gen` is destroyed here, mid-stream
  };
  for (size_t n : {1, 3, 11, 25}) EXPECT_EQ(SyncWait(take(ReadTFRecords(reactor(), path, {}, io), n)), n);
}

TEST_P(TFRecordTest, BadLengthCrcEndsTheFile) {
  const std::string path = WriteTFRecordFile("badlen", {"first", "second", "third"}, Compression::kNone);
  std::string bytes = ReadWholeFile(path);
  const size_t second = 16 + 5;
  bytes[second + 9] ^= 0x40;  // inside the length CRC of the second record
  WriteFile(path, bytes);
  Collected got = SyncWait(Collect(ReadTFRecords(reactor(), path, {}, SmallBlocks(8, 3))));
  EXPECT_EQ(got.records, std::vector<std::string>{"first"});
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.errors[0].message(), HasSubstr(absl::StrCat(path, ": corrupted record at offset 21")));
  EXPECT_THAT(got.errors[0].message(), HasSubstr("length CRC mismatch"));
  EXPECT_THAT(got.errors[0].message(), HasSubstr("the rest of the file is unreadable"));
}

TEST_P(TFRecordTest, LengthOverLimitIsNeverAllocated) {
  const std::string path = WriteTFRecordFile("toolong", {"ok", std::string(1000, 'x'), "after"}, Compression::kNone);
  TFRecordReaderOptions options;
  options.max_record_bytes = 100;
  Collected got = SyncWait(Collect(ReadTFRecords(reactor(), path, options, DefaultIo())));
  EXPECT_EQ(got.records, std::vector<std::string>{"ok"});
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.errors[0].message(), HasSubstr(path));
  EXPECT_THAT(got.errors[0].message(), HasSubstr("offset 18"));
  EXPECT_THAT(got.errors[0].message(), HasSubstr("1000"));
  EXPECT_THAT(got.errors[0].message(), HasSubstr("the rest of the file is unreadable"));
}

TEST_P(TFRecordTest, CorruptGzipStream) {
  std::vector<std::string> records;
  for (int i = 0; i < 200; ++i) records.push_back(RandomBytes(1000, i));
  const std::string path = WriteTFRecordFile("corrupt.gz", records, Compression::kGzip);
  std::string bytes = ReadWholeFile(path);
  for (size_t i = bytes.size() / 2; i < bytes.size() / 2 + 64; ++i) bytes[i] = static_cast<char>(0xff);
  WriteFile(path, bytes);
  TFRecordReaderOptions options;
  options.compression = Compression::kGzip;
  Collected got = SyncWait(Collect(ReadTFRecords(reactor(), path, options, SmallBlocks(4096, 2)), 1000));
  EXPECT_LT(got.records.size(), records.size());
  ASSERT_FALSE(got.errors.empty());
  EXPECT_EQ(got.errors.back().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.errors.back().message(), HasSubstr(path));
  for (size_t i = 0; i < got.records.size(); ++i) EXPECT_EQ(got.records[i], records[i]);
}

// `plain` compressed, with one bit of its trailer's checksum flipped: every byte decompresses, then the
// check fails. Returns the compressed offset of the checksum field.
size_t WriteWithBadTrailer(const std::string& path, const std::string& plain, Compression compression) {
  std::string bytes = Compress(plain, compression);
  // gzip ends in CRC32 and ISIZE, zlib in Adler-32.
  const size_t check = bytes.size() - (compression == Compression::kGzip ? 8 : 4);
  bytes[check] = static_cast<char>(bytes[check] ^ 0x01);
  WriteFile(path, bytes);
  return check;
}

// Issue 13: the records decompressed just before a failing check (up to 256 KiB of output) were lost.
TEST_P(TFRecordTest, CompressedBadTrailerYieldsEveryRecordThenDataLoss) {
  std::vector<std::string> records;
  std::string plain;
  for (int i = 0; i < 5000; ++i) {
    records.push_back(RandomBytes(100 + i % 7, i));  // random: about 600 KB compressed, several output chunks
    io::AppendTFRecord(records.back(), &plain);
  }
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    const std::string path = TempPath(absl::StrCat("bad_trailer", static_cast<int>(c)));
    const size_t check = WriteWithBadTrailer(path, plain, c);
    TFRecordReaderOptions options;
    options.compression = c;
    for (const ReadOptions& io : {DefaultIo(), SmallBlocks(4096, 2)}) {
      Collected got = SyncWait(Collect(ReadTFRecords(reactor(), path, options, io)));
      EXPECT_EQ(got.records.size(), records.size());
      EXPECT_TRUE(got.records == records);
      ASSERT_EQ(got.errors.size(), 1u);
      EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kDataLoss);
      EXPECT_THAT(got.errors[0].message(), HasSubstr(path));
      EXPECT_THAT(got.errors[0].message(),
                  HasSubstr(absl::StrCat("compressed offset ", check, ": incorrect data check")));
    }
  }
}

// Damage where a deflate block starts, after a sync flush that ends the first `kept` records: those come
// out, then one DataLoss naming the damaged byte.
TEST_P(TFRecordTest, CompressedDamageMidStreamKeepsTheRecordsBeforeIt) {
  std::vector<std::string> records;
  for (int i = 0; i < 3000; ++i) records.push_back(RandomBytes(200, 1000 + i));
  constexpr size_t kKept = 2000;
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    absl::StatusOr<io::Deflater> d =
        io::Deflater::Create(c == Compression::kGzip ? io::ZlibFormat::kGzip : io::ZlibFormat::kZlib);
    ASSERT_TRUE(d.ok());
    std::string bytes;
    size_t flushed = 0;
    for (size_t i = 0; i < records.size(); ++i) {
      std::string framed;
      io::AppendTFRecord(records[i], &framed);
      ASSERT_TRUE(d->Compress(io::AsBytes(framed), &bytes).ok());
      if (i + 1 == kKept) {
        ASSERT_TRUE(d->Flush(&bytes).ok());
        flushed = bytes.size();
      }
    }
    ASSERT_TRUE(d->Finish(&bytes).ok());
    bytes[flushed] = static_cast<char>(bytes[flushed] | 0x06);  // block type 3 (reserved): refused at once
    const std::string path = TempPath(absl::StrCat("mid_damage", static_cast<int>(c)));
    WriteFile(path, bytes);
    TFRecordReaderOptions options;
    options.compression = c;
    for (const ReadOptions& io : {DefaultIo(), SmallBlocks(4096, 2)}) {
      Collected got = SyncWait(Collect(ReadTFRecords(reactor(), path, options, io)));
      ASSERT_EQ(got.records.size(), kKept);
      EXPECT_TRUE(std::equal(got.records.begin(), got.records.end(), records.begin()));
      ASSERT_EQ(got.errors.size(), 1u);
      EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kDataLoss);
      EXPECT_THAT(got.errors[0].message(), HasSubstr(path));
      EXPECT_THAT(got.errors[0].message(),
                  HasSubstr(absl::StrCat("compressed offset ", flushed + 1, ": invalid block type")));
    }
  }
}

// Damage that zlib decodes without noticing (here: inside stored blocks) breaks the framing first; the
// reader then inflates the rest to name the compressed stream's own error too (its trailer's checksum).
TEST_P(TFRecordTest, CompressedDamageThatBreaksTheFramingIsNamedInTheCompressedFile) {
  std::vector<std::string> records;
  std::string plain;
  for (int i = 0; i < 300; ++i) {
    records.push_back(
        RandomBytes(100 + static_cast<size_t>(i), 2000 + i));  // distinct lengths: distinct headers
    io::AppendTFRecord(records.back(), &plain);
  }
  constexpr size_t kDamaged = 150;
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    absl::StatusOr<io::Deflater> d = io::Deflater::Create(
        c == Compression::kGzip ? io::ZlibFormat::kGzip : io::ZlibFormat::kZlib, /*level=*/0);  // stored blocks
    ASSERT_TRUE(d.ok());
    std::string bytes;
    ASSERT_TRUE(d->Compress(io::AsBytes(plain), &bytes).ok());
    ASSERT_TRUE(d->Finish(&bytes).ok());
    std::string header;
    io::AppendTFRecord(records[kDamaged], &header);
    header.resize(io::kTFRecordHeaderBytes);
    const size_t at = bytes.find(header);
    ASSERT_NE(at, std::string::npos);
    bytes[at] = static_cast<char>(bytes[at] ^ 0x01);  // the length: its CRC no longer matches
    const std::string path = TempPath(absl::StrCat("stored_damage", static_cast<int>(c)));
    WriteFile(path, bytes);
    TFRecordReaderOptions options;
    options.compression = c;
    Collected got = SyncWait(Collect(ReadTFRecords(reactor(), path, options, DefaultIo())));
    ASSERT_EQ(got.records.size(), kDamaged);
    EXPECT_TRUE(std::equal(got.records.begin(), got.records.end(), records.begin()));
    ASSERT_EQ(got.errors.size(), 2u);
    EXPECT_THAT(got.errors[0].message(), HasSubstr("length CRC mismatch"));
    EXPECT_EQ(got.errors[1].code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(got.errors[1].message(),
                HasSubstr(absl::StrCat(path, ": corrupt ", c == Compression::kGzip ? "GZIP" : "ZLIB",
                                       " stream at compressed offset ",
                                       bytes.size() - (c == Compression::kGzip ? 8 : 4), ": incorrect data check")));
  }
}

TEST_P(TFRecordTest, MissingFileAndDirectory) {
  const std::string missing = TempPath("does_not_exist.tfrecord");
  Collected got = SyncWait(Collect(ReadTFRecords(reactor(), missing, {}, DefaultIo())));
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(got.errors[0].message(), HasSubstr(missing));
  EXPECT_TRUE(got.records.empty());

  Collected dir = SyncWait(Collect(ReadTFRecords(reactor(), ::testing::TempDir(), {}, DefaultIo())));
  ASSERT_EQ(dir.errors.size(), 1u);
  EXPECT_THAT(dir.errors[0].message(), HasSubstr("directory"));
}

TEST_P(TFRecordTest, UnreadableFileIsPermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads every file";
  const std::string path = WriteTFRecordFile("noperm", {"x"}, Compression::kNone);
  ASSERT_EQ(::chmod(path.c_str(), 0), 0);
  Collected got = SyncWait(Collect(ReadTFRecords(reactor(), path, {}, DefaultIo())));
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(got.errors[0].message(), HasSubstr(path));
}

TEST_P(TFRecordTest, DirectIoGivesTheSameRecords) {
  std::vector<std::string> records;
  for (int i = 0; i < 300; ++i) records.push_back(RandomBytes(static_cast<size_t>(i) * 37, i));
  const std::string path = WriteTFRecordFile("direct", records, Compression::kNone);
  for (size_t block : {size_t{4096}, size_t{6000}, size_t{1} << 20}) {
    ReadOptions io = SmallBlocks(block, 3);
    io.direct = true;  // may fall back on tmpfs: the records must be right either way
    Collected got = SyncWait(Collect(ReadTFRecords(reactor(), path, {}, io)));
    EXPECT_TRUE(got.errors.empty()) << got.errors[0];
    EXPECT_EQ(got.records, records) << block;
  }
}

// `gen` is kept alive by the caller until the task completes.
Task<std::optional<absl::StatusOr<Record>>> NextOf(AsyncGenerator<absl::StatusOr<Record>>* gen) {
  std::optional<absl::StatusOr<Record>> r = co_await gen->Next();
  co_return r;
}

// Pulls `n` records and returns, destroying the generator with reads in flight.
Task<size_t> PullSome(AsyncGenerator<absl::StatusOr<Record>> gen, size_t n) {
  size_t pulled = 0;
  while (pulled < n) {
    std::optional<absl::StatusOr<Record>> r = co_await gen.Next();
    if (!r.has_value() || !r->ok()) break;
    ++pulled;
  }
  co_return pulled;
}

TEST_P(TFRecordTest, DestroyMidStreamWithReadsInFlight) {
  std::vector<std::string> records;
  for (int i = 0; i < 400; ++i) records.push_back(RandomBytes(10000, i));
  const std::string path = WriteTFRecordFile("destroy", records, Compression::kNone);
  for (size_t n : {size_t{0}, size_t{1}, size_t{5}, size_t{150}}) {
    // Destroyed inside the task (on the parse pool), right after the last pull.
    EXPECT_EQ(SyncWait(PullSome(ReadTFRecords(reactor(), path, {}, SmallBlocks(16384, 8)), n)), n);
    // Destroyed on this thread, after the pulls returned.
    AsyncGenerator<absl::StatusOr<Record>> gen = ReadTFRecords(reactor(), path, {}, SmallBlocks(8192, 6));
    for (size_t i = 0; i < n; ++i) {
      std::optional<absl::StatusOr<Record>> r = SyncWait(NextOf(&gen));
      ASSERT_TRUE(r.has_value() && r->ok());
      EXPECT_EQ((*r)->str(), records[i]);
    }
  }
}

Task<size_t> PullUntilCancelled(AsyncGenerator<absl::StatusOr<Record>> gen, std::stop_source* stop,
                                size_t stop_after, absl::Status* last_error) {
  size_t pulled = 0;
  for (size_t i = 0; i < 100'000; ++i) {
    if (pulled == stop_after) stop->request_stop();
    std::optional<absl::StatusOr<Record>> r = co_await gen.Next();
    if (!r.has_value()) break;
    if (!r->ok()) {
      *last_error = r->status();
      continue;
    }
    ++pulled;
  }
  co_return pulled;
}

TEST_P(TFRecordTest, StopMidStreamEndsWithCancelled) {
  std::vector<std::string> records;
  for (int i = 0; i < 400; ++i) records.push_back(RandomBytes(10000, i));
  const std::string path = WriteTFRecordFile("stop", records, Compression::kNone);
  for (size_t stop_after : {size_t{0}, size_t{3}, size_t{100}}) {
    std::stop_source stop;
    absl::Status last_error;
    const size_t pulled = SyncWait(
        PullUntilCancelled(ReadTFRecords(reactor(), path, {}, SmallBlocks(16384, 4)), &stop, stop_after, &last_error),
        stop.get_token());
    // Records already parsed from the current block may still arrive, never the whole file.
    EXPECT_GE(pulled, stop_after);
    EXPECT_LT(pulled, records.size());
    EXPECT_EQ(last_error.code(), absl::StatusCode::kCancelled) << last_error;
    EXPECT_THAT(last_error.message(), HasSubstr(path));
  }
}

TEST_P(TFRecordTest, RandomBlockSizesAndDepthsMatchDecoder) {
  std::mt19937 rng(4242);
  for (int iter = 0; iter < kPropertyIterations; ++iter) {
    std::vector<std::string> records(rng() % 40);
    for (std::string& r : records) r = RandomBytes(rng() % 3 == 0 ? rng() % 20000 : rng() % 200, rng());
    const Compression c = static_cast<Compression>(rng() % 3);
    const std::string path = WriteTFRecordFile("prop", records, c);
    TFRecordReaderOptions options;
    options.compression = c;
    ReadOptions io = SmallBlocks(1 + rng() % 9000, 1 + static_cast<int>(rng() % 5));
    io.min_zero_copy_bytes = rng() % 5000;
    Collected got = SyncWait(Collect(ReadTFRecords(reactor(), path, options, io)));
    Collected want = ReferenceTFRecords(path, c);
    ASSERT_TRUE(got.errors.empty()) << got.errors[0];
    ASSERT_EQ(got.records, records) << "iteration " << iter;
    ASSERT_EQ(got.offsets, want.offsets);
  }
}

Task<std::vector<Record>> KeepAll(AsyncGenerator<absl::StatusOr<Record>> gen) {
  std::vector<Record> kept;
  for (;;) {
    std::optional<absl::StatusOr<Record>> r = co_await gen.Next();
    if (!r.has_value()) break;
    EXPECT_TRUE(r->ok()) << r->status();
    if (r->ok()) kept.push_back(std::move(**r));
  }
  co_return kept;  // `gen` (and with it the reader's own hold on its blocks) is destroyed here
}

TEST_P(TFRecordTest, ZeroCopyRecordsOutliveTheReader) {
  std::vector<std::string> records;
  for (uint32_t i = 0; i < 12; ++i) records.push_back(RandomBytes(100 << 10, i));
  const std::string path = WriteTFRecordFile("outlive", records, Compression::kNone);
  // Windows of 256 KiB: some records lie inside one (views), others straddle two (copies).
  std::vector<Record> kept =
      SyncWait(KeepAll(ReadTFRecords(reactor(), path, {}, SmallBlocks(256 << 10, 2))));
  ASSERT_EQ(kept.size(), records.size());
  size_t views = 0;
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(kept[i].str(), records[i]) << i;
    if (kept[i].owner.get() != static_cast<const void*>(kept[i].data.data())) ++views;
  }
  EXPECT_GT(views, 0u);  // views pin their block (a mapping in the mmap mode) past the reader
}

TEST_P(TFRecordTest, EmptyAndTinyFiles) {
  const std::string empty = WriteTFRecordFile("empty", {}, Compression::kNone);
  Collected got = SyncWait(Collect(ReadTFRecords(reactor(), empty, {}, DefaultIo())));
  EXPECT_TRUE(got.errors.empty());
  EXPECT_TRUE(got.records.empty());
  const std::string tiny = WriteTFRecordFile("tiny", {"a", "", "bc"}, Compression::kNone);
  got = SyncWait(Collect(ReadTFRecords(reactor(), tiny, {}, DefaultIo())));
  EXPECT_TRUE(got.errors.empty());
  EXPECT_EQ(got.records, (std::vector<std::string>{"a", "", "bc"}));
  EXPECT_EQ(got.offsets, (std::vector<uint64_t>{0, 17, 33}));
}

using TextLineTest = ReaderTest;

Collected ReadLines(Reactor& reactor, const std::string& name, const std::string& content, Compression c,
                    size_t block_size, int depth = 2) {
  const std::string path = TempPath(name);
  WriteFile(path, Compress(content, c));
  TextLineOptions options;
  options.compression = c;
  options.io = SmallBlocks(block_size, depth);
  options.io.min_zero_copy_bytes = 8;
  return SyncWait(Collect(ReadTextLines(reactor, path, options)));
}

TEST_P(TextLineTest, LineEndingsEmptyLinesAndLastLine) {
  const std::string long_line = RandomBytes(20000, 7);
  std::string long_clean = long_line;
  std::replace(long_clean.begin(), long_clean.end(), '\n', 'n');
  std::replace(long_clean.begin(), long_clean.end(), '\r', 'r');
  struct Case {
    std::string content;
    std::vector<std::string> lines;
    std::vector<uint64_t> offsets;
  };
  const std::vector<Case> cases = {
      {"", {}, {}},
      {"\n", {""}, {0}},
      {"a\nbb\r\n\nccc", {"a", "bb", "", "ccc"}, {0, 2, 6, 7}},
      {"x\r\ny\r\n", {"x", "y"}, {0, 3}},
      {"no newline", {"no newline"}, {0}},
      {"\r\n\r\n", {"", ""}, {0, 2}},
      {"keep\rinside\n", {"keep\rinside"}, {0}},
      {long_clean + "\r\n" + long_clean, {long_clean, long_clean}, {0, 20002}},
  };
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    for (size_t block : {size_t{1}, size_t{3}, size_t{4096}, size_t{1} << 20}) {
      for (size_t i = 0; i < cases.size(); ++i) {
        if (block == 1 && (c != Compression::kNone || cases[i].content.size() > 100)) continue;  // keep it fast
        if (testing_util::kSanitizedBuild && (block == 1 || block == (size_t{1} << 20)) &&
            c != Compression::kNone)
          continue;
        Collected got = ReadLines(reactor(), absl::StrCat("lines", i), cases[i].content, c, block);
        EXPECT_TRUE(got.errors.empty()) << got.errors[0];
        EXPECT_EQ(got.records, cases[i].lines) << "case " << i << " block " << block;
        EXPECT_EQ(got.offsets, cases[i].offsets) << "case " << i << " block " << block;
      }
    }
  }
}

TEST_P(TextLineTest, LineOverLimitIsDataLoss) {
  const std::string path = TempPath("longline");
  WriteFile(path, "short\n" + std::string(5000, 'z') + "\nafter\n");
  TextLineOptions options;
  options.max_line_bytes = 1000;
  options.io = SmallBlocks(512, 2);
  Collected got = SyncWait(Collect(ReadTextLines(reactor(), path, options)));
  EXPECT_EQ(got.records, std::vector<std::string>{"short"});
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.errors[0].message(), HasSubstr(absl::StrCat(path, ": line at offset 6")));
}

TEST_P(TextLineTest, CorruptGzipAndMissingFile) {
  std::string lines;
  for (int i = 0; i < 5000; ++i) absl::StrAppend(&lines, "line number ", i, "\n");
  std::string gz = Compress(lines, Compression::kGzip);
  gz.resize(gz.size() / 2);  // truncated stream
  const std::string path = TempPath("trunc.txt.gz");
  WriteFile(path, gz);
  TextLineOptions options;
  options.compression = Compression::kGzip;
  options.io = SmallBlocks(1024, 2);
  Collected got = SyncWait(Collect(ReadTextLines(reactor(), path, options)));
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.errors[0].message(), HasSubstr(path));
  EXPECT_LT(got.records.size(), 5000u);
  for (size_t i = 0; i < got.records.size(); ++i) EXPECT_EQ(got.records[i], absl::StrCat("line number ", i));

  Collected missing = SyncWait(Collect(ReadTextLines(reactor(), TempPath("missing.txt"))));
  ASSERT_EQ(missing.errors.size(), 1u);
  EXPECT_EQ(missing.errors[0].code(), absl::StatusCode::kNotFound);
}

// The text and fixed-length readers see the same: every line or record, then the DataLoss.
TEST_P(TextLineTest, CompressedBadTrailerYieldsEveryLineAndRecord) {
  std::string lines;
  for (int i = 0; i < 40000; ++i) absl::StrAppend(&lines, "line number ", i, "\n");
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    const std::string path = TempPath(absl::StrCat("bad_trailer_lines", static_cast<int>(c)));
    const size_t check = WriteWithBadTrailer(path, lines, c);
    TextLineOptions text;
    text.compression = c;
    text.io = DefaultIo();
    Collected got = SyncWait(Collect(ReadTextLines(reactor(), path, text)));
    ASSERT_EQ(got.records.size(), 40000u);
    EXPECT_EQ(got.records.back(), "line number 39999");
    ASSERT_EQ(got.errors.size(), 1u);
    EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(got.errors[0].message(), HasSubstr(absl::StrCat(path, ": corrupt ")));
    EXPECT_THAT(got.errors[0].message(), HasSubstr(absl::StrCat("compressed offset ", check)));

    FixedLengthRecordOptions fixed;
    fixed.compression = c;
    fixed.record_bytes = 16;
    fixed.io = DefaultIo();
    got = SyncWait(Collect(ReadFixedLengthRecords(reactor(), path, fixed)));
    EXPECT_EQ(got.records.size(), lines.size() / 16);
    ASSERT_EQ(got.errors.size(), 1u);
    EXPECT_THAT(got.errors[0].message(), HasSubstr(absl::StrCat("compressed offset ", check)));
  }
}

using FixedLengthTest = ReaderTest;

TEST_P(FixedLengthTest, HeaderRecordsFooter) {
  std::string body;
  std::vector<std::string> expected;
  for (int i = 0; i < 50; ++i) {
    expected.push_back(RandomBytes(7, i));
    body += expected.back();
  }
  const std::string content = "HEADER" + body + "FOOT";
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    const std::string path = TempPath(absl::StrCat("fixed", static_cast<int>(c)));
    WriteFile(path, Compress(content, c));
    for (size_t block : {size_t{1}, size_t{5}, size_t{64}, size_t{1} << 20}) {
      FixedLengthRecordOptions options;
      options.header_bytes = 6;
      options.record_bytes = 7;
      options.footer_bytes = 4;
      options.compression = c;
      options.io = SmallBlocks(block, 3);
      options.io.min_zero_copy_bytes = 1;
      Collected got = SyncWait(Collect(ReadFixedLengthRecords(reactor(), path, options)));
      EXPECT_TRUE(got.errors.empty()) << got.errors[0];
      EXPECT_EQ(got.records, expected) << "block " << block;
      ASSERT_EQ(got.offsets.size(), expected.size());
      EXPECT_EQ(got.offsets[3], 6u + 3 * 7);
    }
  }
}

TEST_P(FixedLengthTest, PartialRecordTooShortAndBadOptions) {
  const std::string path = TempPath("fixed_partial");
  WriteFile(path, "HHabcdefgFF");  // header 2, body 7 = 2 records of 3 + 1 byte, footer 2
  FixedLengthRecordOptions options;
  options.header_bytes = 2;
  options.record_bytes = 3;
  options.footer_bytes = 2;
  options.io = SmallBlocks(4, 2);
  Collected got = SyncWait(Collect(ReadFixedLengthRecords(reactor(), path, options)));
  EXPECT_EQ(got.records, (std::vector<std::string>{"abc", "def"}));
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.errors[0].message(), HasSubstr(path));
  EXPECT_THAT(got.errors[0].message(), HasSubstr("1 bytes at offset 8"));

  WriteFile(path, "HHF");
  got = SyncWait(Collect(ReadFixedLengthRecords(reactor(), path, options)));
  EXPECT_TRUE(got.records.empty());
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_THAT(got.errors[0].message(), HasSubstr("fewer than header_bytes + footer_bytes"));

  options.record_bytes = 0;
  got = SyncWait(Collect(ReadFixedLengthRecords(reactor(), path, options)));
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kInvalidArgument);

  WriteFile(path, "");
  options.header_bytes = 0;
  options.footer_bytes = 0;
  options.record_bytes = 4;
  got = SyncWait(Collect(ReadFixedLengthRecords(reactor(), path, options)));
  EXPECT_TRUE(got.records.empty());
  EXPECT_TRUE(got.errors.empty());
}

// Issue 13, item 8: header + footer past 2^64 wrapped around and the messages printed the wrapped sums.
TEST_P(FixedLengthTest, SizesPastTwoToTheSixtyFourAreInvalidArgument) {
  const std::string path = TempPath("fixed_overflow");
  WriteFile(path, "HHabcdefgFF");
  constexpr uint64_t kHalf = uint64_t{1} << 63;
  for (const auto& [header, record, footer] :
       {std::tuple{kHalf, uint64_t{1}, kHalf}, std::tuple{uint64_t{0}, ~uint64_t{0}, uint64_t{1}},
        std::tuple{uint64_t{2}, kHalf, kHalf - 1}}) {
    FixedLengthRecordOptions options;
    options.header_bytes = header;
    options.record_bytes = record;
    options.footer_bytes = footer;
    options.io = DefaultIo();
    Collected got = SyncWait(Collect(ReadFixedLengthRecords(reactor(), path, options)));
    EXPECT_TRUE(got.records.empty());
    ASSERT_EQ(got.errors.size(), 1u);
    EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kInvalidArgument) << got.errors[0];
    EXPECT_THAT(std::string(got.errors[0].message()),
                HasSubstr(absl::StrCat(path, ": header_bytes (", header, ") + record_bytes (", record,
                                       ") + footer_bytes (", footer, ") is more than any file can hold")));
  }
}

// Issue 13, item 8: a symbolic link loop was UNKNOWN; it is FAILED_PRECONDITION naming the path.
TEST_P(TFRecordTest, SymlinkLoopIsFailedPreconditionNamingThePath) {
  const std::string a = TempPath("loop_a");
  const std::string b = TempPath("loop_b");
  std::remove(a.c_str());  // left by the test's run with another parameter
  std::remove(b.c_str());
  ASSERT_EQ(::symlink(b.c_str(), a.c_str()), 0);
  ASSERT_EQ(::symlink(a.c_str(), b.c_str()), 0);
  Collected got = SyncWait(Collect(ReadTFRecords(reactor(), a, {}, DefaultIo())));
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kFailedPrecondition) << got.errors[0];
  EXPECT_THAT(got.errors[0].message(), HasSubstr(a));
  EXPECT_THAT(got.errors[0].message(), HasSubstr("Too many levels of symbolic links"));
}

// Issue 13, item 8: /proc files stat as empty but read as text; they were 0 records and no error. A file of
// size 0 is read to its end.
TEST_P(TextLineTest, FileOfSizeZeroIsReadToItsEnd) {
  TextLineOptions options;
  options.io = DefaultIo();
  Collected status = SyncWait(Collect(ReadTextLines(reactor(), "/proc/self/status", options)));
  EXPECT_TRUE(status.errors.empty()) << status.errors[0];
  ASSERT_GT(status.records.size(), 10u);
  EXPECT_EQ(status.records[0].rfind("Name:\t", 0), 0u) << status.records[0];
  EXPECT_NE(std::find(status.records.begin(), status.records.end(), absl::StrCat("Pid:\t", ::getpid())),
            status.records.end());
  // Larger than a block (4 KiB here): read block after block until a read returns nothing.
  options.io = SmallBlocks(4096, 2);
  Collected smaps = SyncWait(Collect(ReadTextLines(reactor(), "/proc/self/smaps", options)));
  EXPECT_TRUE(smaps.errors.empty()) << smaps.errors[0];
  size_t bytes = 0;
  for (const std::string& line : smaps.records) bytes += line.size() + 1;
  EXPECT_GT(bytes, 3 * 4096u);
  EXPECT_EQ(smaps.offsets.back() + smaps.records.back().size() + 1, bytes);
  // A truly empty file is still no lines and no error.
  const std::string empty = TempPath("really_empty.txt");
  WriteFile(empty, "");
  options.io = DefaultIo();
  Collected got = SyncWait(Collect(ReadTextLines(reactor(), empty, options)));
  EXPECT_TRUE(got.records.empty());
  EXPECT_TRUE(got.errors.empty());
}

TEST_P(TextLineTest, TextAndFixedLengthDestroyedMidStream) {
  std::string lines;
  for (int i = 0; i < 20000; ++i) absl::StrAppend(&lines, "line ", i, "\n");
  for (Compression c : {Compression::kNone, Compression::kGzip}) {
    const std::string path = TempPath(absl::StrCat("destroy_lines", static_cast<int>(c)));
    WriteFile(path, Compress(lines, c));
    for (size_t n : {size_t{0}, size_t{1}, size_t{700}}) {
      TextLineOptions text;
      text.compression = c;
      text.io = SmallBlocks(4096, 4);
      EXPECT_EQ(SyncWait(PullSome(ReadTextLines(reactor(), path, text), n)), n);
      FixedLengthRecordOptions fixed;
      fixed.record_bytes = 10;
      fixed.header_bytes = 3;
      fixed.compression = c;
      fixed.io = SmallBlocks(4096, 4);
      EXPECT_EQ(SyncWait(PullSome(ReadFixedLengthRecords(reactor(), path, fixed), n)), n);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, TextLineTest, BackendModeValues(), BackendModeName);
INSTANTIATE_TEST_SUITE_P(Backends, FixedLengthTest, BackendModeValues(), BackendModeName);
INSTANTIATE_TEST_SUITE_P(Backends, TFRecordTest, BackendModeValues(), BackendModeName);

}  // namespace
}  // namespace record_readers_test_file
}  // namespace sluice
