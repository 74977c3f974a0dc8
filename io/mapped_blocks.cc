#include "io/mapped_blocks.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "io/memory_limit.h"
#include "sluice/engine/async_event.h"
#include "sluice/engine/async_scope.h"
#include "sluice/engine/executor.h"
#include "sluice/engine/log.h"
#include "sluice/engine/task.h"

namespace sluice::io {
namespace {

size_t PageSize() { return static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }

size_t RoundUp(size_t n, size_t alignment) { return (n + alignment - 1) / alignment * alignment; }

struct Unmap {
  size_t length;
  void operator()(const std::byte* p) const { ::munmap(const_cast<std::byte*>(p), length); }
};

absl::StatusOr<std::shared_ptr<const std::byte>> Map(int fd, const std::string& path, uint64_t offset,
                                                     size_t length, Prefault prefault) {
  // MAP_POPULATE fills the page tables from the page cache (reading what is missing) inside this call,
  // so the consumer takes no faults; the other modes leave the faults (16 pages each) to the consumer.
  const bool populate = prefault == Prefault::kPopulate;
  const int flags = MAP_SHARED | (populate ? MAP_POPULATE : 0);
  void* p = ::mmap(nullptr, length, PROT_READ, flags, fd, static_cast<off_t>(offset));
  if (p == MAP_FAILED) {
    return absl::ErrnoToStatus(errno, absl::StrCat(path, ": mmap of ", length, " bytes at offset ", offset));
  }
  if (!populate) ::madvise(p, length, MADV_SEQUENTIAL);
  if (prefault == Prefault::kWillNeed) ::madvise(p, length, MADV_WILLNEED);

  return std::shared_ptr<const std::byte>(static_cast<const std::byte*>(p), Unmap{length});
}

// One window being mapped: written by its task, read by the generator once `done` is set.
struct Window {
  explicit Window(Executor* resume_on) : done(false, resume_on) {}
  absl::StatusOr<std::shared_ptr<const std::byte>> map;
  uint64_t offset = 0;
  size_t length = 0;
  AsyncEvent done;
};

// Maps (and prefaults) on the reactor's thread, the thread that used to do the page-cache copy.
Task<absl::Status> MapOnReactor(Reactor* reactor, int fd, const std::string* path, Prefault prefault, Window* w,
                                std::atomic<std::thread::id>* mapping_thread) {
  ResumeOn hop{reactor};
  co_await hop;
  mapping_thread->store(std::this_thread::get_id(), std::memory_order_relaxed);
  w->map = Map(fd, *path, w->offset, w->length, prefault);
  w->done.Set();  // last touch of *w
  co_return absl::OkStatus();
}

void StartMap(AsyncScope& scope, Reactor& reactor, int fd, const std::string& path, Prefault prefault, Window& w,
              uint64_t offset, size_t length, std::atomic<std::thread::id>& mapping_thread) {
  w.offset = offset;
  w.length = length;
  w.map = std::shared_ptr<const std::byte>();
  w.done.Reset();
  scope.Spawn(MapOnReactor(&reactor, fd, &path, prefault, &w, &mapping_thread));
}

// Joining a mapping task on the reactor's thread would never finish: fail loudly instead of hanging.
struct ReactorThreadCheck {
  ReactorThreadCheck(const AsyncScope* scope, const std::atomic<std::thread::id>* thread)
      : scope(scope), thread(thread) {}
  ReactorThreadCheck(const ReactorThreadCheck&) = delete;
  ReactorThreadCheck& operator=(const ReactorThreadCheck&) = delete;
  ~ReactorThreadCheck() {
    if (scope->pending() > 0 && thread->load(std::memory_order_relaxed) == std::this_thread::get_id()) {
      // A crash path: straight to stderr, whatever the log level and sink (see sluice/engine/log.h).
      std::fprintf(stderr,
                   "sluice: a ReadBlocks generator was destroyed on the reactor thread while mapping, which "
                   "would deadlock; set SequentialReadOptions::resume_on\n");
      std::abort();
    }
  }
  const AsyncScope* scope;
  const std::atomic<std::thread::id>* thread;
};

}  // namespace

bool ShouldMap(const File& file, const SequentialReadOptions& options) {
  // Only on request: kAuto reads, because a mapping cannot survive another process truncating the file.
  if (options.mode != ReadMode::kMmap || options.direct || file.direct() || file.Size() == 0) return false;
  struct stat st;
  if (::fstat(file.fd(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  // Some file systems refuse mmap (ENODEV): probe one page so those keep the read path.
  const size_t probe = std::min<uint64_t>(PageSize(), file.Size());
  void* p = ::mmap(nullptr, probe, PROT_READ, MAP_SHARED, file.fd(), 0);
  if (p == MAP_FAILED) return false;
  ::munmap(p, probe);
  return true;
}

AsyncGenerator<absl::StatusOr<Block>> MapBlocks(Reactor& reactor, File file, std::string path,
                                                SequentialReadOptions options) {
  if (options.mmap_window == 0) {
    absl::StatusOr<Block> error(absl::InvalidArgumentError(
        absl::StrCat(path, ": ReadBlocks needs mmap_window > 0")));
    co_yield std::move(error);
    co_return;
  }
  // Leave the thread File::Open completed on before any work.
  ResumeOn start{options.resume_on};
  co_await start;

  const int fd = file.fd();
  const uint64_t size = file.Size();
  const size_t window = RoundUp(options.mmap_window, PageSize());
  // Mappings start at a page boundary; the bytes before start_offset in the first window are not handed
  // out (ReadBlocks has checked start_offset < size).
  const uint64_t start_offset = options.start_offset;
  const uint64_t first = start_offset / PageSize() * PageSize();
  const uint64_t num_windows = (size - first + window - 1) / window;
  auto window_offset = [&](uint64_t k) { return first + k * window; };
  auto window_length = [&](uint64_t k) {
    return static_cast<size_t>(std::min<uint64_t>(window, size - window_offset(k)));
  };
  // Destruction runs in reverse: `scope` joins the mapping task before the windows and the fd go.
  std::unique_ptr<Window> windows[2] = {std::make_unique<Window>(options.resume_on),
                                        std::make_unique<Window>(options.resume_on)};
  std::atomic<std::thread::id> mapping_thread{};
  AsyncScope scope;
  ReactorThreadCheck check(&scope, &mapping_thread);

  StartMap(scope, reactor, fd, path, options.prefault, *windows[0], window_offset(0), window_length(0),
           mapping_thread);
  absl::Status failure;
  std::optional<uint64_t> read_from;  // set when a window could not be mapped: read from there instead
  for (uint64_t k = 0; k < num_windows; ++k) {
    Window& w = *windows[k % 2];
    std::stop_token stop = co_await CurrentStopToken();
    if (stop.stop_requested()) {
      failure = absl::CancelledError(absl::StrCat(path, ": read cancelled at offset ", w.offset));
      break;
    }
    absl::Status waited = co_await w.done.Wait();
    if (!waited.ok()) {
      failure = absl::CancelledError(absl::StrCat(path, ": read cancelled at offset ", w.offset));
      break;
    }
    if (!w.map.ok()) {
      // The probe mapped, this window did not (ENOMEM under an address-space limit, too many mappings):
      // read the rest of the file instead of failing; no other mapping task is in flight now.
      if (LogEnabled(LogLevel::kInfo)) {
        Log(LogLevel::kInfo, absl::StrCat(w.map.status().message(), "; reading the rest of the file instead"));
      }
      read_from = std::max(w.offset, start_offset);
      break;
    }
    // Touching pages past a shrunken end would raise SIGBUS: check before handing the window out.
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      failure = absl::ErrnoToStatus(errno, absl::StrCat(path, ": fstat before offset ", w.offset));
      break;
    }
    const uint64_t end = w.offset + w.length;
    if (static_cast<uint64_t>(st.st_size) < end) {
      const uint64_t got = static_cast<uint64_t>(std::max<off_t>(st.st_size, 0));
      failure = absl::DataLossError(absl::StrCat(path, ": file shrank while being read: expected ", w.length,
                                                 " bytes at offset ", w.offset, ", got ",
                                                 got > w.offset ? got - w.offset : 0));
      break;
    }
    const size_t skip = static_cast<size_t>(std::max(w.offset, start_offset) - w.offset);
    Block block;
    block.buffer = std::move(*w.map);
    block.data = std::span<const std::byte>(block.buffer.get() + skip, w.length - skip);
    block.offset = w.offset + skip;
    if (k + 1 < num_windows) {
      StartMap(scope, reactor, fd, path, options.prefault, *windows[(k + 1) % 2], window_offset(k + 1),
               window_length(k + 1), mapping_thread);
    }
    absl::StatusOr<Block> out(std::move(block));
    co_yield std::move(out);
  }

  if (scope.pending() > 0) {
    scope.RequestStop();
    co_await scope.Join();
    ResumeOn hop{options.resume_on};
    co_await hop;
  }
  if (read_from.has_value()) {
    for (uint64_t pos = *read_from; pos < size;) {
      std::stop_token stop = co_await CurrentStopToken();
      if (stop.stop_requested()) {
        failure = absl::CancelledError(absl::StrCat(path, ": read cancelled at offset ", pos));
        break;
      }
      const size_t n = static_cast<size_t>(std::min<uint64_t>(std::max<size_t>(options.block_size, 1), size - pos));
      std::unique_ptr<std::byte[]> owned = TryAllocateBytes(n);
      if (owned == nullptr) {
        failure = absl::ResourceExhaustedError(
            absl::StrCat(path, ": read buffer for offset ", pos, " needs ", n, " bytes: out of memory"));
        break;
      }
      std::shared_ptr<std::byte> buffer(owned.release(), std::default_delete<std::byte[]>());
      const std::span<std::byte> into(buffer.get(), n);  // GCC12 PR100611: no temporary in the co_await
      absl::StatusOr<size_t> got = co_await file.ReadAt(into, pos);
      ResumeOn hop{options.resume_on};  // the read completed on the reactor's thread
      co_await hop;
      if (!got.ok()) {
        failure = got.status();
        break;
      }
      if (*got < n) {
        failure = absl::DataLossError(absl::StrCat(path, ": file shrank while being read: expected ", n,
                                                   " bytes at offset ", pos, ", got ", *got));
        break;
      }
      Block block;
      block.data = std::span<const std::byte>(buffer.get(), n);
      block.buffer = std::move(buffer);
      block.offset = pos;
      pos += n;
      absl::StatusOr<Block> out(std::move(block));
      co_yield std::move(out);
    }
  }
  if (!failure.ok()) {
    absl::StatusOr<Block> error(std::move(failure));
    co_yield std::move(error);
  }
}

}  // namespace sluice::io
