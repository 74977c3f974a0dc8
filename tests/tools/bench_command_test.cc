// `sluice bench`: usage errors, a missing baseline tool, and tiny real runs that produce sane JSON.
// No timing is asserted: only that every side ran and reported positive figures.
#include "tools/sluice/bench_command.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/test_util.h"
#include "tests/tools/cli_run.h"
#include "tools/sluice/bench_process.h"
#include "tools/sluice/cli.h"

namespace sluice::tools {
namespace bench_command_test_file {
namespace {

CliRun Bench(const BenchOptions& options) {
  std::ostringstream out, err;
  CliRun run;
  run.exit_code = RunBench(options, out, err);
  run.out = out.str();
  run.err = err.str();
  return run;
}

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// An empty folder for generated data; the scenario must leave it empty.
std::string WorkDir(const std::string& name) {
  const std::string dir = testing_util::TempPath(name);
  std::filesystem::create_directories(dir);
  return dir;
}

bool IsEmptyDir(const std::string& dir) { return std::filesystem::is_empty(dir); }

TEST(BenchCommandTest, UsageErrorsExitTwoWithTheReason) {
  CliRun run = RunCli({"bench", "nope"});
  EXPECT_EQ(run.exit_code, kUsageError);
  EXPECT_TRUE(Has(run.err, "unknown scenario \"nope\"")) << run.err;
  EXPECT_TRUE(Has(run.err, "scan")) << run.err;

  run = RunCli({"bench"});
  EXPECT_EQ(run.exit_code, kUsageError);
  EXPECT_TRUE(Has(run.err, "SCENARIO")) << run.err;

  run = RunCli({"bench", "all", "--size", "10"});
  EXPECT_EQ(run.exit_code, kUsageError);
  EXPECT_TRUE(Has(run.err, "--size and --data cannot be used with all")) << run.err;
  EXPECT_EQ(RunCli({"bench", "all", "--data", "x.tfrecord"}).exit_code, kUsageError);

  run = RunCli({"bench", "scan", "--repeat", "0"});
  EXPECT_EQ(run.exit_code, kUsageError);
  EXPECT_TRUE(Has(run.err, "--repeat")) << run.err;

  run = RunCli({"bench", "scan", "--size", "-3"});
  EXPECT_EQ(run.exit_code, kUsageError);

  run = RunCli({"help", "bench"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_TRUE(Has(run.out, "pipeline")) << run.out;
}

TEST(BenchCommandTest, AMissingBaselineToolIsNamedWithItsInstallAndNoFigureIsPrinted) {
  BenchOptions options;
  options.scenario = "scan";
  options.size = 1;
  options.repeat = 1;
  options.path = "/nonexistent-bin";
  options.work_dir = WorkDir("bench_nofio");
  CliRun run = Bench(options);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(Has(run.err, "fio not found on PATH")) << run.err;
  EXPECT_TRUE(Has(run.err, "scripts/install-bench-deps")) << run.err;
  EXPECT_FALSE(Has(run.out, "GB/s")) << run.out;

  options.scenario = "pipeline";
  options.python = "/nonexistent-bin/python3";
  run = Bench(options);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(Has(run.err, "/nonexistent-bin/python3 not found")) << run.err;
  EXPECT_FALSE(Has(run.out, "samples/s")) << run.out;
  EXPECT_TRUE(IsEmptyDir(options.work_dir));
}

TEST(BenchCommandTest, FindToolSearchesEachPathEntry) {
  absl::StatusOr<std::string> sh = FindTool("sh", "/nonexistent:/bin:/usr/bin", "");
  ASSERT_TRUE(sh.ok()) << sh.status();
  EXPECT_TRUE(sh->ends_with("/sh")) << *sh;
  EXPECT_EQ(FindTool("sh", "", "apt-get install dash").status().code(), absl::StatusCode::kNotFound);
}

TEST(BenchCommandTest, RunProcessReportsOutputExitAndCpu) {
  absl::StatusOr<ProcessResult> r = RunProcess({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_GT(r->peak_rss_bytes, 0u);
  r = RunProcess({"/nonexistent-bin/tool"});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "cannot run /nonexistent-bin/tool")) << r.status();
  r = RunProcess({"/bin/sh", "-c", "sleep 5"}, {.timeout_seconds = 0.2, .sample_ms = 20});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
}

// One scenario in the document. Every case has sluice first and at least one baseline, its sides among
// `sides` (together they show every one), each with `repeat` positive samples, and a ratio per baseline.
// Returns the scenario's object (null when the document is unusable).
nlohmann::json ExpectSaneJson(const std::string& text, const std::vector<std::string>& sides, size_t repeat) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(doc.is_discarded()) << text;
  if (doc.is_discarded() || doc["scenarios"].size() != 1) return nullptr;
  const nlohmann::json& scenario = doc["scenarios"][0];
  EXPECT_FALSE(scenario["cases"].empty()) << text;
  std::set<std::string> seen;
  for (const nlohmann::json& c : scenario["cases"]) {
    EXPECT_GE(c["sides"].size(), 2u) << c.dump();
    for (size_t i = 0; i < c["sides"].size(); ++i) {
      const nlohmann::json& side = c["sides"][i];
      const std::string name = side["name"];
      seen.insert(name);
      if (i == 0) {
        EXPECT_EQ(name, "sluice") << c.dump();
      }
      EXPECT_THAT(sides, ::testing::Contains(name)) << c.dump();
      EXPECT_EQ(side["samples"].size(), repeat) << c.dump();
      for (const nlohmann::json& sample : side["samples"]) {
        EXPECT_TRUE(sample.is_number() && sample.get<double>() > 0) << c.dump();
      }
      if (i > 0) {
        EXPECT_TRUE(c["ratios"][name].is_number()) << c.dump();
      }
    }
  }
  EXPECT_EQ(seen, std::set<std::string>(sides.begin(), sides.end())) << text;
  return scenario;
}

std::vector<std::string> CaseNames(const nlohmann::json& scenario) {
  std::vector<std::string> names;
  if (scenario.is_null()) return names;
  for (const nlohmann::json& c : scenario["cases"]) names.push_back(c["name"]);
  return names;
}

TEST(BenchCommandTest, TinyScanWritesSaneJsonAndCleansUp) {
  BenchOptions options;
  options.scenario = "scan";
  options.size = 1;
  options.repeat = 1;
  options.work_dir = WorkDir("bench_scan");
  options.json_file = testing_util::TempPath("bench_scan.json");
  CliRun run = Bench(options);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(Has(run.out, "rec100 page cache")) << run.out;
  EXPECT_TRUE(Has(run.out, "rec100k page cache")) << run.out;
  const std::string json = testing_util::ReadWholeFile(options.json_file);
  const nlohmann::json scenario = ExpectSaneJson(json, {"sluice", "fio", "dd"}, 1);
  std::vector<std::string> cases = CaseNames(scenario);
  ASSERT_GE(cases.size(), 3u) << json;
  cases.resize(3);  // the O_DIRECT case depends on the filesystem
  EXPECT_THAT(cases, ::testing::ElementsAre("rec100 page cache", "rec1k page cache", "rec100k page cache"));
  EXPECT_TRUE(IsEmptyDir(options.work_dir));
}

// Tests do not replace operator new; this stands in for the `sluice` binary's counter (a count that grows by
// 1,000 per call), so that the sluice sides must report what it says and PyTorch's must not.
uint64_t FakeAllocationCount() {
  static std::atomic<uint64_t> calls{0};
  return calls.fetch_add(1000) + 1000;
}

TEST(BenchCommandTest, TinyPipelineAgainstPyTorchWhereItIsInstalled) {
  absl::StatusOr<ProcessResult> probe =
      RunProcess({"/usr/bin/python3", "-c", "import torch, numpy, crc32c, google.protobuf"});
  if (!probe.ok() || probe->exit_code != 0) {
    GTEST_SKIP() << "python3-torch, python3-protobuf or python3-crc32c missing (scripts/install-bench-deps)";
  }
  BenchOptions options;
  options.scenario = "pipeline";
  options.size = 600;
  options.repeat = 1;
  options.threads = 1;
  options.work_dir = WorkDir("bench_pipeline");
  options.json_file = testing_util::TempPath("bench_pipeline.json");
  SetAllocationCounter(&FakeAllocationCount);
  CliRun run = Bench(options);
  SetAllocationCounter(nullptr);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string json = testing_util::ReadWholeFile(options.json_file);
  const nlohmann::json scenario = ExpectSaneJson(json, {"sluice", "sequential", "pytorch"}, 1);
  ASSERT_FALSE(scenario.is_null());
  EXPECT_THAT(CaseNames(scenario), ::testing::ElementsAre("quick start, 1 thread", "fixed-size, 1 thread"));
  for (const nlohmann::json& c : scenario["cases"]) {
    ASSERT_EQ(c["sides"].size(), 3u) << c.dump();
    for (const nlohmann::json& side : c["sides"]) {
      EXPECT_GT(side["extra"]["peak_rss_MiB"]["median"].get<double>(), 0) << side.dump();
      EXPECT_GT(side["extra"]["cpu_us/sample"]["median"].get<double>(), 0) << side.dump();
      if (side["name"] == "pytorch") {
        EXPECT_FALSE(side["extra"].contains("allocs/sample")) << side.dump();
      } else {
        // Two calls of the fake counter, 1,000 apart, around 600 samples.
        EXPECT_DOUBLE_EQ(side["extra"]["allocs/sample"]["median"].get<double>(), 1000.0 / 600) << side.dump();
      }
    }
  }
  EXPECT_TRUE(Has(run.out, "600 examples per run")) << run.out;
  EXPECT_TRUE(IsEmptyDir(options.work_dir));
}

TEST(BenchCommandTest, AllocationsAreCountedOnlyWhereTheProgramCountsThem) {
  EXPECT_EQ(SelfAllocationCount(), std::nullopt);
  SetAllocationCounter(&FakeAllocationCount);
  const std::optional<uint64_t> first = SelfAllocationCount();
  const std::optional<uint64_t> second = SelfAllocationCount();
  SetAllocationCounter(nullptr);
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_EQ(*second - *first, 1000u);
  EXPECT_EQ(SelfAllocationCount(), std::nullopt);
}

struct TinyRun {
  std::string scenario;
  int64_t size;
  std::vector<std::string> sides;
  std::vector<std::string> cases;
};

class TinyInProcessScenarioTest : public ::testing::TestWithParam<TinyRun> {};

TEST_P(TinyInProcessScenarioTest, WritesSaneJsonWithEveryCase) {
  const TinyRun& tiny = GetParam();
  BenchOptions options;
  options.scenario = tiny.scenario;
  options.size = tiny.size;
  options.repeat = 2;
  options.threads = 2;
  options.work_dir = WorkDir("bench_tiny_" + tiny.scenario);
  options.json_file = testing_util::TempPath("bench_" + tiny.scenario + ".json");
  CliRun run = Bench(options);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string json = testing_util::ReadWholeFile(options.json_file);
  const std::vector<std::string> cases = CaseNames(ExpectSaneJson(json, tiny.sides, 2));
  for (const std::string& name : tiny.cases) EXPECT_THAT(cases, ::testing::Contains(name)) << json;
  EXPECT_TRUE(IsEmptyDir(options.work_dir));
}

INSTANTIATE_TEST_SUITE_P(
    Scenarios, TinyInProcessScenarioTest,
    ::testing::Values(
        TinyRun{"overhead", 10000, {"sluice", "hand loop"}, {"Range->Map", "Range->Map->Filter->Batch"}},
        TinyRun{"parallel-map",
                40,
                {"sluice", "hand loop", "std::thread"},
                {"sequential Map", "det, 1 thread", "nondet, 2 threads"}},
        TinyRun{"fanout", 200, {"sluice", "mutex+cv"}, {"2 replicas", "4 replicas", "8 replicas"}},
        // iperf3 comes with scripts/install-deps.
        TinyRun{"service", 2, {"sluice", "iperf3", "local"}, {"1 MiB elements", "100 B elements"}},
        // Generates its TFRecord files into the work dir; each run checks the element after the cut.
        TinyRun{"checkpoint",
                1000,
                {"sluice", "rebuild+skip"},
                {"file pipeline, full", "file pipeline, compact", "Shuffle(10k), full",
                 "Shuffle(10k), compact", "parallel Map(64), full", "parallel Map(64), compact"}}),
    // Named by scenario: the default name prints the parameter's bytes, pointers included, which differ
    // between CTest's discovery run and the test's own run.
    [](const ::testing::TestParamInfo<TinyRun>& info) {
      std::string name = info.param.scenario;
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

TEST(BenchCommandTest, PlotWritesAPngWhereMatplotlibIsInstalled) {
  absl::StatusOr<ProcessResult> probe = RunProcess({"/usr/bin/python3", "-c", "import matplotlib"});
  if (!probe.ok() || probe->exit_code != 0) {
    GTEST_SKIP() << "python3-matplotlib missing (scripts/install-bench-deps)";
  }
  BenchOptions options;
  options.scenario = "fanout";
  options.size = 50;
  options.repeat = 1;
  options.plot_file = testing_util::TempPath("bench_plot.png");
  CliRun run = Bench(options);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(testing_util::ReadWholeFile(options.plot_file).starts_with("\x89PNG\r\n")) << run.err;

  options.python = "/nonexistent-bin/python3";
  run = Bench(options);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(Has(run.err, "--plot: /nonexistent-bin/python3 not found")) << run.err;
}

}  // namespace
}  // namespace bench_command_test_file
}  // namespace sluice::tools
