// Readers started at an offset (start_offset) and the position they report (ReadOptions::position):
// every record offset of real and generated files, restarted, gives exactly the rest of a full read.
#include "sluice/io/record_readers.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/tfrecord_format.h"
#include "io/zlib_stream.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/thread_pool.h"
#include "sluice/io/sequential_reader.h"
#include "sluice/io/tfrecord.h"
#include "tests/sanitized_build.h"
#include "tests/test_util.h"

namespace sluice {
namespace record_resume_test_file {
namespace {

using testing_util::Compress;
using testing_util::BackendModeName;
using testing_util::BackendModeTest;
using testing_util::BackendModeValues;
using testing_util::ReadWholeFile;
using testing_util::SharedTFRecord;
using testing_util::TempPath;
using testing_util::WriteFile;
using ::testing::HasSubstr;

// One element a reader yielded, with the position it reported for the element after it.
struct Item {
  absl::StatusOr<std::string> value;
  uint64_t offset = 0;  // Record::offset (records only)
  uint64_t next_offset = 0;
  bool ended = false;
};

Task<std::vector<Item>> Drain(AsyncGenerator<absl::StatusOr<Record>> gen, std::shared_ptr<ReaderPosition> position) {
  std::vector<Item> out;
  for (int guard = 0; guard < 1'000'000; ++guard) {
    std::optional<absl::StatusOr<Record>> r = co_await gen.Next();
    if (!r.has_value()) co_return out;
    Item item;
    if (r->ok()) {
      item.value = std::string((*r)->str());
      item.offset = (*r)->offset;
    } else {
      item.value = r->status();
    }
    item.next_offset = position->next_offset;
    item.ended = position->ended;
    out.push_back(std::move(item));
  }
  ADD_FAILURE() << "reader did not end";
  co_return out;
}

enum class Kind { kTFRecord, kText, kFixed };

struct FileCase {
  std::string path;
  Kind kind = Kind::kTFRecord;
  Compression compression = Compression::kNone;
  uint64_t header = 0, record = 0, footer = 0;  // kFixed
};


class ResumeTest : public BackendModeTest {
 protected:
  // Small blocks and windows (one page) so that start offsets land inside later blocks and windows.
  ReadOptions Io(bool small) const {
    ReadOptions io;
    io.mode = mode();
    if (small) {
      io.block_size = 4096;
      io.mmap_window = 4096;
    }
    return io;
  }

  std::vector<Item> Read(const FileCase& f, uint64_t start, bool small = false) {
    auto position = std::make_shared<ReaderPosition>();
    ReadOptions io = Io(small);
    io.position = position;
    AsyncGenerator<absl::StatusOr<Record>> gen;
    if (f.kind == Kind::kTFRecord) {
      TFRecordReaderOptions options;
      options.compression = f.compression;
      options.start_offset = start;
      gen = ReadTFRecords(reactor(), f.path, options, io);
    } else if (f.kind == Kind::kText) {
      TextLineOptions options;
      options.compression = f.compression;
      options.start_offset = start;
      options.io = io;
      gen = ReadTextLines(reactor(), f.path, options);
    } else {
      FixedLengthRecordOptions options;
      options.header_bytes = f.header;
      options.record_bytes = f.record;
      options.footer_bytes = f.footer;
      options.compression = f.compression;
      options.start_offset = start;
      options.io = io;
      gen = ReadFixedLengthRecords(reactor(), f.path, options);
    }
    return SyncWait(Drain(std::move(gen), position));
  }

