#include "sluice/engine/reactor.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "engine/uring_reactor.h"
#include "gtest/gtest.h"
#include "sluice/engine/async_scope.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "sluice/engine/when_all.h"

namespace sluice {
namespace reactor_test_file {
namespace {

#if defined(SLUICE_SANITIZED_BUILD)
constexpr int kStressScale = 4;  // sanitizer builds run the stress loops 4x shorter
#else
constexpr int kStressScale = 1;
#endif

constexpr size_t kFileSize = size_t{8} << 20;

std::string TempDir() {
  const char* dir = std::getenv("TMPDIR");
  return (dir != nullptr && *dir != '\0') ? dir : "/tmp";
}

// Creates an empty temp file and returns its path (the fd is closed).
std::string MakeTempFile() {
  std::string pattern = TempDir() + "/sluice_reactor_test_XXXXXX";
  const int fd = ::mkstemp(pattern.data());
  if (fd < 0) return "";
  ::close(fd);
  return pattern;
}

bool Matches(const std::vector<std::byte>& data, uint64_t offset, const std::byte* got, size_t n) {
  return offset + n <= data.size() && std::memcmp(data.data() + offset, got, n) == 0;
}

// ---- Test coroutines (free functions: no capturing lambda coroutines) -------------------------------

Task<absl::Status> RandomReads(Reactor* io, int fd, const std::vector<std::byte>* data, uint64_t seed,
                               int count) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> buf(256 << 10);
  for (int i = 0; i < count; ++i) {
    const uint64_t offset = rng() % data->size();
    const size_t len = 1 + rng() % buf.size();
    const size_t expected = std::min<uint64_t>(len, data->size() - offset);
    std::span<std::byte> out(buf.data(), len);
    absl::StatusOr<size_t> n = co_await io->Read(fd, out, offset);
    if (!n.ok()) co_return n.status();
    if (*n != expected) co_return absl::InternalError(absl::StrCat("read ", i, ": got ", *n, " want ", expected));
    if (!Matches(*data, offset, buf.data(), *n)) {
      co_return absl::InternalError(absl::StrCat("read ", i, " at ", offset, ": bytes differ"));
    }
  }
  co_return absl::OkStatus();
}

// Reads 64 KiB chunks until done or cancelled; verifies every completed chunk.
Task<absl::Status> StormReader(Reactor* io, int fd, const std::vector<std::byte>* data, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> buf(64 << 10);
  for (int i = 0; i < 50; ++i) {
    const uint64_t offset = rng() % (data->size() - buf.size());
    std::span<std::byte> out(buf);
    absl::StatusOr<size_t> n = co_await io->Read(fd, out, offset);
    if (!n.ok()) co_return n.status();
    if (*n != buf.size() || !Matches(*data, offset, buf.data(), *n)) {
      co_return absl::InternalError(absl::StrCat("storm read at ", offset, " wrong"));
    }
  }
  co_return absl::OkStatus();
}

Task<absl::Status> StormSleeper(Reactor* io, absl::Duration d) { co_return co_await io->Sleep(d); }

// Records the thread a coroutine resumes on after Execute().
struct ExecuteOn {
  Executor* executor;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) const { executor->Execute(h); }
  void await_resume() const noexcept {}
};

Task<std::thread::id> ThreadAfterExecute(Executor* executor) {
  ExecuteOn hop{executor};
  co_await hop;
  co_return std::this_thread::get_id();
}

// ---- Fixture -----------------------------------------------------------------------------------------

class ReactorTest : public ::testing::TestWithParam<IoBackend> {
 protected:
  static void SetUpTestSuite() {
    data_ = new std::vector<std::byte>(kFileSize);
    std::mt19937_64 rng(20261202);
    for (size_t i = 0; i < kFileSize; i += 8) {
      const uint64_t v = rng();
      std::memcpy(data_->data() + i, &v, 8);
    }
    path_ = new std::string(MakeTempFile());
    const int fd = ::open(path_->c_str(), O_WRONLY | O_TRUNC);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    ASSERT_EQ(::write(fd, data_->data(), data_->size()), static_cast<ssize_t>(data_->size()));
    ::close(fd);
  }
  static void TearDownTestSuite() {
    ::unlink(path_->c_str());
    delete path_;
    delete data_;
  }

