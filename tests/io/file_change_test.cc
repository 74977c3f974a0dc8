// Files changed by another writer while the record readers read them, with the readers' default options
// (the default ReadMode): truncation, and rewrites in place with the same and with different bytes.
// Whatever the timing, a reader must not crash or hang; every record it yields holds bytes that were in
// the file at that offset (the old or the new content), still so after the writer moved on; every error is
// DataLoss naming the path. The writer runs on its own thread for as long as the readers loop, so each
// pass races it somewhere else; the loop is bounded in passes and in time.
//
// This is the regression test of the SIGBUS the mmap path raised (issue 13): with ReadMode::kMmap the
// truncation and cp-style rewrites below kill the process within a few passes.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "io/tfrecord_format.h"
#include "sluice/engine/reactor.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "sluice/io/record_readers.h"
#include "tests/test_util.h"

namespace sluice {
namespace file_change_test_file {
namespace {

using testing_util::BackendName;
using testing_util::BackendTest;
using testing_util::TempPath;
using testing_util::WriteFile;

// Each race runs until the readers made kMinPasses passes and the writer changed the file kMinChanges
// times meanwhile, or until kMaxPasses passes or kMaxTime, whichever comes first.
// Sanitizer builds (ASan at -O0) read about 20 times slower: fewer passes, still racing the writer.
#if defined(SLUICE_SANITIZED_BUILD)
constexpr int kMinPasses = 60;
constexpr int kMinChanges = 60;
constexpr int kMaxPasses = 1000;
constexpr auto kMaxTime = std::chrono::seconds(3);
#else
constexpr int kMinPasses = 300;
constexpr int kMinChanges = 300;
constexpr int kMaxPasses = 20000;
constexpr auto kMaxTime = std::chrono::seconds(4);
#endif

// Records of 100 KiB (zero-copy views by default) between small ones, so both kinds of record are read
// while the file changes. `tag` makes the two versions differ in every record but not in their framing.
std::string Content(char tag) {
  std::string file;
  for (int k = 0; k < 40; ++k) {
    const size_t size = k % 4 == 0 ? size_t{100} << 10 : 1000 + static_cast<size_t>(k);
    std::string payload(size, '\0');
    for (size_t i = 0; i < size; ++i) payload[i] = static_cast<char>(tag + (i * 7 + static_cast<size_t>(k)) % 23);
    io::AppendTFRecord(payload, &file);
  }
  return file;
}

enum class Change {
  kTruncate,         // ftruncate to a shorter length, then the rest written back
  kRewriteSame,      // as cp does: open with O_TRUNC, write the same bytes
  kRewriteOther,     // cp of a file with different bytes (alternating)
  kOverwriteInPlace  // pwrite different bytes over the file, no truncation (alternating)
};

void WriteAll(int fd, const std::string& bytes, uint64_t from) {
  // 128 KiB at a time, as cp does, so the reader sees the file grow piece by piece.
  constexpr size_t kStep = size_t{128} << 10;
  for (uint64_t pos = from; pos < bytes.size();) {
    const size_t n = std::min<size_t>(kStep, bytes.size() - pos);
    const ssize_t w = ::pwrite(fd, bytes.data() + pos, n, static_cast<off_t>(pos));
    ASSERT_GT(w, 0) << "pwrite: " << errno;
    pos += static_cast<uint64_t>(w);
  }
}

// Changes the file until `stop`; counts its changes.
void Writer(std::string path, Change change, const std::string* a, const std::string* b,
            const std::atomic<bool>* stop, std::atomic<int>* changes) {
  uint64_t cut = 1;
  for (int i = 0; !stop->load(std::memory_order_relaxed); ++i) {
    const std::string& next = (change == Change::kRewriteOther || change == Change::kOverwriteInPlace) && i % 2 == 0
                                  ? *b
                                  : *a;
    const int flags = O_WRONLY | (change == Change::kRewriteSame || change == Change::kRewriteOther ? O_TRUNC : 0);
    const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
    ASSERT_GE(fd, 0) << path << ": " << errno;
    if (change == Change::kTruncate) {
      cut = (cut * 2654435761u + 12345) % a->size();  // somewhere else every time
      ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(cut)), 0) << errno;
      WriteAll(fd, *a, cut);
    } else {
      WriteAll(fd, next, 0);
    }
    ::close(fd);
    changes->fetch_add(1, std::memory_order_relaxed);
  }
}

struct Pass {
  std::vector<Record> records;   // held until checked, so bytes changing under them would show
  std::vector<std::string> seen;  // each record's bytes when it was yielded
  std::vector<absl::Status> errors;
};

Task<Pass> Drain(AsyncGenerator<absl::StatusOr<Record>> gen) {
  Pass pass;
  for (int i = 0; i < 100'000; ++i) {
    std::optional<absl::StatusOr<Record>> r = co_await gen.Next();
    if (!r.has_value()) co_return pass;
    if (r->ok()) {
      pass.seen.emplace_back((*r)->str());
      pass.records.push_back(std::move(**r));
    } else {
      pass.errors.push_back(r->status());
    }
  }
  ADD_FAILURE() << "a reader did not end within 100000 elements";
  co_return pass;
}

// Each byte of `got` is the old or the new content's byte at `offset` + its index, or zero: a read that
// races a truncation may see the zeroed tail of the page where the file was cut (Linux does not make
// read(2) atomic against truncate); only checksums (TFRecord's) can catch that.
bool FromEither(absl::string_view got, uint64_t offset, const std::string& a, const std::string& b) {
  if (offset + got.size() > a.size()) return false;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != a[offset + i] && got[i] != b[offset + i] && got[i] != '\0') return false;
  }
  return true;
}

