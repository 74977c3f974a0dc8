// Records that cannot be allocated (issue 13, item 7): the readers report RESOURCE_EXHAUSTED naming the
// file, the record's offset and the size asked, never INTERNAL "exception thrown: std::bad_alloc".
//
// Two ways to run out: a length header no memory can hold (refused before any allocation, so these tests
// never ask the allocator for it, which sanitizer allocators would abort on), and a real allocation
// failure, provoked in a child process with a small RLIMIT_DATA (skipped under sanitizers, whose runtimes
// need address space of their own).
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/memory_limit.h"
#include "io/tfrecord_format.h"
#include "sluice/engine/reactor.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "sluice/io/record_readers.h"
#include "tests/test_util.h"

namespace sluice {
namespace out_of_memory_test_file {
namespace {

using ::testing::HasSubstr;
using testing_util::BackendName;
using testing_util::BackendTest;
using testing_util::Compress;
using testing_util::TempPath;
using testing_util::WriteFile;

struct ReadOutcome {
  std::vector<std::string> records;
  std::vector<absl::Status> errors;
};

Task<ReadOutcome> ReadAll(AsyncGenerator<absl::StatusOr<Record>> gen) {
  ReadOutcome out;
  for (int i = 0; i < 100'000; ++i) {
    std::optional<absl::StatusOr<Record>> r = co_await gen.Next();
    if (!r.has_value()) co_return out;
    if (r->ok()) {
      out.records.emplace_back((*r)->str());
    } else {
      out.errors.push_back(r->status());
    }
  }
  ADD_FAILURE() << "the reader did not end";
  co_return out;
}

std::string Header(uint64_t length) {
  std::byte header[io::kTFRecordHeaderBytes];
  io::EncodeTFRecordHeader(length, header);
  return std::string(reinterpret_cast<const char*>(header), sizeof(header));
}

using OutOfMemoryTest = BackendTest;

// Two good records, then a header of 2^62 bytes with a valid CRC: with max_record_bytes switched off,
// the records, then RESOURCE_EXHAUSTED at the header's offset, also through GZIP.
TEST_P(OutOfMemoryTest, HostileLengthHeaderIsResourceExhaustedNamingFileOffsetAndSize) {
  constexpr uint64_t kHostile = uint64_t{1} << 62;
  ASSERT_GT(kHostile, io::AllocationCeiling());
  std::string plain;
  io::AppendTFRecord("one", &plain);
  io::AppendTFRecord("two", &plain);
  const uint64_t offset = plain.size();
  plain += Header(kHostile) + std::string(1000, 'x');
  for (Compression c : {Compression::kNone, Compression::kGzip}) {
    const std::string path = TempPath(absl::StrCat("hostile", static_cast<int>(c)));
    WriteFile(path, Compress(plain, c));
    TFRecordReaderOptions options;
    options.compression = c;
    options.max_record_bytes = ~uint64_t{0};
    ReadOutcome got = SyncWait(ReadAll(ReadTFRecords(reactor(), path, options)));
    EXPECT_EQ(got.records, (std::vector<std::string>{"one", "two"}));
    ASSERT_EQ(got.errors.size(), 1u);
    EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kResourceExhausted) << got.errors[0];
    EXPECT_THAT(std::string(got.errors[0].message()),
                HasSubstr(absl::StrCat(path, c == Compression::kNone ? "" : " (decompressed)", ": record at offset ",
                                       offset, " needs ", kHostile, " bytes: out of memory")));

    // With the default limit the same header is DataLoss (it exceeds max_record_bytes), as before.
    options.max_record_bytes = kDefaultMaxRecordBytes;
    got = SyncWait(ReadAll(ReadTFRecords(reactor(), path, options)));
    ASSERT_EQ(got.errors.size(), 1u);
    EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kDataLoss);
  }
}


// A file of `size` bytes that starts with `head` and is a hole after it (reads as zeros, costs no disk).
void WriteSparse(const std::string& path, const std::string& head, uint64_t size) {
  WriteFile(path, head);
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(size)), 0);
}

// Runs in a child: every reader meets a record of 200 MiB with only ~96 MiB of data memory left, and
// must report RESOURCE_EXHAUSTED naming the file, the offset and the size. Exits 0 when all did.
void ReadUnderDataLimit(Reactor& reactor, const std::string& tfrecord, const std::string& text,
                        const std::string& fixed, uint64_t record_bytes) {
  io::AllocationCeiling();  // taken before the limit: this is about a failing allocation, not the pre-check
  const rlimit limit{sluice::testing_util::VmDataBytes() + (uint64_t{96} << 20), RLIM_INFINITY};
  if (::setrlimit(RLIMIT_DATA, &limit) != 0) std::_Exit(3);
  int failures = 0;
  auto check = [&](const ReadOutcome& got, const std::string& path, uint64_t offset) {
    if (got.errors.size() == 1 && got.errors[0].code() == absl::StatusCode::kResourceExhausted &&
        absl::StrContains(got.errors[0].message(), absl::StrCat(path, ": ")) &&
        absl::StrContains(got.errors[0].message(), absl::StrCat("at offset ", offset, " needs "))) {
      std::fprintf(stderr, "ok: %s\n", got.errors[0].ToString().c_str());
    } else {
      ++failures;
      std::fprintf(stderr, "unexpected for %s: %zu records, %zu errors, first: %s\n", path.c_str(),
                   got.records.size(), got.errors.size(),
                   got.errors.empty() ? "-" : got.errors[0].ToString().c_str());
    }
  };
  check(SyncWait(ReadAll(ReadTFRecords(reactor, tfrecord))), tfrecord, 9 + 16);
  check(SyncWait(ReadAll(ReadTextLines(reactor, text))), text, 6);
  FixedLengthRecordOptions options;
  options.record_bytes = record_bytes;
  check(SyncWait(ReadAll(ReadFixedLengthRecords(reactor, fixed, options))), fixed, 0);
  std::fflush(stderr);
  // _Exit skips the exit-time cleanup of TempPath files: remove this process's own.
  for (const std::string& path : {tfrecord, text, fixed}) std::remove(path.c_str());
  std::_Exit(failures == 0 ? 0 : 1);
}

TEST_P(OutOfMemoryTest, FailedAllocationIsResourceExhaustedNamingFileOffsetAndSize) {
#if defined(SLUICE_SANITIZED_BUILD)
  GTEST_SKIP() << "sanitizer runtimes need address space of their own: no RLIMIT_DATA for them";
#endif
  constexpr uint64_t kRecord = uint64_t{200} << 20;  // under max_record_bytes (256 MiB)
  std::string head;
  io::AppendTFRecord("the first", &head);
  head += Header(kRecord);
  const std::string tfrecord = TempPath("oom.tfrecord");
  WriteSparse(tfrecord, head, head.size() + kRecord + 4);
  const std::string text = TempPath("oom.txt");
  WriteSparse(text, "first\n", 6 + kRecord);  // one line of 200 MiB of zeros after the first
  const std::string fixed = TempPath("oom.bin");
  WriteSparse(fixed, "", 2 * kRecord);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(ReadUnderDataLimit(reactor(), tfrecord, text, fixed, kRecord), ::testing::ExitedWithCode(0),
              "ok: RESOURCE_EXHAUSTED");
}

INSTANTIATE_TEST_SUITE_P(Backends, OutOfMemoryTest, ::testing::Values(IoBackend::kUring, IoBackend::kThreads),
                         BackendName);

}  // namespace
}  // namespace out_of_memory_test_file
}  // namespace sluice
