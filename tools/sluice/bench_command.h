// `sluice bench SCENARIO|all [--size N] [--threads N] [--repeat N] [--json FILE] [--plot FILE.png]
//                            [--data PATH...] [--work-dir DIR] [--baselines DIR] [--python PATH]`
//
// Runs a scenario (bench_scenarios.h; docs/bench.md), sluice and its baselines alternately `repeat`
// times on the same data, and prints a table of medians, min..max and ratios (bench_report.h); --json
// writes every raw sample, --plot draws a PNG with Debian's python3-matplotlib. `all` runs every
// available scenario at its default size.
//
// Exit status: 0 every scenario ran; 1 a scenario failed, or could not run because a baseline tool is
// missing (the message names it and how to install it: no figure is printed without its baseline), or
// the JSON or plot could not be written; 2 bad usage (unknown scenario, --size or --data with `all`, a
// scenario that is not available yet).
#ifndef SLUICE_TOOLS_SLUICE_BENCH_COMMAND_H_
#define SLUICE_TOOLS_SLUICE_BENCH_COMMAND_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace sluice::tools {

struct BenchOptions {
  std::string scenario;
  std::optional<int64_t> size;
  int threads = 0;
  int repeat = 5;
  std::string json_file;
  std::string plot_file;
  std::vector<std::string> data;
  std::string work_dir;
  std::string baselines_dir;
  std::string python = "/usr/bin/python3";
  std::optional<std::string> path;  // PATH for the baseline tools; unset: the environment's
};

// Registers the `bench` subcommand on `app`, filling `options` when parsed.
CLI::App* AddBench(CLI::App& app, BenchOptions* options);

int RunBench(const BenchOptions& options, std::ostream& out, std::ostream& err);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_SLUICE_BENCH_COMMAND_H_
