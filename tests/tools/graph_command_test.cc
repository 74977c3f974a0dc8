// `sluice graph`: text and fingerprint of a serialized pipeline; two processes agree on the fingerprint.
#include "tools/sluice/graph_command.h"

#include <sys/wait.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/xxhash64.h"
#include "gtest/gtest.h"
#include "sluice/ops/graph.h"
#include "tests/test_util.h"
#include "tests/tools/cli_run.h"
#include "tools/sluice/cli.h"

namespace sluice::tools {
namespace graph_command_test_file {
namespace {

template <class T>
std::string WriteGraph(const std::string& name, const Dataset<T>& ds) {
  absl::StatusOr<std::string> bytes = Serialize(ds);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  const std::string path = testing_util::TempPath(name);
  testing_util::WriteFile(path, bytes.value_or(""));
  return path;
}

TEST(GraphCommandTest, PrintsFingerprintAndOneLinePerNode) {
  const std::string path = WriteGraph("graph_cmd", Range(0, 10, 1).Shuffle(4, 7).Batch(2));
  CliRun run = RunCli({"graph", path});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(run.out.starts_with("fingerprint ")) << run.out;
  EXPECT_NE(run.out.find("Batch -> Tensor  batch_size=2"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("/0 "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("Shuffle -> int64  buffer_size=4"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("/0/0"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("Range -> int64  start=0, stop=10, step=1"), std::string::npos) << run.out;
}

TEST(GraphCommandTest, BadFilesAreErrorsWithTheFileNamed) {
  const std::string junk = testing_util::TempPath("graph_junk");
  testing_util::WriteFile(junk, "\xff\xff\xff");
  CliRun run = RunCli({"graph", junk});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find(junk), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("DATA_LOSS"), std::string::npos) << run.err;
  run = RunCli({"graph", testing_util::TempPath("graph_missing")});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("No such file"), std::string::npos) << run.err;
  EXPECT_EQ(RunCli({"graph"}).exit_code, kUsageError);
}

TEST(GraphCommandTest, XxHash64MatchesTheReferenceVectors) {
  // Values of the reference implementation (libxxhash 0.8.1, XXH64 with seed 0).
  EXPECT_EQ(XxHash64(""), 0xef46db3751d8e999ULL);
  EXPECT_EQ(XxHash64("a"), 0xd24ec4f1a98c6e5bULL);
  EXPECT_EQ(XxHash64("abc"), 0x44bc2cf5ad770999ULL);
  EXPECT_EQ(XxHash64("sluice"), 0x4251fdf4a288237cULL);
  std::string long_input;
  for (int i = 0; i < 3; ++i) {
    for (int b = 0; b < 256; ++b) long_input.push_back(static_cast<char>(b));
  }
  EXPECT_EQ(XxHash64(long_input), 0x8e03c838c596036fULL);
}

#ifdef SLUICE_CLI_PATH
std::string RunBinary(const std::string& args) {
  std::string out;
  FILE* pipe = ::popen(absl::StrCat("'", SLUICE_CLI_PATH, "' ", args, " 2>&1").c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  ::pclose(pipe);
  return out;
}

TEST(GraphCommandTest, TwoProcessesPrintTheSameFingerprintWhichFollowsParams) {
  const std::string a = WriteGraph("graph_fp_a", Range(0, 100, 3).Shuffle(10, 1).Take(5));
  const std::string b = WriteGraph("graph_fp_b", Range(0, 100, 3).Shuffle(10, 2).Take(5));
  const std::string first = RunBinary(absl::StrCat("graph '", a, "'"));
  const std::string second = RunBinary(absl::StrCat("graph '", a, "'"));
  ASSERT_TRUE(first.starts_with("fingerprint ")) << first;
  EXPECT_EQ(first.substr(0, first.find('\n')), second.substr(0, second.find('\n')));
  const std::string other = RunBinary(absl::StrCat("graph '", b, "'"));
  EXPECT_NE(first.substr(0, first.find('\n')), other.substr(0, other.find('\n')));
  // And it is the fingerprint this process computes.
  absl::StatusOr<GraphNode> graph = DescribeGraph(*Range(0, 100, 3).Shuffle(10, 1).Take(5).node());
  ASSERT_TRUE(graph.ok());
  EXPECT_EQ(first.substr(0, first.find('\n')), absl::StrCat("fingerprint ", FingerprintHex(Fingerprint(*graph))));
}
#endif

}  // namespace
}  // namespace graph_command_test_file
}  // namespace sluice::tools