  void SetUp() override {
    if (GetParam() == IoBackend::kUring) {
      const int err = detail::UringReactor::Probe();
      if (err != 0) {
        GTEST_SKIP() << "io_uring unavailable here: " << std::strerror(err);
      }
    }
    io_ = MakeReactor(ReactorOptions{});
    ASSERT_NE(io_, nullptr);
    fd_ = ::open(path_->c_str(), O_RDONLY);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
    io_.reset();
  }

  std::unique_ptr<Reactor> MakeReactor(ReactorOptions options) {
    options.backend = GetParam();
    absl::StatusOr<std::unique_ptr<Reactor>> created = Reactor::Create(options);
    EXPECT_TRUE(created.ok()) << created.status();
    if (!created.ok()) return nullptr;
    EXPECT_EQ((*created)->backend(), GetParam());
    return std::move(*created);
  }

  static std::vector<std::byte>* data_;
  static std::string* path_;
  std::unique_ptr<Reactor> io_;
  int fd_ = -1;
};

std::vector<std::byte>* ReactorTest::data_ = nullptr;
std::string* ReactorTest::path_ = nullptr;

TEST_P(ReactorTest, BackendName) {
  EXPECT_EQ(io_->backend_name(), GetParam() == IoBackend::kUring ? "io_uring" : "threads");
}

TEST_P(ReactorTest, RandomReadsMatchFile) {
  EXPECT_TRUE(SyncWait(RandomReads(io_.get(), fd_, data_, 1, 1000)).ok());
}

TEST_P(ReactorTest, ReadWholeFileInOneCall) {
  std::vector<std::byte> buf(kFileSize);
  absl::StatusOr<size_t> n = SyncWait(io_->Read(fd_, std::span<std::byte>(buf), 0));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, kFileSize);
  EXPECT_TRUE(Matches(*data_, 0, buf.data(), kFileSize));
}

TEST_P(ReactorTest, ReadAtOrPastEofReturnsZero) {
  std::vector<std::byte> buf(4096);
  absl::StatusOr<size_t> at_eof = SyncWait(io_->Read(fd_, std::span<std::byte>(buf), kFileSize));
  ASSERT_TRUE(at_eof.ok()) << at_eof.status();
  EXPECT_EQ(*at_eof, 0u);
  absl::StatusOr<size_t> past = SyncWait(io_->Read(fd_, std::span<std::byte>(buf), kFileSize + 12345));
  ASSERT_TRUE(past.ok()) << past.status();
  EXPECT_EQ(*past, 0u);
  absl::StatusOr<size_t> empty = SyncWait(io_->Read(fd_, std::span<std::byte>(), 0));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, 0u);
}

TEST_P(ReactorTest, ReadSpanningEofReturnsShortCount) {
  std::vector<std::byte> buf(4096);
  absl::StatusOr<size_t> n = SyncWait(io_->Read(fd_, std::span<std::byte>(buf), kFileSize - 100));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 100u);
  EXPECT_TRUE(Matches(*data_, kFileSize - 100, buf.data(), 100));
}

TEST_P(ReactorTest, ReadvScattersInOrder) {
  std::vector<std::byte> a(1000), b(0), c(70000), d(3);
  std::vector<iovec> iov = {{a.data(), a.size()}, {b.data(), 0}, {c.data(), c.size()}, {d.data(), d.size()}};
  const uint64_t offset = 4097;
  absl::StatusOr<size_t> n = SyncWait(io_->Readv(fd_, iov, offset));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, a.size() + c.size() + d.size());
  EXPECT_TRUE(Matches(*data_, offset, a.data(), a.size()));
  EXPECT_TRUE(Matches(*data_, offset + a.size(), c.data(), c.size()));
  EXPECT_TRUE(Matches(*data_, offset + a.size() + c.size(), d.data(), d.size()));
}

