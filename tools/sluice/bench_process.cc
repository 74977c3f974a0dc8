#include "tools/sluice/bench_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace sluice::tools {
namespace {

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// "VmRSS:    1234 kB" -> bytes; 0 if the process or the field is gone.
uint64_t StatusFieldBytes(const std::string& status_path, const char* field) {
  std::ifstream status(status_path);
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(status, line)) {
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':') {
      return std::strtoull(line.c_str() + n + 1, nullptr, 10) * 1024;
    }
  }
  return 0;
}

// Every thread's children file: a child forked from a non-main thread is listed under that thread only.
void AppendChildren(int pid, std::vector<int>* out) {
  std::error_code ec;
  std::filesystem::directory_iterator tasks(absl::StrCat("/proc/", pid, "/task"), ec);
  if (ec) return;
  for (const auto& task : tasks) {
    std::ifstream children(task.path() / "children");
    int child;
    while (children >> child) out->push_back(child);
  }
}

double Seconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
}

struct Pipe {
  int fd[2] = {-1, -1};
  ~Pipe() {
    for (int f : fd) {
      if (f >= 0) ::close(f);
    }
  }
};

}  // namespace

absl::StatusOr<std::string> FindTool(const std::string& name, const std::string& path,
                                     const std::string& install_hint) {
  if (name.find('/') != std::string::npos) {
    if (IsExecutableFile(name)) return name;
  } else {
    for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
      std::string candidate = absl::StrCat(dir, "/", name);
      if (IsExecutableFile(candidate)) return candidate;
    }
  }
  return absl::NotFoundError(
      absl::StrCat(name, " not found", name.find('/') != std::string::npos ? "" : " on PATH",
                   install_hint.empty() ? "" : absl::StrCat(": install it with ", install_hint)));
}

uint64_t ProcessTreeRssBytes(int pid) {
  uint64_t total = 0;
  std::vector<int> pending = {pid};
  // A bound on the walk: /proc can list a pid twice while a process is reparented.
  for (size_t visited = 0; !pending.empty() && visited < 4096; ++visited) {
    const int p = pending.back();
    pending.pop_back();
    total += StatusFieldBytes(absl::StrCat("/proc/", p, "/status"), "VmRSS");
    AppendChildren(p, &pending);
  }
  return total;
}

uint64_t SelfPeakRssBytes() { return StatusFieldBytes("/proc/self/status", "VmHWM"); }

bool ResetSelfPeakRss() {
  std::ofstream clear_refs("/proc/self/clear_refs");
  clear_refs << "5";
  clear_refs.flush();
  return clear_refs.good();
}

namespace {
std::atomic<uint64_t (*)()> allocation_counter{nullptr};
}  // namespace

std::optional<uint64_t> SelfAllocationCount() {
  uint64_t (*count)() = allocation_counter.load(std::memory_order_acquire);
  if (count == nullptr) return std::nullopt;
  return count();
}

void SetAllocationCounter(uint64_t (*count)()) { allocation_counter.store(count, std::memory_order_release); }

absl::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                         const ProcessOptions& options) {
  if (argv.empty()) return absl::InvalidArgumentError("RunProcess: empty argv");
  Pipe out_pipe, err_pipe;
  if (::pipe2(out_pipe.fd, O_CLOEXEC) != 0 || ::pipe2(err_pipe.fd, O_CLOEXEC) != 0) {
    return absl::ErrnoToStatus(errno, "pipe2");
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  // posix_spawn (clone with CLONE_VM | CLONE_VFORK in glibc), not fork: a fork write-protects every page
  // of this process for copy-on-write, and the benchmark that runs next here then takes a page fault on
  // each page it writes (~13k faults, 3x its CPU per sample, measured after each baseline run).
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawnattr_init(&attributes);
  ::posix_spawn_file_actions_adddup2(&actions, out_pipe.fd[1], STDOUT_FILENO);
  ::posix_spawn_file_actions_adddup2(&actions, err_pipe.fd[1], STDERR_FILENO);
  ::posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  // Own process group, so that a timeout kills the workers too.
  ::posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  ::posix_spawnattr_setpgroup(&attributes, 0);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = -1;
  const int spawn_error = ::posix_spawn(&pid, args[0], &actions, &attributes, args.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attributes);
  if (spawn_error != 0) return absl::ErrnoToStatus(spawn_error, absl::StrCat("cannot run ", argv[0]));
  ::close(out_pipe.fd[1]);
  out_pipe.fd[1] = -1;
  ::close(err_pipe.fd[1]);
  err_pipe.fd[1] = -1;

  ProcessResult result;
  bool timed_out = false;
  pollfd fds[2] = {{out_pipe.fd[0], POLLIN, 0}, {err_pipe.fd[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  char buffer[1 << 15];
  while (open_fds > 0) {
    const int ready = ::poll(fds, 2, options.sample_ms);
    if (ready < 0 && errno != EINTR) break;
    result.peak_rss_bytes = std::max(result.peak_rss_bytes, ProcessTreeRssBytes(pid));
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_fds;
      }
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (options.timeout_seconds > 0 && elapsed > options.timeout_seconds && !timed_out) {
      ::kill(-pid, SIGKILL);
      timed_out = true;
    }
  }
  int status = 0;
  rusage usage{};
  while (::wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) return absl::ErrnoToStatus(errno, "wait4");
  }
  result.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.cpu_seconds = Seconds(usage.ru_utime) + Seconds(usage.ru_stime);
  result.peak_rss_bytes = std::max(result.peak_rss_bytes, static_cast<uint64_t>(usage.ru_maxrss) * 1024);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  if (timed_out) {
    return absl::DeadlineExceededError(
        absl::StrCat(argv[0], " ran longer than ", options.timeout_seconds, " s and was killed"));
  }
  return result;
}

}  // namespace sluice::tools
