// Reactor::Create (backend choice and fallback), DefaultReactor, and helpers shared by both backends.
#include "sluice/engine/reactor.h"

#include <limits.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/io_thread.h"
#include "engine/thread_io_backend.h"
#include "engine/uring_reactor.h"
#include "sluice/engine/log.h"

namespace sluice {
namespace {

thread_local bool tls_io_thread = false;

// Once per process, as tests and services create many reactors. The flag is spent only when the message
// is delivered, so raising the level later still shows the next fallback.
void LogFallbackOnce(LogLevel level, const std::string& message) {
  static std::atomic<bool> logged{false};
  if (LogEnabled(level) && !logged.exchange(true)) Log(level, message);
}

// The backend choice is routine: debug only, for every reactor (DefaultReactor's included).
std::unique_ptr<Reactor> Chosen(std::unique_ptr<Reactor> reactor) {
  if (LogEnabled(LogLevel::kDebug)) {
    Log(LogLevel::kDebug, absl::StrCat("I/O backend ", std::string(reactor->backend_name())));
  }
  return reactor;
}

absl::StatusOr<std::optional<IoBackend>> BackendFromEnvironment() {
  const char* value = std::getenv("SLUICE_IO_BACKEND");
  if (value == nullptr || *value == '\0') return std::nullopt;
  const std::string name(value);
  if (name == "uring" || name == "io_uring") return std::optional<IoBackend>(IoBackend::kUring);
  if (name == "threads") return std::optional<IoBackend>(IoBackend::kThreads);
  return absl::InvalidArgumentError(
      absl::StrCat("SLUICE_IO_BACKEND='", name, "': expected 'uring' or 'threads'"));
}

}  // namespace

namespace detail {
void SetIoThread(bool on) noexcept { tls_io_thread = on; }
}  // namespace detail

bool Reactor::IsAnyIoThread() noexcept { return tls_io_thread; }

absl::StatusOr<std::unique_ptr<Reactor>> Reactor::Create(ReactorOptions options) {
  std::optional<IoBackend> backend = options.backend;
  if (!backend.has_value()) {
    absl::StatusOr<std::optional<IoBackend>> from_env = BackendFromEnvironment();
    if (!from_env.ok()) return from_env.status();
    backend = *from_env;
  }
  if (backend == IoBackend::kThreads) {
    return Chosen(std::make_unique<detail::ThreadIoBackend>(options.io_threads));
  }
  int init_errno = 0;
  absl::StatusOr<std::unique_ptr<detail::UringReactor>> uring =
      detail::UringReactor::Create(options.queue_depth, &init_errno);
  if (uring.ok()) return Chosen(std::move(*uring));
  // Forced io_uring, or a failure other than the ring being refused: the caller must hear about it.
  if (backend == IoBackend::kUring || init_errno == 0) return uring.status();
  // Info, not warning: the documented automatic choice in many containers (seccomp refuses the ring),
  // same results, and the user asked for nothing that is being denied.
  LogFallbackOnce(LogLevel::kInfo,
                  absl::StrCat("io_uring unavailable (", std::strerror(init_errno), "); using the threads backend"));
  return Chosen(std::make_unique<detail::ThreadIoBackend>(options.io_threads));
}

Reactor& DefaultReactor() {
  static Reactor* const reactor = [] {
    absl::StatusOr<std::unique_ptr<Reactor>> created = Reactor::Create();
    if (!created.ok()) {
      // A bad SLUICE_IO_BACKEND or a forced io_uring that fails: the process still needs I/O, but the
      // user asked for something else, so this one is a warning (once: this initialiser runs once).
      Log(LogLevel::kWarning, absl::StrCat(created.status().ToString(), "; using the threads backend"));
      ReactorOptions options;
      options.backend = IoBackend::kThreads;
      created = Reactor::Create(options);
    }
    return created->release();  // intentionally never destroyed
  }();
  return *reactor;
}

namespace detail {

IoVecCursor::IoVecCursor(std::vector<iovec> iov) : iov_(std::move(iov)) {
  for (const iovec& v : iov_) total_ += v.iov_len;
  // Leading empty entries would make the kernel return 0, which reads as end of file.
  while (index_ < iov_.size() && iov_[index_].iov_len == 0) ++index_;
}

int IoVecCursor::count() const noexcept {
  return static_cast<int>(std::min<size_t>(iov_.size() - index_, IOV_MAX));
}

void IoVecCursor::Advance(size_t n) noexcept {
  n = std::min(n, remaining());
  done_ += n;
  while (n > 0 && index_ < iov_.size()) {
    iovec& v = iov_[index_];
    const size_t step = std::min(n, v.iov_len);
    v.iov_base = static_cast<char*>(v.iov_base) + step;
    v.iov_len -= step;
    n -= step;
    if (v.iov_len == 0) ++index_;
  }
  while (index_ < iov_.size() && iov_[index_].iov_len == 0) ++index_;
}

absl::Status IoErrorStatus(int error_number, std::string_view op, std::string_view what,
                           std::optional<uint64_t> offset) {
  std::string message = absl::StrCat(absl::string_view(op.data(), op.size()), " ",
                                     absl::string_view(what.data(), what.size()));
  if (offset.has_value()) absl::StrAppend(&message, " at offset ", *offset);
  return absl::ErrnoToStatus(error_number, message);
}

}  // namespace detail
}  // namespace sluice