TEST_P(ReactorTest, ReadvSpanningEof) {
  std::vector<std::byte> a(60), b(100);
  std::vector<iovec> iov = {{a.data(), a.size()}, {b.data(), b.size()}};
  absl::StatusOr<size_t> n = SyncWait(io_->Readv(fd_, iov, kFileSize - 80));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 80u);
  EXPECT_TRUE(Matches(*data_, kFileSize - 80, a.data(), 60));
  EXPECT_TRUE(Matches(*data_, kFileSize - 20, b.data(), 20));
}

TEST_P(ReactorTest, WriteThenReadBack) {
  const std::string path = MakeTempFile();
  ASSERT_FALSE(path.empty());
  absl::StatusOr<int> fd = SyncWait(io_->Open(path, O_RDWR | O_TRUNC | O_CLOEXEC));
  ASSERT_TRUE(fd.ok()) << fd.status();
  std::span<const std::byte> src(data_->data() + 12345, (size_t{1} << 20) + 7);
  absl::StatusOr<size_t> written = SyncWait(io_->Write(*fd, src, 4096));
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(*written, src.size());
  std::vector<std::byte> back(src.size() + 4096);
  absl::StatusOr<size_t> n = SyncWait(io_->Read(*fd, std::span<std::byte>(back), 0));
  ASSERT_TRUE(n.ok()) << n.status();
  ASSERT_EQ(*n, back.size());
  for (size_t i = 0; i < 4096; ++i) ASSERT_EQ(back[i], std::byte{0}) << "hole byte " << i;
  EXPECT_EQ(std::memcmp(back.data() + 4096, src.data(), src.size()), 0);
  absl::StatusOr<FileStat> st = SyncWait(io_->Stat(*fd));
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->size, back.size());
  EXPECT_TRUE(SyncWait(io_->Close(*fd)).ok());
  ::unlink(path.c_str());
}

TEST_P(ReactorTest, WriteToReadOnlyFdFailsNamingFdAndOffset) {
  std::vector<std::byte> buf(10);
  absl::StatusOr<size_t> n = SyncWait(io_->Write(fd_, std::span<const std::byte>(buf), 77));
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), absl::StatusCode::kFailedPrecondition) << n.status();  // EBADF
  EXPECT_NE(n.status().message().find(absl::StrCat("write fd ", fd_, " at offset 77")), absl::string_view::npos)
      << n.status();
}

TEST_P(ReactorTest, OpenMissingFileIsNotFoundNamingPath) {
  const std::string path = TempDir() + "/sluice_no_such_dir_xyz/missing.bin";
  absl::StatusOr<int> fd = SyncWait(io_->Open(path, O_RDONLY));
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), absl::StatusCode::kNotFound) << fd.status();
  EXPECT_NE(fd.status().message().find(path), absl::string_view::npos) << fd.status();
}

TEST_P(ReactorTest, OpenDirectoryForWritingFails) {
  absl::StatusOr<int> fd = SyncWait(io_->Open(TempDir(), O_WRONLY));
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), absl::StatusCode::kFailedPrecondition) << fd.status();  // EISDIR
  EXPECT_NE(fd.status().message().find("open '"), absl::string_view::npos) << fd.status();
}

TEST_P(ReactorTest, OpenWithoutPermissionIsPermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "root bypasses file permissions";
  const std::string path = MakeTempFile();
  ASSERT_EQ(::chmod(path.c_str(), 0), 0);
  absl::StatusOr<int> fd = SyncWait(io_->Open(path, O_RDONLY));
  ::unlink(path.c_str());
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), absl::StatusCode::kPermissionDenied) << fd.status();
}

