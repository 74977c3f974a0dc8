#include "tools/sluice/bench_command.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/sluice/bench_process.h"
#include "tools/sluice/bench_report.h"
#include "tools/sluice/bench_scenario.h"

namespace sluice::tools {
namespace {

std::string ScenarioList() {
  std::string list;
  for (const Scenario& s : Scenarios()) {
    absl::StrAppend(&list, "  ", s.name, std::string(s.name.size() < 14 ? 14 - s.name.size() : 1, ' '),
                    s.description);
    if (!s.size_unit.empty())
      absl::StrAppend(&list, " [--size: ", s.size_unit, ", default ", s.default_size, "]");
    if (!s.unavailable.empty()) absl::StrAppend(&list, " (not available: ", s.unavailable, ")");
    list += "\n";
  }
  return list + "  all           every available scenario at its default size\n";
}

// Draws `json_file` into `png` with benchmarks/baselines/plot.py.
absl::Status Plot(const BenchConfig& config, const std::string& json_file, const std::string& png) {
  absl::StatusOr<std::string> python =
      FindTool(config.python, config.path, absl::StrCat(kInstallBenchDeps, " (Debian's python3)"));
  if (!python.ok()) return python.status();
  absl::StatusOr<std::string> dir = BaselinesDir(config);
  if (!dir.ok()) return dir.status();
  absl::StatusOr<ProcessResult> run = RunProcess({*python, *dir + "/plot.py", json_file, png});
  if (!run.ok()) return run.status();
  if (run->exit_code != 0) {
    return absl::FailedPreconditionError(absl::StrCat("plot.py failed (exit ", run->exit_code,
                                                      "): ", run->err, "(python3-matplotlib is installed by ",
                                                      kInstallBenchDeps, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

CLI::App* AddBench(CLI::App& app, BenchOptions* options) {
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "benchmark sluice beside the tools users would pick instead, on the same data, in the same run");
  cmd->add_option("SCENARIO", options->scenario, "a scenario below, or all")->type_name("")->required();
  cmd->add_option("--size", options->size, "the scenario's size, in its unit (below)")
      ->type_name("N")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--threads", options->threads,
                  "CPU threads (and processes) on each side; default: the cores")
      ->type_name("N")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--repeat", options->repeat, "runs of each side, alternating")
      ->type_name("N")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--json", options->json_file, "write every raw figure to FILE")->type_name("FILE");
  cmd->add_option("--plot", options->plot_file, "draw the results as a PNG (needs python3-matplotlib)")
      ->type_name("FILE.png");
  cmd->add_option("--data", options->data,
                  "inputs instead of generated data: scan: TFRecord files; pipeline: a folder of "
                  "`sluice convert fashion-mnist` output")
      ->type_name("PATH");
  cmd->add_option("--work-dir", options->work_dir,
                  "where generated data is written (a temporary folder in it)")
      ->type_name("DIR");
  cmd->add_option("--baselines", options->baselines_dir, "the folder of the baseline scripts")
      ->type_name("DIR");
  cmd->add_option("--python", options->python, "the Python with python3-torch (Debian's)")
      ->type_name("PATH")
      ->capture_default_str();
  cmd->footer(absl::StrCat(
      "scenarios:\n", ScenarioList(),
      "Each side runs --repeat times, alternating; the table shows median, min and max, and the ratio of\n"
      "the medians (above 1: sluice is faster). Missing baseline tools: ",
      kInstallBenchDeps,
      ".\n"
      "exit status: 0 ran; 1 a scenario failed or a baseline tool is missing; 2 bad usage."));
  return cmd;
}

int RunBench(const BenchOptions& options, std::ostream& out, std::ostream& err) {
  std::vector<const Scenario*> to_run;
  if (options.scenario == "all") {
    if (options.size.has_value() || !options.data.empty()) {
      err << "sluice bench: --size and --data cannot be used with all (each scenario has its own)\n";
      return 2;
    }
    for (const Scenario& s : Scenarios()) to_run.push_back(&s);
  } else {
    const Scenario* s = FindScenario(options.scenario);
    if (s == nullptr) {
      err << "sluice bench: unknown scenario \"" << options.scenario << "\"; scenarios:\n" << ScenarioList();
      return 2;
    }
    if (!s->unavailable.empty()) {
      err << "sluice bench " << s->name << ": not available yet: " << s->unavailable << "\n";
      return 2;
    }
    if (options.size.has_value() && s->size_unit.empty()) {
      err << "sluice bench " << s->name << ": takes no --size\n";
      return 2;
    }
    to_run.push_back(s);
  }

  BenchConfig config;
  config.size = options.size;
  config.threads = options.threads;
  config.repeat = options.repeat;
  config.data = options.data;
  config.work_dir = options.work_dir;
  config.baselines_dir = options.baselines_dir;
  config.python = options.python;
  if (options.path.has_value()) {
    config.path = *options.path;
  } else if (const char* path = std::getenv("PATH"); path != nullptr) {
    config.path = path;
  }
  config.progress = &err;
  config.progress_in_place = &err == &std::cerr && ::isatty(STDERR_FILENO) == 1;

  out << "sluice bench: " << MachineLine() << "\n";
  std::vector<ScenarioResult> results;
  int status = 0;
  for (const Scenario* s : to_run) {
    if (!s->unavailable.empty()) {
      out << s->name << ": skipped: " << s->unavailable << "\n";
      continue;
    }
    absl::StatusOr<ScenarioResult> result = s->run(config);
    EndProgress(config);
    if (!result.ok()) {
      const bool missing = result.status().code() == absl::StatusCode::kFailedPrecondition;
      err << "sluice bench " << s->name << ": " << (missing ? "skipped: " : "failed: ")
          << result.status().message() << "\n";
      status = 1;
      continue;
    }
    PrintTable(*result, out);
    out << std::flush;
    results.push_back(std::move(*result));
  }
  if (results.empty()) return status == 0 ? 1 : status;

  const std::string json = BenchJson(results);
  std::string json_file = options.json_file;
  std::optional<ScopedTempDir> plot_dir;
  if (json_file.empty() && !options.plot_file.empty()) {
    absl::StatusOr<ScopedTempDir> dir = ScopedTempDir::Create(options.work_dir);
    if (!dir.ok()) {
      err << "sluice bench: " << dir.status().message() << "\n";
      return 1;
    }
    plot_dir.emplace(std::move(*dir));
    json_file = plot_dir->path() + "/bench.json";
  }
  if (!json_file.empty()) {
    std::ofstream file(json_file, std::ios::binary | std::ios::trunc);
    file << json;
    file.close();
    if (!file) {
      err << "sluice bench: cannot write " << json_file << "\n";
      return 1;
    }
    if (!options.json_file.empty()) out << "wrote " << json_file << "\n";
  }
  if (!options.plot_file.empty()) {
    if (absl::Status plotted = Plot(config, json_file, options.plot_file); !plotted.ok()) {
      err << "sluice bench: --plot: " << plotted.message() << "\n";
      return 1;
    }
    out << "wrote " << options.plot_file << "\n";
  }
  return status;
}

}  // namespace sluice::tools
