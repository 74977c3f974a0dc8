#include "sluice/io/file.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "io/file_errors.h"
#include "sluice/engine/status_macros.h"

namespace sluice {
namespace {

// The reactor's messages name the fd; callers need the path.
absl::Status WithPath(const std::string& path, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(path, ": ", status.message()));
}

bool IsAligned(uint64_t value) { return value % kDirectIoAlignment == 0; }

}  // namespace

File::File(Reactor* reactor, std::string path, int fd, uint64_t size, bool direct)
    : reactor_(reactor), path_(std::move(path)), fd_(fd), size_(size), direct_(direct) {}

File::File(File&& other) noexcept
    : reactor_(other.reactor_),
      path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      size_(other.size_),
      direct_(other.direct()) {}

File& File::operator=(File&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    reactor_ = other.reactor_;
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    direct_.store(other.direct(), std::memory_order_relaxed);
  }
  return *this;
}

File::~File() {
  // Synchronous close: a read-only fd has nothing to flush, so the error (if any) carries no data loss.
  if (fd_ >= 0) ::close(fd_);
}

Task<absl::StatusOr<File>> File::Open(Reactor& reactor, std::string path, OpenOptions options) {
  constexpr int kFlags = O_RDONLY | O_CLOEXEC;
  bool direct = options.direct;
  absl::StatusOr<int> fd = co_await reactor.Open(path, direct ? kFlags | O_DIRECT : kFlags);
  if (!fd.ok() && direct && fd.status().code() == absl::StatusCode::kInvalidArgument) {
    // The file system refuses O_DIRECT (tmpfs, some overlays): fall back to the page cache.
    direct = false;
    fd = co_await reactor.Open(path, kFlags);
  }
  // The reactor's message already names the path.
  if (!fd.ok()) co_return io::RemapUnknownFileError(fd.status());
  File file(&reactor, std::move(path), *fd, 0, direct);
  absl::StatusOr<FileStat> stat = co_await reactor.Stat(*fd);
  if (!stat.ok()) co_return WithPath(file.path_, stat.status());
  if (S_ISDIR(stat->mode)) {
    co_return absl::FailedPreconditionError(absl::StrCat(file.path_, ": is a directory, not a file"));
  }
  if (!S_ISREG(stat->mode) && !S_ISBLK(stat->mode)) {
    co_return absl::FailedPreconditionError(absl::StrCat(file.path_, ": not a regular file"));
  }
  file.size_ = stat->size;
  if (S_ISBLK(stat->mode)) {
    // stat gives a block device no size; ask the device, so that it is not read as empty.
    uint64_t device_bytes = 0;
    if (::ioctl(file.fd_, BLKGETSIZE64, &device_bytes) != 0) {
      co_return io::ErrnoStatus(errno, absl::StrCat(file.path_, ": size of the block device"));
    }
    file.size_ = device_bytes;
  }
  co_return std::move(file);
}

bool File::DropDirect() {
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags < 0 || ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT) != 0) return false;
  direct_.store(false, std::memory_order_relaxed);
  return true;
}

Task<absl::StatusOr<size_t>> File::ReadAt(std::span<std::byte> buf, uint64_t offset) {
  if (fd_ < 0) co_return absl::FailedPreconditionError(absl::StrCat(path_, ": read on a closed file"));
  const bool direct = this->direct();
  if (direct && (!IsAligned(reinterpret_cast<uintptr_t>(buf.data())) || !IsAligned(offset) ||
                 !IsAligned(buf.size()))) {
    co_return absl::InvalidArgumentError(
        absl::StrCat(path_, ": direct read at offset ", offset, " of ", buf.size(),
                     " bytes is not aligned to ", kDirectIoAlignment));
  }
  absl::StatusOr<size_t> n = co_await reactor_->Read(fd_, buf, offset);
  if (!n.ok() && direct && n.status().code() == absl::StatusCode::kInvalidArgument && DropDirect()) {
    // Opened with O_DIRECT but the file system refuses direct reads: retry through the page cache.
    n = co_await reactor_->Read(fd_, buf, offset);
  }
  if (!n.ok()) co_return WithPath(path_, n.status());
  co_return n;
}

Task<absl::Status> File::Close() {
  if (fd_ < 0) co_return absl::OkStatus();
  const int fd = std::exchange(fd_, -1);
  absl::Status status = co_await reactor_->Close(fd);
  if (!status.ok()) co_return WithPath(path_, status);
  co_return absl::OkStatus();
}

}  // namespace sluice