TEST_P(ReactorTest, OpenExclusiveOfExistingFileIsAlreadyExists) {
  absl::StatusOr<int> fd = SyncWait(io_->Open(*path_, O_RDWR | O_CREAT | O_EXCL, 0600));
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), absl::StatusCode::kAlreadyExists) << fd.status();
  EXPECT_NE(fd.status().message().find(*path_), absl::string_view::npos) << fd.status();
}

TEST_P(ReactorTest, StatReportsSizeAndType) {
  absl::StatusOr<FileStat> by_path = SyncWait(io_->Stat(*path_));
  ASSERT_TRUE(by_path.ok()) << by_path.status();
  EXPECT_EQ(by_path->size, kFileSize);
  EXPECT_TRUE(S_ISREG(by_path->mode));
  EXPECT_GT(by_path->mtime_ns, 0u);
  EXPECT_GT(by_path->block_size, 0u);
  absl::StatusOr<FileStat> by_fd = SyncWait(io_->Stat(fd_));
  ASSERT_TRUE(by_fd.ok()) << by_fd.status();
  EXPECT_EQ(by_fd->size, kFileSize);
  EXPECT_EQ(by_fd->mtime_ns, by_path->mtime_ns);
  absl::StatusOr<FileStat> missing = SyncWait(io_->Stat(*path_ + ".missing"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(".missing"), absl::string_view::npos);
}

TEST_P(ReactorTest, CloseTwiceFailsWithBadFd) {
  absl::StatusOr<int> opened = SyncWait(io_->Open(*path_, O_RDONLY));
  ASSERT_TRUE(opened.ok()) << opened.status();
  // The kernel hands out the lowest free number, so a just-closed low fd can be taken by any other
  // thread of the process (the sanitizers' own threads open files) before the second close. A
  // number far above the ones in use stays free.
  rlimit files{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &files), 0);
  const int high = static_cast<int>(std::min<rlim_t>(files.rlim_cur - 8, 900));
  int fd = fcntl(*opened, F_DUPFD_CLOEXEC, high);
  ASSERT_GE(fd, high) << std::strerror(errno);
  EXPECT_TRUE(SyncWait(io_->Close(*opened)).ok());
  EXPECT_TRUE(SyncWait(io_->Close(fd)).ok());
  absl::Status again = SyncWait(io_->Close(fd));
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition) << again;  // EBADF
  EXPECT_NE(again.message().find(absl::StrCat("close fd ", fd)), absl::string_view::npos) << again;
}

TEST_P(ReactorTest, ReadBadFdFailsWithOffset) {
  std::vector<std::byte> buf(16);
  absl::StatusOr<size_t> n = SyncWait(io_->Read(-1, std::span<std::byte>(buf), 99));
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("read fd -1 at offset 99"), absl::string_view::npos) << n.status();
}

TEST_P(ReactorTest, SleepCompletes) {
  EXPECT_TRUE(SyncWait(io_->Sleep(absl::Milliseconds(5))).ok());
  EXPECT_TRUE(SyncWait(io_->Sleep(absl::ZeroDuration())).ok());
  EXPECT_TRUE(SyncWait(io_->Sleep(absl::Milliseconds(-3))).ok());
}

