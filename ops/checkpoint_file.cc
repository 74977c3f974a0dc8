// SaveToFile / RestoreIteratorFromFile's file handling (sluice/ops/checkpoint_state.h).
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sluice/ops/checkpoint_state.h"

namespace sluice {
namespace {

absl::Status Errno(const char* what, const std::string& path) {
  const int error = errno;
  return absl::UnavailableError(absl::StrCat(what, " ", path, ": ", std::strerror(error)));
}

// Closes on every path out.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

// The directory of `path` and its last component.
std::pair<std::string, std::string> SplitPath(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

// Removes "<name>.tmp.<pid>.<n>" files that a saver killed between create and rename left behind: only
// when that process is gone (on this machine) and the file is older than a minute, so a live saver in
// another process, or one on another machine sharing the folder with a recent file, keeps its file.
void RemoveStaleTemporaries(const std::string& dir, const std::string& name) {
  constexpr time_t kMinAgeSeconds = 60;
  const std::string prefix = name + ".tmp.";
  DIR* listing = ::opendir(dir.c_str());
  if (listing == nullptr) return;
  const time_t now = ::time(nullptr);
  while (const dirent* entry = ::readdir(listing)) {
    const std::string_view entry_name(entry->d_name);
    if (entry_name.substr(0, prefix.size()) != prefix) continue;
    const std::string_view rest = entry_name.substr(prefix.size());
    pid_t pid = 0;
    const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
    if (error != std::errc() || end == rest.data() || *end != '.' || pid <= 0 || pid == ::getpid()) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    const std::string stale = absl::StrCat(dir, "/", entry->d_name);
    struct stat info;
    if (::stat(stale.c_str(), &info) != 0 || !S_ISREG(info.st_mode) || now - info.st_mtime < kMinAgeSeconds)
      continue;
    ::unlink(stale.c_str());
  }
  ::closedir(listing);
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, std::string_view bytes) {
  // A unique temporary name in the same directory, so that the rename is atomic.
  std::random_device device;
  const std::string temp = absl::StrCat(path, ".tmp.", ::getpid(), ".", device());
  Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) return Errno("cannot create", temp);
  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = ::write(fd.get(), bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      absl::Status error = Errno("cannot write", temp);
      ::unlink(temp.c_str());
      return error;
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0) {
    absl::Status error = Errno("cannot fsync", temp);
    ::unlink(temp.c_str());
    return error;
  }
  if (::close(fd.release()) != 0) {
    absl::Status error = Errno("cannot close", temp);
    ::unlink(temp.c_str());
    return error;
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    absl::Status error = Errno("cannot rename to", path);
    ::unlink(temp.c_str());
    return error;
  }
  // The rename itself is durable only once the directory is.
  const auto [dir, name] = SplitPath(path);
  Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() < 0 || ::fsync(dir_fd.get()) != 0) return Errno("cannot fsync directory", dir);
  RemoveStaleTemporaries(dir, name);
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadCheckpointFile(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat("no checkpoint file ", path));
    return Errno("cannot open", path);
  }
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("cannot read", path);
    if (n == 0) break;
    bytes.append(buffer, static_cast<size_t>(n));
  }
  return bytes;
}

}  // namespace sluice