  // A full read has no errors and chains its positions; a restart at every record's offset yields
  // exactly the records from it on; the end yields nothing; one byte past it is OutOfRange.
  void CheckEveryOffset(const FileCase& f, size_t expected_records) {
    SCOPED_TRACE(f.path);
    const std::vector<Item> full = Read(f, 0);
    ASSERT_EQ(full.size(), expected_records);
    for (size_t i = 0; i < full.size(); ++i) {
      ASSERT_TRUE(full[i].value.ok()) << full[i].value.status();
      EXPECT_FALSE(full[i].ended);
      if (i + 1 < full.size()) {
        EXPECT_EQ(full[i].next_offset, full[i + 1].offset) << i;
      }
    }
    const uint64_t end = full.back().next_offset;
    if (f.compression == Compression::kNone) {
      EXPECT_EQ(end, std::filesystem::file_size(f.path) - f.footer);
    }
    for (size_t i = 0; i < full.size(); ++i) {
      // Sanitizer builds restart at the first and last 16 records and every 8th between them: every start
      // reads the rest of the file, and the plain build checks them all.
      if (testing_util::kSanitizedBuild && i >= 16 && i + 16 < full.size() && i % 8 != 0) continue;
      for (bool small : {false, true}) {
        const std::vector<Item> rest = Read(f, full[i].offset, small);
        ASSERT_EQ(rest.size(), full.size() - i) << "start " << full[i].offset << " small " << small;
        for (size_t j = 0; j < rest.size(); ++j) {
          ASSERT_TRUE(rest[j].value.ok()) << rest[j].value.status();
          EXPECT_EQ(*rest[j].value, *full[i + j].value) << i << "+" << j;
          EXPECT_EQ(rest[j].offset, full[i + j].offset) << i << "+" << j;
          EXPECT_EQ(rest[j].next_offset, full[i + j].next_offset) << i << "+" << j;
        }
      }
    }
    EXPECT_TRUE(Read(f, end).empty());
    EXPECT_TRUE(Read(f, end, /*small=*/true).empty());
    // Past the end (for fixed-length records, the next record boundary past it).
    const uint64_t past = f.kind == Kind::kFixed ? end + f.record : end + 1;
    const std::vector<Item> beyond = Read(f, past);
    ASSERT_EQ(beyond.size(), 1u);
    EXPECT_EQ(beyond[0].value.status().code(), absl::StatusCode::kOutOfRange) << beyond[0].value.status();
    EXPECT_THAT(beyond[0].value.status().message(), HasSubstr(f.path));
    EXPECT_THAT(beyond[0].value.status().message(), HasSubstr(absl::StrCat("start offset ", past)));
    EXPECT_TRUE(beyond[0].ended);
  }
};

using TFRecordResumeTest = ResumeTest;
using TextLineResumeTest = ResumeTest;
using FixedLengthResumeTest = ResumeTest;

TEST_P(TFRecordResumeTest, EveryRecordOffsetOfSharedFiles) {
  ASSERT_TRUE(std::filesystem::is_directory(testing_util::SharedTFRecordDir())) << "set SLUICE_SHARED_DIR";
  const std::vector<std::pair<FileCase, size_t>> cases = {
      {{SharedTFRecord("torchdata_example.tfrecord")}, 4},
      {{SharedTFRecord("beam_foo_bar.tfrecord")}, 2},
      {{SharedTFRecord("derived/torchdata_example.tfrecord.gz"), Kind::kTFRecord, Compression::kGzip}, 4},
      {{SharedTFRecord("derived/torchdata_example.tfrecord.zlib"), Kind::kTFRecord, Compression::kZlib}, 4},
      {{SharedTFRecord("derived/tfx_penguin_eval_uncompressed.tfrecord")}, 100},
      {{SharedTFRecord("tfx_penguin/Split-eval/data_tfrecord-00000-of-00001.gz"), Kind::kTFRecord,
        Compression::kGzip},
       100},
      {{SharedTFRecord("tfx_penguin/Split-train/data_tfrecord-00000-of-00001.gz"), Kind::kTFRecord,
        Compression::kGzip},
       234},
  };
  for (const auto& [f, count] : cases) CheckEveryOffset(f, count);
}

// The uncompressed penguin eval split is the GZIP one decompressed: the same records at the same offsets.
TEST_P(TFRecordResumeTest, CompressedOffsetsAreDecompressedStreamOffsets) {
  FileCase plain{SharedTFRecord("derived/tfx_penguin_eval_uncompressed.tfrecord")};
  FileCase gzip{SharedTFRecord("tfx_penguin/Split-eval/data_tfrecord-00000-of-00001.gz"), Kind::kTFRecord,
                Compression::kGzip};
  const std::vector<Item> a = Read(plain, 0);
  ASSERT_EQ(a.size(), 100u);
  const std::vector<Item> b = Read(gzip, a[50].offset);
  ASSERT_EQ(b.size(), 50u);
  for (size_t j = 0; j < b.size(); ++j) {
    ASSERT_TRUE(b[j].value.ok()) << b[j].value.status();
    EXPECT_EQ(*b[j].value, *a[50 + j].value);
    EXPECT_EQ(b[j].offset, a[50 + j].offset);
  }
}

// A start inside a record reads its bytes as a header: the length CRC fails and the file ends there.
TEST_P(TFRecordResumeTest, StartInsideARecordIsDataLoss) {
  for (Compression compression : {Compression::kNone, Compression::kGzip}) {
    FileCase f{compression == Compression::kNone ? SharedTFRecord("torchdata_example.tfrecord")
                                                 : SharedTFRecord("derived/torchdata_example.tfrecord.gz"),
               Kind::kTFRecord, compression};
    const std::vector<Item> full = Read(f, 0);
    ASSERT_EQ(full.size(), 4u);
    const uint64_t inside = full[1].offset + 5;
    const std::vector<Item> got = Read(f, inside);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].value.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(got[0].value.status().message(), HasSubstr(absl::StrCat("offset ", inside)));
    EXPECT_THAT(got[0].value.status().message(), HasSubstr("length CRC mismatch"));
    EXPECT_TRUE(got[0].ended);
  }
}

// A data CRC error is an element after which reading goes on: its position is the record after it.
TEST_P(TFRecordResumeTest, PositionAfterACorruptRecordIsTheNextRecord) {
  FileCase f{SharedTFRecord("derived/beam_foo_bar_corrupt_data.tfrecord")};
  const std::vector<Item> full = Read(f, 0);
  ASSERT_EQ(full.size(), 2u);
  EXPECT_EQ(full[0].value.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_FALSE(full[0].ended);
  EXPECT_EQ(full[0].next_offset, full[1].offset);
  ASSERT_TRUE(full[1].value.ok());
  const std::vector<Item> rest = Read(f, full[0].next_offset);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(*rest[0].value, "bar");
  // Restarting at the corrupt record gives its error again, then the rest.
  const std::vector<Item> again = Read(f, 0);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].value.status(), full[0].value.status());
}

// A large file read in large blocks (one mmap window, data CRCs checked on two threads): a start in the
// middle of the window gives the same records as a full read.
TEST_P(TFRecordResumeTest, LargeBlocksStartInTheMiddle) {
  const std::string path = TempPath("resume_large.tfrecord");
  {
    absl::StatusOr<TFRecordWriter> writer = TFRecordWriter::Open(path);
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (int i = 0; i < 200; ++i) {
      ASSERT_TRUE(writer->Write(std::string(40'000 + static_cast<size_t>(i) * 13, static_cast<char>(i))).ok());
    }
    ASSERT_TRUE(writer->Close().ok());
  }
  FileCase f{path};
  const std::vector<Item> full = Read(f, 0);
  ASSERT_EQ(full.size(), 200u);
  for (size_t i : {size_t{1}, size_t{77}, size_t{199}}) {
    const std::vector<Item> rest = Read(f, full[i].offset);
    ASSERT_EQ(rest.size(), full.size() - i);
    for (size_t j = 0; j < rest.size(); ++j) {
      ASSERT_TRUE(rest[j].value.ok()) << rest[j].value.status();
      EXPECT_EQ(*rest[j].value, *full[i + j].value);
      EXPECT_EQ(rest[j].offset, full[i + j].offset);
    }
  }
  std::filesystem::remove(path);
}

// Lines of many lengths, empty ones, "\r\n" endings and a last line without a newline.
std::string TextBody() {
  std::string text;
  for (int i = 0; i < 400; ++i) {
    if (i % 7 != 0) text += std::string(static_cast<size_t>((i * 37) % 150), static_cast<char>('a' + i % 26));
    text += i % 5 == 0 ? "\r\n" : "\n";
  }
  text += "last line without a newline";
  return text;
}

TEST_P(TextLineResumeTest, EveryLineOffsetOfGeneratedFiles) {
  const std::string body = TextBody();
  for (Compression compression : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    FileCase f{TempPath(absl::StrCat("resume_lines_", static_cast<int>(compression), ".txt")), Kind::kText,
               compression};
    WriteFile(f.path, Compress(body, compression));
    CheckEveryOffset(f, 401);
    // A start inside a line yields the rest of that line as a line.
    const std::vector<Item> full = Read(f, 0);
    ASSERT_EQ(full.size(), 401u);
    const std::vector<Item> tail = Read(f, full[3].offset + 4);
    ASSERT_EQ(tail.size(), 401u - 3);
    EXPECT_EQ(*tail[0].value, full[3].value->substr(4));
    EXPECT_EQ(tail[0].offset, full[3].offset + 4);
    std::filesystem::remove(f.path);
  }
}

std::string FixedBody(uint64_t header, uint64_t record, uint64_t footer, int count) {
  std::string bytes(header, 'H');
  for (int i = 0; i < count; ++i) {
    for (uint64_t b = 0; b < record; ++b) bytes += static_cast<char>((i * 31 + static_cast<int>(b)) % 251);
  }
  bytes += std::string(footer, 'F');
  return bytes;
}

TEST_P(FixedLengthResumeTest, EveryRecordOffsetOfGeneratedFiles) {
  const std::string body = FixedBody(7, 13, 5, 300);
  for (Compression compression : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    FileCase f{TempPath(absl::StrCat("resume_fixed_", static_cast<int>(compression), ".bin")), Kind::kFixed,
               compression, 7, 13, 5};
    WriteFile(f.path, Compress(body, compression));
    CheckEveryOffset(f, 300);
    // 0 is the first record; anything else off the grid of header + k * record_bytes is InvalidArgument.
    EXPECT_EQ(Read(f, 0).front().offset, 7u);
    for (uint64_t bad : {uint64_t{3}, uint64_t{8}, uint64_t{7 + 13 * 10 + 1}}) {
      const std::vector<Item> got = Read(f, bad);
      ASSERT_EQ(got.size(), 1u);
      EXPECT_EQ(got[0].value.status().code(), absl::StatusCode::kInvalidArgument) << got[0].value.status();
      EXPECT_THAT(got[0].value.status().message(), HasSubstr(f.path));
      EXPECT_THAT(got[0].value.status().message(), HasSubstr(absl::StrCat("start offset ", bad)));
    }
    std::filesystem::remove(f.path);
  }
}

// A start offset inside the leftover bytes of a body that is not a multiple of record_bytes: the
// leftover is the same DataLoss as from the start.
TEST_P(FixedLengthResumeTest, StartAtTheLeftoverIsDataLoss) {
  const std::string path = TempPath("resume_fixed_leftover.bin");
  WriteFile(path, FixedBody(4, 10, 0, 5) + "xyz");
  FileCase f{path, Kind::kFixed, Compression::kNone, 4, 10, 0};
  const std::vector<Item> got = Read(f, 4 + 10 * 5);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].value.status().code(), absl::StatusCode::kDataLoss) << got[0].value.status();
  EXPECT_THAT(got[0].value.status().message(), HasSubstr("3 bytes at offset 54"));
  std::filesystem::remove(path);
}

struct Blocks {
  std::string bytes;
  std::vector<uint64_t> offsets;
  std::vector<size_t> sizes;
  std::vector<absl::Status> errors;
};

Task<Blocks> DrainBlocks(AsyncGenerator<absl::StatusOr<Block>> gen) {
  Blocks out;
  while (std::optional<absl::StatusOr<Block>> block = co_await gen.Next()) {
    if (!block->ok()) {
      out.errors.push_back(block->status());
      continue;
    }
    out.offsets.push_back((*block)->offset);
    out.sizes.push_back((*block)->data.size());
    out.bytes.append(reinterpret_cast<const char*>((*block)->data.data()), (*block)->data.size());
  }
  co_return out;
}

// ReadBlocks from an offset: exactly the bytes from there, for read, mmap and O_DIRECT (aligned down and
// trimmed) reads, with the offset inside the first, a middle and the last block.
TEST_P(ResumeTest, ReadBlocksFromAnOffset) {
  std::string bytes;
  for (int i = 0; i < 50'000; ++i) bytes += static_cast<char>((i * 7919) % 256);
  const std::string path = TempPath("resume_blocks.bin");
  WriteFile(path, bytes);
  for (bool direct : {false, true}) {
    for (uint64_t start : {uint64_t{0}, uint64_t{1}, uint64_t{4095}, uint64_t{4097}, uint64_t{33'333},
                           uint64_t{49'999}, uint64_t{50'000}}) {
      SequentialReadOptions options;
      options.mode = mode();
      options.direct = direct;
      options.block_size = 8192;
      options.mmap_window = 8192;
      options.start_offset = start;
      options.resume_on = &ThreadPool::Default();
      const Blocks got = SyncWait(DrainBlocks(ReadBlocks(reactor(), path, options)));
      EXPECT_TRUE(got.errors.empty()) << got.errors.front();
      EXPECT_EQ(got.bytes, bytes.substr(start)) << "start " << start << " direct " << direct;
      uint64_t expected_offset = start;
      for (size_t i = 0; i < got.offsets.size(); ++i) {
        EXPECT_EQ(got.offsets[i], expected_offset);
        EXPECT_NE(got.sizes[i], 0u);
        expected_offset += got.sizes[i];
      }
    }
    SequentialReadOptions options;
    options.mode = mode();
    options.direct = direct;
    options.start_offset = 50'001;
    options.resume_on = &ThreadPool::Default();
    const Blocks got = SyncWait(DrainBlocks(ReadBlocks(reactor(), path, options)));
    EXPECT_TRUE(got.bytes.empty());
    ASSERT_EQ(got.errors.size(), 1u);
    EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kOutOfRange);
    EXPECT_THAT(got.errors[0].message(), HasSubstr(path));
    EXPECT_THAT(got.errors[0].message(), HasSubstr("start offset 50001"));
  }
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Backends, ResumeTest, BackendModeValues(), BackendModeName);
INSTANTIATE_TEST_SUITE_P(Backends, TFRecordResumeTest, BackendModeValues(), BackendModeName);
INSTANTIATE_TEST_SUITE_P(Backends, TextLineResumeTest, BackendModeValues(), BackendModeName);
INSTANTIATE_TEST_SUITE_P(Backends, FixedLengthResumeTest, BackendModeValues(), BackendModeName);

}  // namespace
}  // namespace record_resume_test_file
}  // namespace sluice
