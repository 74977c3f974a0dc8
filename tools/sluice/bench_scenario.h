// The pieces every `sluice bench` scenario shares: its configuration, its results (cases of sides of
// samples), the alternating runner, a scoped temporary folder, and the registry of scenarios.
//
// Contract:
// - A scenario measures cases (a record size, a thread count, ...); each case has sides, sides[0] being
//   sluice and the others its baselines, each measured `repeat` times. RunAlternating runs the sides in
//   turn, one run each per round, starting each round with the next side, so that a slow phase of a shared
//   machine hits every side alike. Ratios are sluice's median over each baseline's median.
// - A scenario whose baseline tool is missing fails with FailedPrecondition naming the tool and how to
//   install it; nothing is reported for it (never a figure without its baseline).
// - Scenarios() lists every scenario in the order `all` runs them; one not yet available has an empty
//   `run` and says why in `unavailable`.
// - Threading: a scenario runs on the calling thread (and whatever threads it starts and joins).
//
//   CaseResult c{.name = "rec1k page cache", .metric = "GB/s"};
//   absl::Status s = RunAlternating(config, {{"sluice", RunSluice}, {"dd", RunDd}}, &c);
#ifndef SLUICE_TOOLS_SLUICE_BENCH_SCENARIO_H_
#define SLUICE_TOOLS_SLUICE_BENCH_SCENARIO_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sluice::tools {

inline constexpr const char* kInstallBenchDeps = "scripts/install-bench-deps";

struct BenchConfig {
  std::optional<int64_t> size;  // in the scenario's unit (Scenario::size_unit); unset: its default
  int threads = 0;              // 0: the machine's cores
  int repeat = 5;
  std::vector<std::string> data;  // the user's input files or folder; empty: generated
  std::string work_dir;           // where generated data goes (a temporary folder inside); "": the system's
  std::string path;               // PATH searched for baseline tools
  std::string python = "/usr/bin/python3";
  std::string baselines_dir;  // benchmarks/baselines; "": found next to the sources or the binary
  std::ostream* progress = nullptr;
  bool progress_in_place = false;  // redraw one line (a terminal) instead of one line per step
};

// One run of one side: the case's metric, and other figures by name (peak_rss_mib, ...).
struct Sample {
  double value = 0;
  std::map<std::string, double> extra;
};
using SideRunner = std::function<absl::StatusOr<Sample>()>;

struct SideResult {
  std::string name;
  std::vector<double> samples;
  std::map<std::string, std::vector<double>> extra;
};

struct CaseResult {
  std::string name;
  std::string metric;  // unit of the samples: "GB/s", "samples/s", "ns/element"
  bool higher_is_better = true;
  std::string x_label;  // for plots: what `x` is ("record bytes", "threads"); "" = none
  double x = 0;
  std::vector<SideResult> sides;  // sides[0] is sluice
  std::string note;
};

struct ScenarioResult {
  std::string scenario;
  std::vector<std::pair<std::string, std::string>> parameters;  // as run: size, threads, data, ...
  std::vector<CaseResult> cases;
  std::vector<std::string> notes;  // what was not measured, and why
};

absl::Status RunAlternating(const BenchConfig& config, std::vector<std::pair<std::string, SideRunner>> sides,
                            CaseResult* result);

// Progress for the user while a scenario runs (nothing when config.progress is null).
void ReportProgress(const BenchConfig& config, const std::string& line);
void EndProgress(const BenchConfig& config);

// mkdtemp("<parent>/sluice-bench-XXXXXX"), removed with everything in it on destruction.
class ScopedTempDir {
 public:
  static absl::StatusOr<ScopedTempDir> Create(const std::string& parent);
  ScopedTempDir(ScopedTempDir&& other) noexcept : path_(std::exchange(other.path_, "")) {}
  ScopedTempDir& operator=(ScopedTempDir&&) = delete;
  ~ScopedTempDir();
  const std::string& path() const { return path_; }

 private:
  explicit ScopedTempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

struct Scenario {
  std::string name;
  std::string description;
  std::string size_unit;  // what --size counts; "" = the scenario takes no size
  int64_t default_size = 0;
  std::string unavailable;  // non-empty: cannot run yet, and why
  std::function<absl::StatusOr<ScenarioResult>(const BenchConfig&)> run;
};

const std::vector<Scenario>& Scenarios();
const Scenario* FindScenario(const std::string& name);

// The threads a scenario uses: config.threads, or the machine's cores.
int BenchThreads(const BenchConfig& config);

// The folder of the baseline scripts: config.baselines_dir, else benchmarks/baselines of the source tree
// this binary was built from, else next to build/bin. NotFound names the flag that sets it.
absl::StatusOr<std::string> BaselinesDir(const BenchConfig& config);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_SLUICE_BENCH_SCENARIO_H_
