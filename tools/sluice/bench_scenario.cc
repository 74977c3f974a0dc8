#include "tools/sluice/bench_scenario.h"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tools/sluice/bench_scenarios.h"

namespace sluice::tools {

absl::Status RunAlternating(const BenchConfig& config, std::vector<std::pair<std::string, SideRunner>> sides,
                            CaseResult* result) {
  if (config.repeat <= 0) return absl::InvalidArgumentError("repeat must be positive");
  result->sides.clear();
  for (const auto& side : sides) {
    result->sides.emplace_back();
    result->sides.back().name = side.first;
  }
  const size_t n = sides.size();
  for (int round = 0; round < config.repeat; ++round) {
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (static_cast<size_t>(round) + k) % n;
      ReportProgress(
          config, absl::StrCat(result->name, ": run ", round + 1, "/", config.repeat, ", ", sides[i].first));
      absl::StatusOr<Sample> sample = sides[i].second();
      if (!sample.ok()) {
        return absl::Status(sample.status().code(), absl::StrCat(result->name, ", ", sides[i].first, ": ",
                                                                 sample.status().message()));
      }
      SideResult& side = result->sides[i];
      side.samples.push_back(sample->value);
      for (const auto& [key, value] : sample->extra) side.extra[key].push_back(value);
    }
  }
  return absl::OkStatus();
}

void ReportProgress(const BenchConfig& config, const std::string& line) {
  if (config.progress == nullptr) return;
  if (config.progress_in_place) {
    // Clear to the end of the line: the previous line may be longer.
    *config.progress << "\r" << line << "\033[K" << std::flush;
  } else {
    *config.progress << line << "\n" << std::flush;
  }
}

void EndProgress(const BenchConfig& config) {
  if (config.progress != nullptr && config.progress_in_place) *config.progress << "\r\033[K" << std::flush;
}

absl::StatusOr<ScopedTempDir> ScopedTempDir::Create(const std::string& parent) {
  std::error_code ec;
  const std::string base = parent.empty() ? std::filesystem::temp_directory_path(ec).string() : parent;
  std::string templ = absl::StrCat(base, "/sluice-bench-XXXXXX");
  if (::mkdtemp(templ.data()) == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot create a temporary folder in ", base));
  }
  return ScopedTempDir(std::move(templ));
}

ScopedTempDir::~ScopedTempDir() {
  if (path_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

const std::vector<Scenario>& Scenarios() {
  static const std::vector<Scenario>* const scenarios = [] {
    return new std::vector<Scenario>{ScanScenario(),        PipelineScenario(), OverheadScenario(),
                                     ParallelMapScenario(), FanoutScenario(),   ServiceScenario(),
                                     CheckpointScenario()};
  }();
  return *scenarios;
}

const Scenario* FindScenario(const std::string& name) {
  for (const Scenario& s : Scenarios()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

int BenchThreads(const BenchConfig& config) {
  if (config.threads > 0) return config.threads;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

absl::StatusOr<std::string> BaselinesDir(const BenchConfig& config) {
  std::error_code ec;
  std::vector<std::filesystem::path> candidates;
  if (!config.baselines_dir.empty()) {
    candidates.push_back(config.baselines_dir);
  } else {
    // __FILE__ is the absolute path of this source under CMake: the checkout the binary was built from.
    candidates.push_back(std::filesystem::path(__FILE__).parent_path() / "../../benchmarks/baselines");
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) candidates.push_back(exe.parent_path() / "../../benchmarks/baselines");
    candidates.push_back("benchmarks/baselines");
  }
  for (const std::filesystem::path& dir : candidates) {
    if (std::filesystem::is_directory(dir, ec)) return std::filesystem::weakly_canonical(dir, ec).string();
  }
  return absl::NotFoundError(absl::StrCat("the baseline scripts (benchmarks/baselines) were not found at ",
                                          candidates.front().string(),
                                          "; give their folder with --baselines"));
}

}  // namespace sluice::tools
