// Reactor: asynchronous file I/O and timers for coroutines, over io_uring or a blocking thread pool.
//
// Contract:
// - Every operation is a lazy Task: nothing is submitted until it is awaited. The awaiting coroutine is
//   resumed, via detail::Resume, on the backend's own thread: the reactor thread for io_uring, an I/O
//   worker for the threads backend. Keep continuations short there, and hop to a ThreadPool
//   (`co_await pool.Schedule()`) before heavy work (decoding, parsing), or every other I/O waits.
// - Read/Readv/Write transfer the whole request, resubmitting whatever the kernel returned short; Read and
//   Readv return fewer bytes only at end of file (0 when `offset` is at or past it).
// - Errors are absl::Status values built from the errno (absl::ErrnoToStatus: ENOENT -> NotFound,
//   EACCES -> PermissionDenied, EBADF/EISDIR -> FailedPrecondition, ...), and the message names the
//   operation, the fd or path, and the offset.
// - Cancellation: each operation observes the awaiting coroutine's stop token. Stop requested before
//   submission completes the op with CancelledError without submitting it. Stop requested while the op
//   is in flight: io_uring submits io_uring_prep_cancel for it and still waits for the original completion
//   (so the caller's buffer stays valid until the task resumes); the threads backend cannot interrupt a
//   blocking pread and lets it finish. An op whose kernel completion won the race (the read finished, the
//   file was opened) reports that result rather than CancelledError, so no fd is ever leaked. Sleep is
//   cancellable promptly on both backends.
// - Threading: Reactor methods may be called from any thread; the reactor is an Executor whose Execute(h)
//   resumes `h` on the backend's thread. Never block on a reactor operation (SyncWait) from that thread.
//   Destroying a reactor while operations are in flight is a bug (asserted in debug builds); release
//   builds still let them finish (a pending Sleep runs out) before the destructor joins the threads.
// - Backend choice: ReactorOptions::backend, else the environment variable SLUICE_IO_BACKEND
//   (`uring` or `threads`), else io_uring, falling back to threads when io_uring_queue_init is refused
//   (EPERM/ENOSYS in many containers). Nothing is printed: the backend is logged at debug level and the
//   automatic fallback once at info (sluice/engine/log.h).
//
//   absl::StatusOr<std::unique_ptr<Reactor>> io = Reactor::Create();
//   Task<absl::StatusOr<size_t>> Head(Reactor& io, std::string path, std::span<std::byte> out) {
//     SLUICE_CO_ASSIGN_OR_RETURN(int fd, co_await io.Open(path, O_RDONLY));
//     absl::StatusOr<size_t> n = co_await io.Read(fd, out, 0);
//     SLUICE_CO_RETURN_IF_ERROR(co_await io.Close(fd));
//     co_return n;
//   }
#ifndef SLUICE_ENGINE_REACTOR_H_
#define SLUICE_ENGINE_REACTOR_H_

#include <sys/types.h>
#include <sys/uio.h>

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sluice/engine/executor.h"
#include "sluice/engine/task.h"
#include "sluice/export.h"

namespace sluice {

struct FileStat {
  uint64_t size = 0;
  uint32_t mode = 0;  // st_mode: file type and permission bits
  uint64_t mtime_ns = 0;  // since the Unix epoch
  uint32_t block_size = 0;  // preferred I/O block size
};

enum class IoBackend { kUring, kThreads };

struct ReactorOptions {
  // Unset: SLUICE_IO_BACKEND from the environment, else io_uring with fallback to threads.
  std::optional<IoBackend> backend;
  // io_uring submission queue entries; the completion queue is twice as large and bounds in-flight ops.
  unsigned queue_depth = 256;
  // Worker threads of the threads backend (each blocks in one syscall at a time).
  int io_threads = 4;
};

class SLUICE_EXPORT Reactor : public Executor {
 public:
  // Fails with InvalidArgument for a bad SLUICE_IO_BACKEND value, or with the errno status when the
  // requested backend (explicit or from the environment) cannot start.
  static absl::StatusOr<std::unique_ptr<Reactor>> Create(ReactorOptions options = {});

  ~Reactor() override = default;

  // True on a thread of any reactor that completes I/O (the io_uring loop, a threads-backend worker or
  // timer). Waiters resume inline there, so code running on it must not block on work that may need
  // that thread: an async stream torn down there hands its join off (AsyncStreamOwner).
  static bool IsAnyIoThread() noexcept;

  virtual IoBackend backend() const noexcept = 0;
  virtual std::string_view backend_name() const noexcept = 0;  // "io_uring" or "threads"

  // openat(AT_FDCWD, path, flags, mode). The fd is the caller's to Close().
  virtual Task<absl::StatusOr<int>> Open(std::string path, int flags, mode_t mode = 0) = 0;
  // Reads buf.size() bytes at `offset`; fewer only at end of file. The caller keeps `buf` alive until
  // the task completes (also when cancelled: the kernel may still be writing into it until then).
  virtual Task<absl::StatusOr<size_t>> Read(int fd, std::span<std::byte> buf, uint64_t offset) = 0;
  // Scatter read into `iov` (owned by the operation; the buffers they point to are the caller's).
  virtual Task<absl::StatusOr<size_t>> Readv(int fd, std::vector<iovec> iov, uint64_t offset) = 0;
  // Writes all of `buf` at `offset`. The caller keeps `buf` alive until the task completes.
  virtual Task<absl::StatusOr<size_t>> Write(int fd, std::span<const std::byte> buf, uint64_t offset) = 0;
  virtual Task<absl::Status> Close(int fd) = 0;
  virtual Task<absl::StatusOr<FileStat>> Stat(std::string path) = 0;
  virtual Task<absl::StatusOr<FileStat>> Stat(int fd) = 0;
  // OK after `duration`; CancelledError as soon as stop is requested.
  virtual Task<absl::Status> Sleep(absl::Duration duration) = 0;
};

// The process-wide reactor, created on first use with default options and never destroyed (so that
// work still running at exit never touches a dead reactor). Its backend goes to the log
// (sluice/engine/log.h) at debug level, an automatic fallback to threads once at info.
SLUICE_EXPORT Reactor& DefaultReactor();

namespace detail {

// The part of a scatter/gather transfer still to do, advanced by each (possibly short) completion.
// Shared by both backends so that the resubmission arithmetic is written and tested once.
class SLUICE_EXPORT IoVecCursor {
 public:
  explicit IoVecCursor(std::vector<iovec> iov);

  // The iovecs still to transfer (the first one trimmed by what was already done), at most IOV_MAX.
  const iovec* data() const noexcept { return iov_.data() + index_; }
  int count() const noexcept;
  size_t done() const noexcept { return done_; }
  size_t remaining() const noexcept { return total_ - done_; }
  bool finished() const noexcept { return done_ == total_; }
  // Records `n` more bytes transferred (n <= remaining()).
  void Advance(size_t n) noexcept;

 private:
  std::vector<iovec> iov_;
  size_t index_ = 0;
  size_t done_ = 0;
  size_t total_ = 0;
};

// absl::ErrnoToStatus with a message "<op> <what>[ at offset N]: <strerror>".
SLUICE_EXPORT absl::Status IoErrorStatus(int error_number, std::string_view op, std::string_view what,
                                         std::optional<uint64_t> offset = std::nullopt);

}  // namespace detail
}  // namespace sluice

#endif  // SLUICE_ENGINE_REACTOR_H_