TEST_P(ReactorTest, StopBeforeSubmissionCancelsEveryOp) {
  std::stop_source stop;
  stop.request_stop();
  std::vector<std::byte> buf(16);
  EXPECT_EQ(SyncWait(io_->Read(fd_, std::span<std::byte>(buf), 0), stop.get_token()).status().code(),
            absl::StatusCode::kCancelled);
  EXPECT_EQ(SyncWait(io_->Sleep(absl::Seconds(20)), stop.get_token()).code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(SyncWait(io_->Open(*path_, O_RDONLY), stop.get_token()).status().code(),
            absl::StatusCode::kCancelled);
  EXPECT_EQ(SyncWait(io_->Stat(*path_), stop.get_token()).status().code(), absl::StatusCode::kCancelled);
}

TEST_P(ReactorTest, StopDuringLongSleepCancels) {
  std::stop_source stop;
  std::thread stopper([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    stop.request_stop();
  });
  // If cancellation were broken this would return OK after 20 s rather than hang.
  absl::Status status = SyncWait(io_->Sleep(absl::Seconds(20)), stop.get_token());
  stopper.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  EXPECT_NE(status.message().find("sleep"), absl::string_view::npos);
}

Task<absl::Status> StormAll(Reactor* io, int fd, const std::vector<std::byte>* data, int children,
                            std::vector<absl::Status>* results) {
  std::vector<Task<absl::Status>> tasks;
  for (int i = 0; i < children; ++i) {
    if (i % 3 == 0) {
      tasks.push_back(StormSleeper(io, absl::Seconds(20)));
    } else if (i % 3 == 1) {
      tasks.push_back(StormSleeper(io, absl::Milliseconds(i % 7)));
    } else {
      tasks.push_back(StormReader(io, fd, data, static_cast<uint64_t>(i)));
    }
  }
  *results = co_await WhenAll(std::move(tasks));
  co_return absl::OkStatus();
}

TEST_P(ReactorTest, CancellationStormCompletesEveryOp) {
  // A tiny ring (CQ of 8) so that most ops sit in the pending queue when stop arrives.
  ReactorOptions options;
  options.queue_depth = 4;
  options.io_threads = 3;
  std::unique_ptr<Reactor> io = MakeReactor(options);
  ASSERT_NE(io, nullptr);
  for (int round = 0; round < 3; ++round) {
    std::stop_source stop;
    std::thread stopper([&stop, round] {
      std::this_thread::sleep_for(std::chrono::milliseconds(5 + 20 * round));
      stop.request_stop();
    });
    std::vector<absl::Status> results;
    absl::Status status = SyncWait(StormAll(io.get(), fd_, data_, 200, &results), stop.get_token());
    stopper.join();
    ASSERT_TRUE(status.ok());
    ASSERT_EQ(results.size(), 200u);
    int cancelled = 0;
    for (size_t i = 0; i < results.size(); ++i) {
      EXPECT_TRUE(results[i].ok() || results[i].code() == absl::StatusCode::kCancelled)
          << "child " << i << ": " << results[i];
      if (results[i].code() == absl::StatusCode::kCancelled) ++cancelled;
      // The 20 s sleeps can only have finished by being cancelled.
      if (i % 3 == 0) {
        EXPECT_EQ(results[i].code(), absl::StatusCode::kCancelled) << "child " << i;
      }
    }
    EXPECT_GE(cancelled, 67);
  }
}

TEST_P(ReactorTest, AsyncScopeStopCancelsSpawnedOps) {
  AsyncScope scope;
  for (int i = 0; i < 100; ++i) {
    if (i % 2 == 0) {
      scope.Spawn(StormSleeper(io_.get(), absl::Seconds(20)));
    } else {
      scope.Spawn(StormReader(io_.get(), fd_, data_, static_cast<uint64_t>(1000 + i)));
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  scope.RequestStop();
  scope.JoinBlocking();
  EXPECT_EQ(scope.pending(), 0u);
  EXPECT_EQ(scope.first_error().code(), absl::StatusCode::kCancelled) << scope.first_error();
}

TEST_P(ReactorTest, ManyThreadsSubmitConcurrently) {
  constexpr int kThreads = 8;
  constexpr int kReads = 200 / kStressScale;
  std::vector<absl::Status> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t, &results] {
      results[t] = SyncWait(RandomReads(io_.get(), fd_, data_, 100 + t, kReads));
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_TRUE(results[t].ok()) << "thread " << t << ": " << results[t];
}

TEST_P(ReactorTest, ManyConcurrentReadsThroughSmallRing) {
  ReactorOptions options;
  options.queue_depth = 4;
  std::unique_ptr<Reactor> io = MakeReactor(options);
  ASSERT_NE(io, nullptr);
  std::vector<Task<absl::Status>> tasks;
  for (int i = 0; i < 64; ++i) tasks.push_back(RandomReads(io.get(), fd_, data_, 500 + i, 20 / kStressScale + 1));
  std::vector<absl::Status> results = SyncWait(WhenAll(std::move(tasks)));
  for (size_t i = 0; i < results.size(); ++i) EXPECT_TRUE(results[i].ok()) << i << ": " << results[i];
}

TEST_P(ReactorTest, ExecuteResumesOnBackendThread) {
  std::thread::id id = SyncWait(ThreadAfterExecute(io_.get()));
  EXPECT_NE(id, std::this_thread::get_id());
}

TEST_P(ReactorTest, PipeShortReadsAreResubmitted) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::thread writer([fd = fds[1]] {
    const char chunk[1000] = {'x'};
    for (int i = 0; i < 4; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (::write(fd, chunk, sizeof(chunk)) != static_cast<ssize_t>(sizeof(chunk))) break;
    }
    ::close(fd);
  });
  std::vector<std::byte> buf(4000);
  absl::StatusOr<size_t> n = SyncWait(io_->Read(fds[0], std::span<std::byte>(buf), 0));
  writer.join();
  ::close(fds[0]);
  if (GetParam() == IoBackend::kUring) {
    // The pipe delivers 1000 bytes per completion: the rest must come from resubmissions.
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, 4000u);
    EXPECT_EQ(buf[0], std::byte{'x'});
    EXPECT_EQ(buf[3000], std::byte{'x'});
  } else {
    // pread on a pipe is ESPIPE; the error must name the op, not crash.
    ASSERT_FALSE(n.ok());
    EXPECT_NE(n.status().message().find("read fd"), absl::string_view::npos) << n.status();
  }
}

TEST_P(ReactorTest, StopDuringBlockedReadCancelsAndKeepsBufferUntilCompletion) {
  if (GetParam() != IoBackend::kUring) {
    GTEST_SKIP() << "a blocking pread cannot be interrupted (and pread on a pipe is ESPIPE)";
  }
  // A read on an empty pipe stays in flight until io_uring_prep_cancel reaches it.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  auto buf = std::make_unique<std::vector<std::byte>>(4096);
  std::stop_source stop;
  std::thread stopper([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    stop.request_stop();
  });
  absl::StatusOr<size_t> n = SyncWait(io_->Read(fds[0], std::span<std::byte>(*buf), 0), stop.get_token());
  stopper.join();
  // The task resumed only after the original (cancelled) completion, so the kernel is done with buf.
  buf.reset();
  ::close(fds[0]);
  ::close(fds[1]);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), absl::StatusCode::kCancelled) << n.status();
  EXPECT_NE(n.status().message().find("read fd"), absl::string_view::npos) << n.status();
}

