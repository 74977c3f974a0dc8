#include "sluice/io/sequential_reader.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/engine/reactor.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/thread_pool.h"
#include "tests/sanitized_build.h"
#include "tests/test_util.h"

namespace sluice {
namespace sequential_reader_test_file {
namespace {

using testing_util::BackendModeName;
using testing_util::BackendModeTest;
using testing_util::BackendModeValues;
using testing_util::RandomBytes;
using testing_util::TempPath;
using testing_util::WriteFile;

using ::testing::HasSubstr;

struct Scan {
  std::string bytes;
  std::vector<uint64_t> offsets;
  std::vector<Block> kept;  // blocks held past later Next() calls, when asked
  absl::Status error;
  size_t elements_after_error = 0;
};

Task<Scan> ScanAll(AsyncGenerator<absl::StatusOr<Block>> gen, bool keep_blocks) {
  Scan scan;
  for (int guard = 0; guard < 1'000'000; ++guard) {
    std::optional<absl::StatusOr<Block>> block = co_await gen.Next();
    if (!block.has_value()) co_return scan;
    if (!block->ok()) {
      if (!scan.error.ok()) ++scan.elements_after_error;
      scan.error = block->status();
      continue;
    }
    scan.bytes.append(reinterpret_cast<const char*>((*block)->data.data()), (*block)->data.size());
    scan.offsets.push_back((*block)->offset);
    if (keep_blocks) scan.kept.push_back(std::move(**block));
  }
  ADD_FAILURE() << "ReadBlocks did not end";
  co_return scan;
}

// `gen` is kept alive by the caller until the task completes.
Task<std::optional<absl::StatusOr<Block>>> NextBlock(AsyncGenerator<absl::StatusOr<Block>>* gen) {
  std::optional<absl::StatusOr<Block>> block = co_await gen->Next();
  co_return block;
}

size_t PageSize() { return static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }

class SequentialReaderTest : public BackendModeTest {
 protected:
  // `block` bytes per read, or per mmap window (rounded up to a page) in the mmap mode.
  SequentialReadOptions Options(size_t block, int depth) const {
    SequentialReadOptions options;
    options.block_size = block;
    options.blocks_in_flight = depth;
    options.mode = mode();
    options.mmap_window = block;
    return options;
  }
  // The size of every block but the last.
  size_t Unit(size_t block) const {
    return mode() == ReadMode::kMmap ? (block + PageSize() - 1) / PageSize() * PageSize() : block;
  }
};

TEST_P(SequentialReaderTest, BlocksConcatenateToTheFile) {
  ThreadPool pool(2);
  for (size_t size : {size_t{0}, size_t{1}, size_t{4095}, size_t{4096}, size_t{4097}, size_t{100000}}) {
    const std::string path = TempPath(absl::StrCat("seq", size));
    const std::string content = RandomBytes(size, static_cast<uint32_t>(size));
    WriteFile(path, content);
    for (size_t block : {size_t{1}, size_t{1000}, size_t{4096}, size_t{1} << 20}) {
      if (block == 1 && size > (testing_util::kSanitizedBuild ? 100 : 5000)) continue;
      for (int depth : {1, 2, 5}) {
        if (testing_util::kSanitizedBuild && depth == 5 && block < 4096) continue;
        for (bool direct : {false, true}) {
          SequentialReadOptions options = Options(block, depth);
          options.direct = direct;
          options.resume_on = depth == 2 ? nullptr : &pool;
          Scan scan = SyncWait(ScanAll(ReadBlocks(reactor(), path, options), /*keep_blocks=*/false));
          EXPECT_TRUE(scan.error.ok()) << scan.error;
          EXPECT_EQ(scan.bytes, content) << "size " << size << " block " << block << " depth " << depth;
          for (size_t i = 0; i < scan.offsets.size(); ++i) {
            EXPECT_EQ(scan.offsets[i] % (direct ? 1 : Unit(block)), 0u);
          }
        }
      }
    }
  }
}

TEST_P(SequentialReaderTest, BlocksHeldPastNextStayValid) {
  const std::string path = TempPath("held");
  const std::string content = RandomBytes(50000, 3);
  WriteFile(path, content);
  Scan scan = SyncWait(ScanAll(ReadBlocks(reactor(), path, Options(1000, 3)), /*keep_blocks=*/true));
  ASSERT_EQ(scan.kept.size(), (50000 + Unit(1000) - 1) / Unit(1000));
  std::string again;
  for (const Block& b : scan.kept) again.append(reinterpret_cast<const char*>(b.data.data()), b.data.size());
  EXPECT_EQ(again, content);
}

TEST_P(SequentialReaderTest, ErrorsNameThePath) {
  const std::string missing = TempPath("missing_blocks");
  Scan scan = SyncWait(ScanAll(ReadBlocks(reactor(), missing, Options(kDefaultBlockSize, 2)), false));
  EXPECT_EQ(scan.error.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(scan.error.message(), HasSubstr(missing));
  EXPECT_EQ(scan.elements_after_error, 0u);

  scan = SyncWait(ScanAll(ReadBlocks(reactor(), ::testing::TempDir(), Options(kDefaultBlockSize, 2)), false));
  EXPECT_EQ(scan.error.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(scan.error.message(), HasSubstr("directory"));

  SequentialReadOptions bad = Options(0, 2);
  scan = SyncWait(ScanAll(ReadBlocks(reactor(), missing, bad), false));
  EXPECT_EQ(scan.error.code(), absl::StatusCode::kInvalidArgument);
  bad.block_size = 10;
  bad.blocks_in_flight = 0;
  scan = SyncWait(ScanAll(ReadBlocks(reactor(), missing, bad), false));
  EXPECT_EQ(scan.error.code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(SequentialReaderTest, FileThatShrinksIsDataLoss) {
  const std::string path = TempPath("shrinks");
  WriteFile(path, RandomBytes(100000, 9));
  AsyncGenerator<absl::StatusOr<Block>> gen = ReadBlocks(reactor(), path, Options(4096, 1));
  std::optional<absl::StatusOr<Block>> first = SyncWait(NextBlock(&gen));
  ASSERT_TRUE(first.has_value() && first->ok());
  ASSERT_EQ(::truncate(path.c_str(), 10000), 0);
  Scan rest = SyncWait(ScanAll(std::move(gen), false));
  EXPECT_EQ(rest.error.code(), absl::StatusCode::kDataLoss) << rest.error;
  EXPECT_THAT(rest.error.message(), HasSubstr(absl::StrCat(path, ": file shrank")));
}

Task<size_t> TakeBlocks(AsyncGenerator<absl::StatusOr<Block>> gen, size_t n, std::stop_source* stop) {
  size_t taken = 0;
  for (size_t i = 0; i < n + 100; ++i) {
    if (taken == n) {
      if (stop == nullptr) break;  // destroy `gen` with its reads in flight
      stop->request_stop();
    }
    std::optional<absl::StatusOr<Block>> block = co_await gen.Next();
    if (!block.has_value()) break;
    if (!block->ok()) {
      EXPECT_EQ(block->status().code(), absl::StatusCode::kCancelled) << block->status();
      continue;
    }
    ++taken;
  }
  co_return taken;
}

TEST_P(SequentialReaderTest, DestroyAndStopMidStream) {
  const std::string path = TempPath("midstream");
  WriteFile(path, RandomBytes(4 << 20, 5));
  ThreadPool pool(2);
#if defined(SLUICE_SANITIZED_BUILD)
  constexpr int kRounds = 5;
#else
  constexpr int kRounds = 30;
#endif
  for (int round = 0; round < kRounds; ++round) {
    SequentialReadOptions options = Options(64 << 10, 1 + round % 8);
    options.resume_on = round % 3 == 0 ? nullptr : &pool;
    const size_t n = static_cast<size_t>(round % 5);
    if (options.resume_on != nullptr) {
      // Destroyed inside the task, wherever it last resumed.
      EXPECT_EQ(SyncWait(TakeBlocks(ReadBlocks(reactor(), path, options), n, nullptr)), n);
    }
    // Destroyed on this thread with reads in flight.
    {
      AsyncGenerator<absl::StatusOr<Block>> gen = ReadBlocks(reactor(), path, options);
      for (size_t i = 0; i < n; ++i) {
        std::optional<absl::StatusOr<Block>> b = SyncWait(NextBlock(&gen));
        ASSERT_TRUE(b.has_value() && b->ok());
      }
    }
    // Stop requested by the consumer: the stream ends with CancelledError, well before the end.
    std::stop_source stop;
    const size_t taken = SyncWait(TakeBlocks(ReadBlocks(reactor(), path, options), n, &stop), stop.get_token());
    EXPECT_EQ(taken, n);
  }
}

TEST_P(SequentialReaderTest, FifoIsRefusedAsBefore) {
  const std::string path = TempPath("fifo");
  ::unlink(path.c_str());
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  // O_RDWR never blocks on a FIFO and keeps a writer present, so the reader's open returns.
  const int keep = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(keep, 0);
  Scan scan = SyncWait(ScanAll(ReadBlocks(reactor(), path, Options(4096, 2)), false));
  EXPECT_EQ(scan.error.code(), absl::StatusCode::kFailedPrecondition) << scan.error;
  EXPECT_THAT(scan.error.message(), HasSubstr(absl::StrCat(path, ": not a regular file")));
  EXPECT_TRUE(scan.bytes.empty());
  ::close(keep);
  ::unlink(path.c_str());
}

// Whether `p` lies in a mapping of `path` (from /proc/self/maps).
bool InMappingOf(const void* p, const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(path) == std::string::npos) continue;
    const uintptr_t begin = std::strtoull(line.c_str(), nullptr, 16);
    const uintptr_t end = std::strtoull(line.c_str() + line.find('-') + 1, nullptr, 16);
    if (a >= begin && a < end) return true;
  }
  return false;
}

TEST_P(SequentialReaderTest, MmapBlocksAreMappingsThatOutliveTheReader) {
  const std::string path = std::filesystem::weakly_canonical(TempPath("mapped")).string();
  const std::string content = RandomBytes(3 * PageSize() + 17, 11);
  WriteFile(path, content);
  ThreadPool pool(1);
  SequentialReadOptions options = Options(PageSize(), 2);
  options.resume_on = &pool;
  Scan scan = SyncWait(ScanAll(ReadBlocks(reactor(), path, options), /*keep_blocks=*/true));
  ASSERT_TRUE(scan.error.ok()) << scan.error;
  ASSERT_EQ(scan.kept.size(), 4u);
  // The generator is gone: the kept blocks alone keep their memory (a mapping in the mmap mode).
  std::string again;
  for (const Block& b : scan.kept) {
    EXPECT_EQ(InMappingOf(b.data.data(), path), mode() == ReadMode::kMmap);
    again.append(reinterpret_cast<const char*>(b.data.data()), b.data.size());
  }
  EXPECT_EQ(again, content);
  const void* first = scan.kept[0].data.data();
  scan.kept.clear();
  EXPECT_FALSE(InMappingOf(first, path));  // unmapped with the last holder
}

// kAuto (the default) never maps: a mapping cannot survive another process truncating the file (SIGBUS),
// and the default must not crash whatever happens to the file (tests/io/file_change_test.cc races it).
TEST_P(SequentialReaderTest, DefaultModeReadsInsteadOfMapping) {
  const std::string path = std::filesystem::weakly_canonical(TempPath("default_mode")).string();
  const std::string content = RandomBytes(3 * PageSize() + 17, 12);
  WriteFile(path, content);
  ThreadPool pool(1);
  SequentialReadOptions options;
  EXPECT_EQ(options.mode, ReadMode::kAuto);
  options.block_size = PageSize();
  options.mmap_window = PageSize();
  options.resume_on = &pool;
  Scan scan = SyncWait(ScanAll(ReadBlocks(reactor(), path, options), /*keep_blocks=*/true));
  ASSERT_TRUE(scan.error.ok()) << scan.error;
  ASSERT_EQ(scan.kept.size(), 4u);
  for (const Block& b : scan.kept) EXPECT_FALSE(InMappingOf(b.data.data(), path));
  EXPECT_EQ(scan.bytes, content);
}

TEST_P(SequentialReaderTest, EmptyAndTinyFiles) {
  for (size_t size : {size_t{0}, size_t{1}, PageSize() - 1}) {
    const std::string path = TempPath(absl::StrCat("tiny", size));
    const std::string content = RandomBytes(size, 2);
    WriteFile(path, content);
    Scan scan = SyncWait(ScanAll(ReadBlocks(reactor(), path, Options(kDefaultBlockSize, 2)), false));
    EXPECT_TRUE(scan.error.ok()) << scan.error;
    EXPECT_EQ(scan.bytes, content);
    EXPECT_EQ(scan.offsets.size(), size == 0 ? 0u : 1u);
  }
}

// VmSize of this process, in bytes.
uint64_t AddressSpaceBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmSize:", 0) == 0) return std::strtoull(line.c_str() + 7, nullptr, 10) * 1024;
  }
  return 0;
}

// Compares each block with `expected` at its offset as it arrives (the child has no memory for a copy).
struct Compared {
  absl::Status error;
  uint64_t bytes = 0;
  uint64_t blocks = 0;
  bool same = true;
};

// `expected` is kept alive by the caller until the task completes (SyncWait in the same expression).
Task<Compared> CompareAll(AsyncGenerator<absl::StatusOr<Block>> gen, const std::string* expected) {
  Compared out;
  for (int guard = 0; guard < 1'000'000; ++guard) {
    std::optional<absl::StatusOr<Block>> block = co_await gen.Next();
    if (!block.has_value()) break;
    if (!block->ok()) {
      out.error = block->status();
      continue;
    }
    const Block& b = **block;
    out.same = out.same && b.offset == out.bytes && b.offset + b.data.size() <= expected->size() &&
               std::memcmp(b.data.data(), expected->data() + b.offset, b.data.size()) == 0;
    out.bytes += b.data.size();
    ++out.blocks;
  }
  co_return out;
}

// Runs in a child: with 16 MiB of address space left, the 64 MiB window cannot be mapped (the one-page
// probe can); the reader must read the file instead. Exits 0 when it got every byte.
void ScanWithoutAddressSpace(Reactor& reactor, const std::string& path, const std::string& expected,
                             SequentialReadOptions options) {
  const rlimit limit{AddressSpaceBytes() + (uint64_t{16} << 20), RLIM_INFINITY};
  if (::setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(3);
  Compared got = SyncWait(CompareAll(ReadBlocks(reactor, path, options), &expected));
  std::fprintf(stderr, "%s: %llu bytes read in %llu blocks, %s\n", got.error.ToString().c_str(),
               static_cast<unsigned long long>(got.bytes), static_cast<unsigned long long>(got.blocks),
               got.same ? "as written" : "DIFFERENT");
  std::fflush(stderr);
  std::remove(path.c_str());  // _Exit skips the TempPath cleanup
  std::_Exit(got.error.ok() && got.same && got.bytes == expected.size() ? 0 : 1);
}

// Issue 13, item 8: a window that could not be mapped was a hard error; the mmap path reads instead.
TEST_P(SequentialReaderTest, UnmappableWindowFallsBackToReads) {
#if defined(SLUICE_SANITIZED_BUILD)
  GTEST_SKIP() << "sanitizer runtimes need address space of their own: no RLIMIT_AS for them";
#endif
  if (mode() != ReadMode::kMmap) GTEST_SKIP() << "about the mmap path";
  // 64 MiB: a random first page, then a hole (zeros on reading, nothing on disk).
  const std::string path = TempPath("unmappable");
  const std::string head = RandomBytes(4096, 21);
  WriteFile(path, head);
  constexpr uint64_t kSize = uint64_t{64} << 20;
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(kSize)), 0);
  std::string expected = head;
  expected.resize(kSize, '\0');
  ThreadPool pool(1);
  SequentialReadOptions options = Options(size_t{1} << 20, 2);
  options.mmap_window = kSize;
  options.resume_on = &pool;
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(ScanWithoutAddressSpace(reactor(), path, expected, options), ::testing::ExitedWithCode(0),
              "OK: 67108864 bytes read in 64 blocks, as written");
}

INSTANTIATE_TEST_SUITE_P(Backends, SequentialReaderTest, BackendModeValues(), BackendModeName);

}  // namespace
}  // namespace sequential_reader_test_file
}  // namespace sluice
