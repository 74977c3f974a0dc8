// Running a baseline tool for `sluice bench`: finding it on a PATH, and running it as a child process with
// its output, wall time, CPU time and peak memory.
//
// Contract:
// - FindTool(name, path): the first executable `name` in the ':'-separated `path` (a name with a '/' is
//   taken as it is). NotFound otherwise, with `install_hint` in the message ("install it with ...").
// - RunProcess(argv): argv[0] is a path (not searched). Stdout and stderr are captured whole. Wall time is
//   from spawning the child to its exit; CPU time is the child's user + system time including the descendants
//   it waited for (wait4's rusage); peak RSS is the largest sum of VmRSS over the child and its descendants,
//   sampled every `sample_ms` (a process tree's peak: a DataLoader's workers count), and never less than
//   the child's own ru_maxrss. A child running past `timeout_seconds` (> 0) is killed with SIGKILL
//   (its process group) and the result is DeadlineExceeded. A program that cannot be started (missing,
//   not executable) and pipe failures are errno Statuses ("cannot run PATH: ..."). The child is started
//   with posix_spawn, not fork, so this process's pages stay writable without copy-on-write faults.
// - Threading: blocks the caller; safe to call from one thread at a time per child.
//
//   absl::StatusOr<std::string> fio = FindTool("fio", getenv("PATH"), "apt-get install fio");
//   absl::StatusOr<ProcessResult> r = RunProcess({*fio, "--version"});
#ifndef SLUICE_TOOLS_SLUICE_BENCH_PROCESS_H_
#define SLUICE_TOOLS_SLUICE_BENCH_PROCESS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace sluice::tools {

absl::StatusOr<std::string> FindTool(const std::string& name, const std::string& path,
                                     const std::string& install_hint);

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal (see `signal`)
  int signal = 0;
  std::string out;
  std::string err;
  double wall_seconds = 0;
  double cpu_seconds = 0;
  uint64_t peak_rss_bytes = 0;
};

struct ProcessOptions {
  double timeout_seconds = 0;  // 0: none
  int sample_ms = 20;
};

absl::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                         const ProcessOptions& options = {});

// The sum of VmRSS over `pid` and its descendants, in bytes (0 when `pid` is gone).
uint64_t ProcessTreeRssBytes(int pid);

// This process's peak RSS (VmHWM) in bytes, and a reset of it (Linux clear_refs "5"; false if refused).
uint64_t SelfPeakRssBytes();
bool ResetSelfPeakRss();

// Calls to operator new in this process so far, when the program counts them: the `sluice` binary does
// (benchmarks/allocation_counter.h, handed over by main with SetAllocationCounter); tests and other
// programs that link these commands do not, and get nullopt.
std::optional<uint64_t> SelfAllocationCount();
void SetAllocationCounter(uint64_t (*count)());

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_SLUICE_BENCH_PROCESS_H_