INSTANTIATE_TEST_SUITE_P(Backends, ReactorTest, ::testing::Values(IoBackend::kUring, IoBackend::kThreads),
                         [](const ::testing::TestParamInfo<IoBackend>& info) {
                           return info.param == IoBackend::kUring ? std::string("Uring") : std::string("Threads");
                         });

// ---- Backend-independent tests -----------------------------------------------------------------------

TEST(IoVecCursorTest, AdvancesAcrossEntries) {
  char a[10], b[5], c[20];
  detail::IoVecCursor cursor({{a, 10}, {b, 0}, {b, 5}, {c, 20}});
  EXPECT_EQ(cursor.remaining(), 35u);
  EXPECT_EQ(cursor.count(), 4);
  cursor.Advance(4);  // short transfer inside the first entry
  EXPECT_EQ(cursor.done(), 4u);
  EXPECT_EQ(cursor.data()->iov_base, a + 4);
  EXPECT_EQ(cursor.data()->iov_len, 6u);
  cursor.Advance(6);  // exactly to the boundary: the empty entry is skipped too
  EXPECT_EQ(cursor.data()->iov_base, b);
  EXPECT_EQ(cursor.data()->iov_len, 5u);
  EXPECT_EQ(cursor.count(), 2);
  cursor.Advance(7);  // across a boundary
  EXPECT_EQ(cursor.count(), 1);
  EXPECT_EQ(cursor.data()->iov_base, c + 2);
  EXPECT_EQ(cursor.data()->iov_len, 18u);
  EXPECT_FALSE(cursor.finished());
  cursor.Advance(1000);  // clamped to what is left
  EXPECT_TRUE(cursor.finished());
  EXPECT_EQ(cursor.done(), 35u);
  EXPECT_EQ(cursor.count(), 0);
}

