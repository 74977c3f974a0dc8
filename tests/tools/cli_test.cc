#include "tools/sluice/cli.h"

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/version.h"
#include "tests/test_util.h"
#include "tests/tools/cli_run.h"

namespace sluice::tools {
namespace cli_test_file {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

TEST(CliTest, VersionIsTheProjectVersion) {
  CliRun run = RunCli({"--version"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.out, "sluice 0.1.0\n");
  EXPECT_EQ(run.err, "");
  EXPECT_EQ(std::string_view(SluiceVersion()), SLUICE_VERSION_STRING);
  EXPECT_EQ(VersionLine(), std::string("sluice ") + SLUICE_VERSION_STRING);
}

TEST(CliTest, NoCommandIsUsageOnStderr) {
  CliRun run = RunCli({});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.out, "");
  EXPECT_THAT(run.err, HasSubstr("Usage: sluice"));
  EXPECT_THAT(run.err, HasSubstr("inspect"));
}

TEST(CliTest, HelpListsCommandsOnStdout) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"help"}, {"--help"}, {"-h"}}) {
    CliRun run = RunCli(args);
    EXPECT_EQ(run.exit_code, 0) << args[0];
    EXPECT_THAT(run.out, HasSubstr("Usage: sluice [OPTIONS] [SUBCOMMAND]")) << args[0];
    EXPECT_THAT(run.out, AllOf(HasSubstr("inspect"), HasSubstr("convert"), HasSubstr("help")));
    EXPECT_EQ(run.err, "");
  }
}

TEST(CliTest, HelpOfACommandMatchesItsDashDashHelp) {
  for (const char* command : {"inspect", "convert"}) {
    CliRun help = RunCli({"help", command});
    CliRun dash = RunCli({command, "--help"});
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_EQ(dash.exit_code, 0);
    EXPECT_THAT(help.out, HasSubstr(std::string("Usage: sluice ") + command));
    EXPECT_EQ(help.out, dash.out);
    EXPECT_EQ(dash.err, "");
  }
  EXPECT_THAT(RunCli({"help", "inspect"}).out,
              AllOf(HasSubstr("--json"), HasSubstr("--records"), HasSubstr("--dump")));
  EXPECT_THAT(RunCli({"help", "convert"}).out, AllOf(HasSubstr("--test-shards"), HasSubstr("--out")));
  // --help wins over everything else on the line, even a missing required FILE.
  EXPECT_EQ(RunCli({"inspect", "--json", "--help"}).exit_code, 0);
  EXPECT_EQ(RunCli({"help", "--help"}).exit_code, 0);
}

TEST(CliTest, HelpOfAnUnknownCommandExitsTwo) {
  CliRun run = RunCli({"help", "bogus"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.out, "");
  EXPECT_THAT(run.err, HasSubstr("unknown command \"bogus\""));
  EXPECT_EQ(RunCli({"help", "inspect", "convert"}).exit_code, 2);
}

TEST(CliTest, UnknownCommandOrFlagExitsTwoWithAMessageOnStderr) {
  const std::vector<std::vector<std::string>> bad = {
      {"bogus"},
      {"--bogus"},
      {"inspect", "--bogus", "x"},
      {"inspect", "--data_dir=x", "x"},  // snake_case is not an alias
      {"inspect", "--compression"},      // value missing
      {"inspect", "--compression", "brotli", "x"},
      {"inspect"},  // FILE missing
      {"convert", "fashion-mnist", "--out", "/tmp/x", "--bogus"},
  };
  for (const std::vector<std::string>& args : bad) {
    CliRun run = RunCli(args);
    EXPECT_EQ(run.exit_code, 2) << testing::PrintToString(args);
    EXPECT_EQ(run.out, "") << testing::PrintToString(args);
    EXPECT_THAT(run.err, StartsWith("sluice")) << testing::PrintToString(args);
    EXPECT_THAT(run.err, Not(HasSubstr("\n\n\n")));
  }
  EXPECT_THAT(RunCli({"bogus"}).err, HasSubstr("unknown command \"bogus\""));
  EXPECT_THAT(RunCli({"inspect", "--bogus", "x"}).err, HasSubstr("--bogus"));
}

TEST(CliTest, FlagValuesTakeBothForms) {
  const std::string gz = testing_util::SharedTFRecord("derived/torchdata_example.tfrecord.gz");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"inspect", "--compression", "gzip", gz},
        {"inspect", "--compression=GZIP", gz},
        {"inspect", "--compression=Gzip", gz}}) {
    CliRun run = RunCli(args);
    EXPECT_EQ(run.exit_code, 0) << testing::PrintToString(args) << run.err;
    // Given, not detected.
    EXPECT_THAT(run.out, HasSubstr("compression: GZIP\n")) << testing::PrintToString(args);
  }
  // Read as uncompressed, a gzip file is corrupt: the flag is obeyed, not second-guessed.
  EXPECT_EQ(RunCli({"inspect", "--compression=NONE", gz}).exit_code, 1);
  EXPECT_EQ(RunCli({"inspect", "--compression=Auto", gz}).exit_code, 0);
}

}  // namespace
}  // namespace cli_test_file
}  // namespace sluice::tools
