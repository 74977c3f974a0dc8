#include "tools/sluice/inspect.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace sluice::tools {
namespace {

std::string SharedFile(const std::string& relative) { return testing_util::SharedTFRecord(relative); }

struct InspectRun {
  int exit_code;
  std::string out;
};

InspectRun Inspect(std::vector<std::string> args) {
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  int code = RunInspect(args);
  InspectRun run{code, testing::internal::GetCapturedStdout()};
  testing::internal::GetCapturedStderr();
  return run;
}

TEST(InspectTest, DescribesExampleFileAndItsCompressedCopies) {
  for (const char* file : {"torchdata_example.tfrecord", "derived/torchdata_example.tfrecord.gz",
                           "derived/torchdata_example.tfrecord.zlib"}) {
    InspectRun run = Inspect({SharedFile(file)});
    EXPECT_EQ(run.exit_code, 0) << run.out;
    EXPECT_NE(run.out.find("records: 4"), std::string::npos) << run.out;
    EXPECT_NE(run.out.find("x_float: float_list, 10 values"), std::string::npos) << run.out;
    EXPECT_NE(run.out.find("x_byte: bytes_list, 1 value [\"test str\"]"), std::string::npos) << run.out;
    EXPECT_NE(run.out.find("crc: ok"), std::string::npos) << run.out;
  }
  EXPECT_NE(Inspect({SharedFile("derived/torchdata_example.tfrecord.gz")}).out.find("compression: GZIP (detected)"),
            std::string::npos);
  EXPECT_NE(Inspect({SharedFile("derived/torchdata_example.tfrecord.zlib")}).out.find("compression: ZLIB (detected)"),
            std::string::npos);
}

TEST(InspectTest, AllDecodesEveryRecordOfAGzipShard) {
  InspectRun run = Inspect({"--all", SharedFile("tfx_penguin/Split-eval/data_tfrecord-00000-of-00001.gz")});
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("records: 100"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("decoded: 100 of 100"), std::string::npos) << run.out;
}

TEST(InspectTest, CorruptFilesExitOneWithFileAndOffset) {
  InspectRun truncated = Inspect({SharedFile("derived/beam_foo_bar_truncated.tfrecord")});
  EXPECT_EQ(truncated.exit_code, 1);
  EXPECT_NE(truncated.out.find("truncated record at offset 19"), std::string::npos) << truncated.out;
  EXPECT_NE(truncated.out.find("beam_foo_bar_truncated.tfrecord"), std::string::npos);
  InspectRun corrupt = Inspect({SharedFile("derived/beam_foo_bar_corrupt_data.tfrecord")});
  EXPECT_EQ(corrupt.exit_code, 1);
  EXPECT_NE(corrupt.out.find("corrupted record at offset 0: data CRC mismatch"), std::string::npos) << corrupt.out;
  InspectRun missing = Inspect({SharedFile("no_such_file.tfrecord")});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("NOT_FOUND"), std::string::npos) << missing.out;
}

TEST(InspectTest, UsageErrorsAndHelp) {
  EXPECT_EQ(Inspect({}).exit_code, 2);
  EXPECT_EQ(Inspect({"--compression=lz4", "x"}).exit_code, 2);
  EXPECT_EQ(Inspect({"--bogus", "x"}).exit_code, 2);
  InspectRun help = Inspect({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("usage: sluice inspect"), std::string::npos);
}

}  // namespace
}  // namespace sluice::tools