TEST(IoVecCursorTest, EmptyAndClamped) {
  detail::IoVecCursor empty({});
  EXPECT_TRUE(empty.finished());
  EXPECT_EQ(empty.count(), 0);
  char byte;
  std::vector<iovec> many(IOV_MAX + 10, iovec{&byte, 1});
  detail::IoVecCursor cursor(std::move(many));
  EXPECT_EQ(cursor.count(), IOV_MAX);
  cursor.Advance(20);
  EXPECT_EQ(cursor.count(), IOV_MAX - 10);
}

TEST(IoErrorStatusTest, MapsErrnoAndNamesWhere) {
  absl::Status s = detail::IoErrorStatus(ENOENT, "open", "'/x/y'");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("open '/x/y'"), absl::string_view::npos);
  absl::Status r = detail::IoErrorStatus(EIO, "read", "fd 3", 4096);
  EXPECT_NE(r.message().find("read fd 3 at offset 4096"), absl::string_view::npos) << r;
  EXPECT_EQ(detail::IoErrorStatus(EACCES, "open", "p").code(), absl::StatusCode::kPermissionDenied);
}

// Sets SLUICE_IO_BACKEND for one scope and restores the previous value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old != nullptr) old_ = old;
    had_old_ = old != nullptr;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_old_) {
      ::setenv(name_, old_.c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string old_;
  bool had_old_ = false;
};

TEST(ReactorCreateTest, EnvironmentSelectsBackend) {
  {
    ScopedEnv env("SLUICE_IO_BACKEND", "threads");
    absl::StatusOr<std::unique_ptr<Reactor>> io = Reactor::Create();
    ASSERT_TRUE(io.ok()) << io.status();
    EXPECT_EQ((*io)->backend(), IoBackend::kThreads);
    // An explicit option wins over the environment.
    if (detail::UringReactor::Probe() == 0) {
      ReactorOptions options;
      options.backend = IoBackend::kUring;
      absl::StatusOr<std::unique_ptr<Reactor>> forced = Reactor::Create(options);
      ASSERT_TRUE(forced.ok()) << forced.status();
      EXPECT_EQ((*forced)->backend(), IoBackend::kUring);
    }
  }
  if (detail::UringReactor::Probe() == 0) {
    ScopedEnv env("SLUICE_IO_BACKEND", "uring");
    absl::StatusOr<std::unique_ptr<Reactor>> io = Reactor::Create();
    ASSERT_TRUE(io.ok()) << io.status();
    EXPECT_EQ((*io)->backend(), IoBackend::kUring);
    EXPECT_EQ((*io)->backend_name(), "io_uring");
  }
  {
    ScopedEnv env("SLUICE_IO_BACKEND", "carrier-pigeon");
    absl::StatusOr<std::unique_ptr<Reactor>> io = Reactor::Create();
    ASSERT_FALSE(io.ok());
    EXPECT_EQ(io.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(io.status().message().find("carrier-pigeon"), absl::string_view::npos);
  }
}

TEST(ReactorCreateTest, DefaultReactorWorks) {
  Reactor& io = DefaultReactor();
  EXPECT_EQ(&io, &DefaultReactor());
  absl::StatusOr<FileStat> st = SyncWait(io.Stat(TempDir()));
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_TRUE(S_ISDIR(st->mode));
  EXPECT_TRUE(SyncWait(io.Sleep(absl::Milliseconds(1))).ok());
}

}  // namespace
}  // namespace reactor_test_file
}  // namespace sluice