using FileChangeTest = BackendTest;

void RunRace(Reactor& reactor, Change change, const std::string& name) {
  const std::string path = TempPath(name);
  const std::string a = Content('a');
  const std::string b = change == Change::kRewriteOther || change == Change::kOverwriteInPlace ? Content('A') : a;
  ASSERT_EQ(a.size(), b.size());
  WriteFile(path, a);

  std::atomic<bool> stop{false};
  std::atomic<int> changes{0};
  std::thread writer(Writer, path, change, &a, &b, &stop, &changes);
  // Joined on every way out, a failed ASSERT included.
  struct StopAndJoin {
    std::atomic<bool>* stop;
    std::thread* thread;
    void operator()() {
      stop->store(true);
      if (thread->joinable()) thread->join();
    }
    ~StopAndJoin() { (*this)(); }
  } join_writer{&stop, &writer};
  const auto deadline = std::chrono::steady_clock::now() + kMaxTime;
  int passes = 0, records = 0, errors = 0;
  for (; (passes < kMinPasses || changes.load() < kMinChanges) && passes < kMaxPasses &&
         std::chrono::steady_clock::now() < deadline;
       ++passes) {
    // The three readers in turn, each with its default options.
    AsyncGenerator<absl::StatusOr<Record>> gen;
    if (passes % 3 == 0) {
      gen = ReadTFRecords(reactor, path);
    } else if (passes % 3 == 1) {
      gen = ReadTextLines(reactor, path);
    } else {
      FixedLengthRecordOptions options;
      options.record_bytes = 4096;
      gen = ReadFixedLengthRecords(reactor, path, options);
    }
    Pass pass = SyncWait(Drain(std::move(gen)));
    // Checked after the reader finished, while the writer goes on: yielded bytes must not change.
    for (size_t i = 0; i < pass.records.size(); ++i) {
      const Record& r = pass.records[i];
      ASSERT_EQ(r.str(), pass.seen[i]) << "pass " << passes << ": the record at offset " << r.offset
                                       << " changed after it was yielded";
      if (passes % 3 == 0) {
        // TFRecord's CRCs: a whole record of one version, never a mix.
        const uint64_t data = r.offset + io::kTFRecordHeaderBytes;
        ASSERT_LE(data + r.size(), a.size());
        ASSERT_TRUE(r.str() == absl::string_view(a).substr(data, r.size()) ||
                    r.str() == absl::string_view(b).substr(data, r.size()))
            << "pass " << passes << ": TFRecord at offset " << r.offset << " is neither version";
      } else {
        ASSERT_TRUE(FromEither(r.str(), r.offset, a, b))
            << "pass " << passes << ": record at offset " << r.offset << " of " << r.size()
            << " bytes holds bytes the file never had there";
      }
    }
    for (const absl::Status& s : pass.errors) {
      EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
      EXPECT_NE(s.message().find(path), absl::string_view::npos) << s;
    }
    records += static_cast<int>(pass.records.size());
    errors += static_cast<int>(pass.errors.size());
    if (::testing::Test::HasFatalFailure()) break;
  }
  join_writer();
  // The race was run: the writer changed the file while the readers read it.
  EXPECT_GT(changes.load(), 1);
  EXPECT_GT(passes, 2);
  std::cout << name << ": " << passes << " passes, " << changes.load() << " changes, " << records
            << " records, " << errors << " errors\n";
}

TEST_P(FileChangeTest, TruncatedWhileRead) { RunRace(reactor(), Change::kTruncate, "truncate"); }
TEST_P(FileChangeTest, RewrittenWithSameBytesWhileRead) { RunRace(reactor(), Change::kRewriteSame, "same"); }
TEST_P(FileChangeTest, RewrittenWithOtherBytesWhileRead) { RunRace(reactor(), Change::kRewriteOther, "other"); }
TEST_P(FileChangeTest, OverwrittenInPlaceWhileRead) { RunRace(reactor(), Change::kOverwriteInPlace, "in_place"); }

INSTANTIATE_TEST_SUITE_P(Backends, FileChangeTest, ::testing::Values(IoBackend::kUring, IoBackend::kThreads),
                         BackendName);

}  // namespace
}  // namespace file_change_test_file
}  // namespace sluice
