#include "sluice/io/file.h"

#include <fcntl.h>
#include <unistd.h>

#include <iostream>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/engine/reactor.h"
#include "tests/test_util.h"
#include "sluice/engine/status_macros.h"
#include "sluice/engine/sync_wait.h"

namespace sluice {
namespace file_test_file {
namespace {

using testing_util::BackendName;
using testing_util::BackendTest;
using testing_util::TempPath;
using testing_util::WriteFile;

using ::testing::HasSubstr;

Task<absl::StatusOr<File>> OpenFile(Reactor* reactor, std::string path, bool direct) {
  OpenOptions options;
  options.direct = direct;
  absl::StatusOr<File> file = co_await File::Open(*reactor, std::move(path), options);
  co_return file;
}

// `file` and `buf` are kept alive by the caller until the task completes.
Task<absl::StatusOr<size_t>> ReadAt(File* file, std::span<std::byte> buf, uint64_t offset) {
  absl::StatusOr<size_t> n = co_await file->ReadAt(buf, offset);
  co_return n;
}

Task<absl::Status> CloseFile(File* file) {
  absl::Status status = co_await file->Close();
  co_return status;
}

struct AlignedBuffer {
  explicit AlignedBuffer(size_t n)
      : data(static_cast<std::byte*>(::operator new(n, std::align_val_t(kDirectIoAlignment)))), size(n) {}
  ~AlignedBuffer() { ::operator delete(data, std::align_val_t(kDirectIoAlignment)); }
  std::span<std::byte> span() { return {data, size}; }
  std::string str(size_t n) const { return std::string(reinterpret_cast<const char*>(data), n); }
  std::byte* data;
  size_t size;
};

using FileTest = BackendTest;

TEST_P(FileTest, OpenReadSizeClose) {
  const std::string path = TempPath("file_basic");
  WriteFile(path, "hello, file");
  absl::StatusOr<File> file = SyncWait(OpenFile(&reactor(), path, false));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->Size(), 11u);
  EXPECT_EQ(file->path(), path);
  EXPECT_FALSE(file->direct());
  std::string buf(5, '\0');
  absl::StatusOr<size_t> n = SyncWait(ReadAt(&*file, AsWritableBytes(buf), 7));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 4u);
  EXPECT_EQ(buf.substr(0, 4), "file");
  n = SyncWait(ReadAt(&*file, AsWritableBytes(buf), 100));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);
  File moved = std::move(*file);
  EXPECT_TRUE(moved.is_open());
  EXPECT_TRUE(SyncWait(CloseFile(&moved)).ok());
  EXPECT_TRUE(SyncWait(CloseFile(&moved)).ok());  // idempotent
  absl::StatusOr<size_t> closed = SyncWait(ReadAt(&moved, AsWritableBytes(buf), 0));
  EXPECT_EQ(closed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(closed.status().message(), HasSubstr(path));
}

TEST_P(FileTest, DestructorClosesWithoutClose) {
  const std::string path = TempPath("file_dtor");
  WriteFile(path, "x");
  int fd = -1;
  {
    absl::StatusOr<File> file = SyncWait(OpenFile(&reactor(), path, false));
    ASSERT_TRUE(file.ok());
    fd = file->fd();
    ASSERT_GE(fd, 0);
  }
  // The fd was closed: fcntl on it fails (nothing else in this test opens files meanwhile).
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1);
}

TEST_P(FileTest, OpenErrorsNameThePath) {
  const std::string missing = TempPath("file_missing");
  absl::StatusOr<File> file = SyncWait(OpenFile(&reactor(), missing, false));
  EXPECT_EQ(file.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(file.status().message(), HasSubstr(missing));
  file = SyncWait(OpenFile(&reactor(), ::testing::TempDir(), false));
  EXPECT_EQ(file.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(file.status().message(), HasSubstr("is a directory"));
  file = SyncWait(OpenFile(&reactor(), missing, true));
  EXPECT_EQ(file.status().code(), absl::StatusCode::kNotFound);
}

TEST_P(FileTest, DirectReadsOrCleanFallback) {
  const std::string path = TempPath("file_direct");
  std::string content(3 * kDirectIoAlignment + 100, '\0');
  std::mt19937 rng(1);
  for (char& c : content) c = static_cast<char>(rng());
  WriteFile(path, content);
  absl::StatusOr<File> file = SyncWait(OpenFile(&reactor(), path, true));
  ASSERT_TRUE(file.ok()) << file.status();
  AlignedBuffer buf(2 * kDirectIoAlignment);
  // The tail: an aligned length past the end is truncated to the file's end.
  absl::StatusOr<size_t> n = SyncWait(ReadAt(&*file, buf.span(), 2 * kDirectIoAlignment));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, kDirectIoAlignment + 100);
  EXPECT_EQ(buf.str(*n), content.substr(2 * kDirectIoAlignment));
  if (file->direct()) {
    EXPECT_EQ(file->alignment(), kDirectIoAlignment);
    absl::StatusOr<size_t> unaligned = SyncWait(ReadAt(&*file, buf.span().subspan(1, 100), 0));
    EXPECT_EQ(unaligned.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(unaligned.status().message(), HasSubstr(path));
  } else {
    // Fallback (tmpfs, overlay): any buffer works.
    EXPECT_EQ(file->alignment(), 1u);
    absl::StatusOr<size_t> unaligned = SyncWait(ReadAt(&*file, buf.span().subspan(1, 100), 3));
    ASSERT_TRUE(unaligned.ok());
    EXPECT_EQ(buf.str(101).substr(1), content.substr(3, 100));
  }
  std::cout << "O_DIRECT on " << ::testing::TempDir() << ": " << (file->direct() ? "used" : "fell back") << "\n";
}

TEST_P(FileTest, DirectOnTmpfsFallsBackOrWorks) {
  // tmpfs refused O_DIRECT before Linux 6.6: either outcome must read the right bytes.
  if (!std::filesystem::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  const std::string path = absl::StrCat("/dev/shm/sluice_file_test_", ::getpid());
  const std::string content(10000, 'q');
  WriteFile(path, content);
  absl::StatusOr<File> file = SyncWait(OpenFile(&reactor(), path, true));
  ASSERT_TRUE(file.ok()) << file.status();
  AlignedBuffer buf(3 * kDirectIoAlignment);
  absl::StatusOr<size_t> n = SyncWait(ReadAt(&*file, buf.span(), 0));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(buf.str(*n), content);
  std::cout << "O_DIRECT on /dev/shm: " << (file->direct() ? "used" : "fell back") << "\n";
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Backends, FileTest, ::testing::Values(IoBackend::kUring, IoBackend::kThreads),
                         BackendName);

}  // namespace
}  // namespace file_test_file
}  // namespace sluice
