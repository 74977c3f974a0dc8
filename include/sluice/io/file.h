// File: an open, read-only file whose reads run on a Reactor (io_uring or the threads backend).
//
// Contract:
// - Open(reactor, path, options) opens `path` read-only and stats it once; Size() is the size at open.
//   Errors name the path: NotFound / PermissionDenied from open(2), FailedPrecondition for a directory,
//   anything that is not a regular file (or block device) and a symbolic link loop (ELOOP).
// - O_DIRECT (options.direct): the file is opened with O_DIRECT; where the file system refuses it (EINVAL
//   from open, as on tmpfs and some overlay file systems, or EINVAL from the first direct read) the file
//   silently falls back to buffered reads and direct() becomes false. That is not an error: callers that
//   care read direct(). While direct() is true, ReadAt needs `buf.data()`, `offset` and `buf.size()` to be
//   multiples of alignment() (InvalidArgument otherwise); a read that reaches end of file returns the bytes
//   up to it, so the tail of a file is read with an aligned length and truncated by the kernel.
// - ReadAt(buf, offset) fills `buf` from `offset`; fewer bytes only at end of file (0 at or past it).
//   The caller keeps `buf` alive until the task completes (also when it is cancelled). Errors keep the
//   reactor's code and are prefixed with the path: "PATH: read fd N at offset K: <errno text>".
// - Cancellation: ReadAt observes the awaiting coroutine's stop token as Reactor::Read does.
// - Threading: ReadAt may run concurrently from several coroutines (positional reads, no shared cursor).
//   Close() must not race with reads. Movable, not copyable.
// - Lifetime: Close() closes through the reactor and reports the error. A File destroyed without
//   Close() closes its fd synchronously with ::close(2) and drops any error (cheap for a read-only fd).
//   The reactor and the File must outlive the File's tasks.
//
//   Task<absl::StatusOr<std::string>> Head(Reactor& io, std::string path) {
//     SLUICE_CO_ASSIGN_OR_RETURN(File file, co_await File::Open(io, path));
//     std::string out(std::min<uint64_t>(file.Size(), 100), '\0');
//     SLUICE_CO_ASSIGN_OR_RETURN(size_t n, co_await file.ReadAt(AsWritableBytes(out), 0));
//     out.resize(n);
//     SLUICE_CO_RETURN_IF_ERROR(co_await file.Close());
//     co_return out;
//   }
#ifndef SLUICE_IO_FILE_H_
#define SLUICE_IO_FILE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sluice/engine/reactor.h"
#include "sluice/engine/task.h"
#include "sluice/export.h"

namespace sluice {

// The alignment direct reads use. 4096 covers every common logical block size (512 and 4096); statx's
// STATX_DIOALIGN would give the exact value but needs Linux 6.1 headers that Debian 12 does not have.
inline constexpr size_t kDirectIoAlignment = 4096;

struct OpenOptions {
  // Ask for O_DIRECT (bypass the page cache); falls back to buffered reads where refused.
  bool direct = false;
};

inline std::span<std::byte> AsWritableBytes(std::string& s) {
  return {reinterpret_cast<std::byte*>(s.data()), s.size()};
}

class SLUICE_EXPORT File {
 public:
  static Task<absl::StatusOr<File>> Open(Reactor& reactor, std::string path, OpenOptions options = {});

  File() = default;
  File(File&& other) noexcept;
  File& operator=(File&& other) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  // Not a coroutine parameter problem: `buf` is a view the caller keeps alive until the task completes.
  Task<absl::StatusOr<size_t>> ReadAt(std::span<std::byte> buf, uint64_t offset);
  Task<absl::Status> Close();

  uint64_t Size() const noexcept { return size_; }
  bool direct() const noexcept { return direct_.load(std::memory_order_relaxed); }
  // 1 for buffered files, kDirectIoAlignment while direct() is true.
  size_t alignment() const noexcept { return direct() ? kDirectIoAlignment : 1; }
  const std::string& path() const noexcept { return path_; }
  int fd() const noexcept { return fd_; }
  bool is_open() const noexcept { return fd_ >= 0; }

 private:
  File(Reactor* reactor, std::string path, int fd, uint64_t size, bool direct);
  // Clears O_DIRECT on the fd after a direct read was refused; false if that failed too.
  bool DropDirect();

  Reactor* reactor_ = nullptr;
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  std::atomic<bool> direct_{false};
};

}  // namespace sluice

#endif  // SLUICE_IO_FILE_H_
