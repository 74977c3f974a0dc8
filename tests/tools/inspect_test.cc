#include "tools/sluice/inspect.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/tfrecord_format.h"
#include "io/zlib_stream.h"
#include "nlohmann/json.hpp"
#include "sluice/io/example.h"
#include "tests/test_util.h"
#include "tools/sluice/cli.h"

namespace sluice::tools {
namespace inspect_test_file {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

std::string SharedFile(const std::string& relative) { return testing_util::SharedTFRecord(relative); }

struct InspectRun {
  int exit_code;
  std::string out;
  std::string err;
};

// `sluice inspect ARGS...` as the binary runs it; "-" reads `stdin_fd`.
InspectRun Inspect(std::vector<std::string> args, int stdin_fd = -1) {
  args.insert(args.begin(), "inspect");
  std::ostringstream out, err;
  const int code = RunSluice(args, out, err, stdin_fd);
  return {code, out.str(), err.str()};
}

InspectRun InspectWith(const InspectOptions& options) {
  std::ostringstream out, err;
  const int code = RunInspect(options, out, err);
  return {code, out.str(), err.str()};
}

std::vector<Json> JsonLines(const std::string& text) {
  std::vector<Json> lines;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    lines.push_back(Json::parse(std::string(line)));
  }
  return lines;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

std::string Gzip(const std::string& bytes) {
  absl::StatusOr<io::Deflater> deflater = io::Deflater::Create(io::ZlibFormat::kGzip);
  EXPECT_TRUE(deflater.ok()) << deflater.status();
  std::string out;
  EXPECT_TRUE(deflater->Compress(io::AsBytes(bytes), &out).ok());
  EXPECT_TRUE(deflater->Finish(&out).ok());
  return out;
}

// A pipe whose write end is fed `bytes` by a thread (then closed), as a shell pipeline feeds stdin.
class FedPipe {
 public:
  explicit FedPipe(std::string bytes) : bytes_(std::move(bytes)) {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    read_fd_ = fds[0];
    writer_ = std::thread([this, fd = fds[1]] {
      size_t done = 0;
      while (done < bytes_.size()) {
        const ssize_t n = ::write(fd, bytes_.data() + done, bytes_.size() - done);
        if (n <= 0) break;  // the reader closed early (EPIPE is ignored below)
        done += static_cast<size_t>(n);
      }
      ::close(fd);
    });
  }
  ~FedPipe() {
    ::close(read_fd_);
    writer_.join();
  }
  int fd() const { return read_fd_; }

 private:
  std::string bytes_;
  int read_fd_ = -1;
  std::thread writer_;
};

class InspectTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { std::signal(SIGPIPE, SIG_IGN); }
};

TEST_F(InspectTest, DescribesExampleFileAndItsCompressedCopies) {
  for (const char* file : {"torchdata_example.tfrecord", "derived/torchdata_example.tfrecord.gz",
                           "derived/torchdata_example.tfrecord.zlib"}) {
    InspectRun run = Inspect({SharedFile(file)});
    EXPECT_EQ(run.exit_code, 0) << run.out;
    EXPECT_THAT(run.out, HasSubstr("records: 4\n"));
    EXPECT_THAT(run.out, HasSubstr("first record: tf.train.Example, 3 features"));
    EXPECT_THAT(run.out, HasSubstr("x_float: float_list, 10 values [0, 1, 2, 3, ... (6 more)]"));
    EXPECT_THAT(run.out, HasSubstr("x_byte: bytes_list, 1 value [\"test str\"]"));
    EXPECT_THAT(run.out, HasSubstr("crc: ok"));
    EXPECT_EQ(run.err, "");
  }
  EXPECT_THAT(Inspect({SharedFile("derived/torchdata_example.tfrecord.gz")}).out,
              HasSubstr("compression: GZIP (detected)"));
  EXPECT_THAT(Inspect({SharedFile("derived/torchdata_example.tfrecord.zlib")}).out,
              HasSubstr("compression: ZLIB (detected)"));
}

TEST_F(InspectTest, SequenceExampleIsNotShownAsTheExampleOfItsContext) {
  InspectRun run = Inspect({SharedFile("torchdata_sequence_example.tfrecord")});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_THAT(run.out,
              HasSubstr("first record: tf.train.SequenceExample, 3 context features, 3 feature lists"));
  EXPECT_THAT(run.out, HasSubstr("context x_int: int64_list, 10 values"));
  EXPECT_THAT(run.out, HasSubstr("list x_float_seq: 3 steps, 30 values"));
}

TEST_F(InspectTest, AllDecodesEveryRecordOfAGzipShard) {
  InspectRun run = Inspect({"--all", SharedFile("tfx_penguin/Split-eval/data_tfrecord-00000-of-00001.gz")});
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_THAT(run.out, HasSubstr("records: 100\n"));
  EXPECT_THAT(run.out, HasSubstr("decoded: 100 of 100"));
}

TEST_F(InspectTest, CorruptFilesExitOneAndPrintEachErrorOnce) {
  InspectRun truncated = Inspect({SharedFile("derived/beam_foo_bar_truncated.tfrecord")});
  EXPECT_EQ(truncated.exit_code, 1);
  EXPECT_EQ(Count(truncated.out, "truncated record at offset 19"), 1u) << truncated.out;
  EXPECT_THAT(truncated.out, HasSubstr("beam_foo_bar_truncated.tfrecord"));
  // Labelled by cause (issue 13, item 8): the CRCs of what was read are fine, the file is truncated.
  EXPECT_THAT(truncated.out, HasSubstr("crc: ok\n  errors: 1 (1 truncated)\n"));
  EXPECT_EQ(truncated.err, "");
  InspectRun corrupt = Inspect({SharedFile("derived/beam_foo_bar_corrupt_data.tfrecord")});
  EXPECT_EQ(corrupt.exit_code, 1);
  EXPECT_EQ(Count(corrupt.out, "corrupted record at offset 0: data CRC mismatch"), 1u) << corrupt.out;
  EXPECT_THAT(corrupt.out, HasSubstr("crc: FAILED (1 bad record)\n  errors: 1 (1 bad CRC)\n"));
  EXPECT_EQ(corrupt.err, "");
  InspectRun missing = Inspect({SharedFile("no_such_file.tfrecord")});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.out, HasSubstr("NOT_FOUND"));
  // One bad file makes the run fail even when the others are clean.
  EXPECT_EQ(Inspect({SharedFile("beam_foo.tfrecord"), SharedFile("no_such_file.tfrecord")}).exit_code, 1);
}

// Issue 13, item 8: every error used to be summed up as "crc: FAILED". Each cause has its own words (text)
// and key (JSON), and "crc" says FAILED / "bad" only when a CRC did not match.
TEST_F(InspectTest, ErrorsAreLabelledByCause) {
  // A GZIP stream cut after its first half of records: records, then a truncated stream.
  std::string records;
  for (int i = 0; i < 2000; ++i) io::AppendTFRecord(absl::StrCat("record ", i), &records);
  const std::string gz = Gzip(records);
  const std::string cut = testing_util::TempPath("inspect_cut.tfrecord.gz");
  testing_util::WriteFile(cut, gz.substr(0, gz.size() / 2));
  // The gzip magic, then bytes that are no gzip header: corrupt data.
  const std::string corrupt = testing_util::TempPath("inspect_corrupt.tfrecord.gz");
  testing_util::WriteFile(corrupt, "\x1f\x8b\x63" "\x01 this is not deflate data");
  // A symbolic link loop: FAILED_PRECONDITION naming the path (it used to be UNKNOWN).
  const std::string loop_a = testing_util::TempPath("inspect_loop_a");
  const std::string loop_b = testing_util::TempPath("inspect_loop_b");
  ASSERT_EQ(::symlink(loop_b.c_str(), loop_a.c_str()), 0);
  ASSERT_EQ(::symlink(loop_a.c_str(), loop_b.c_str()), 0);

  InspectRun text = Inspect({cut, "/proc/self/status", loop_a});
  EXPECT_EQ(text.exit_code, 1);
  const std::vector<std::string> reports = absl::StrSplit(text.out, absl::ByString("\n/"));
  ASSERT_EQ(reports.size(), 3u) << text.out;
  EXPECT_THAT(reports[0], HasSubstr("truncated GZIP stream"));
  EXPECT_THAT(reports[0], HasSubstr("crc: ok\n  errors: 1 (1 truncated)"));
  // /proc files stat as empty: read to their end (text, so the framing fails), not passed off as an empty
  // file with "crc: ok".
  EXPECT_THAT(reports[1], HasSubstr("proc/self/status: corrupted record at offset 0: length CRC mismatch"));
  EXPECT_THAT(reports[1], HasSubstr("crc: FAILED (1 bad record)\n  errors: 1 (1 bad CRC)"));
  EXPECT_THAT(reports[2], HasSubstr(absl::StrCat("error: FAILED_PRECONDITION: ", loop_a,
                                                 ": Too many levels of symbolic links")));

  const std::vector<Json> lines = JsonLines(Inspect({"--json", cut, corrupt, "/proc/self/status", loop_a}).out);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0]["crc"], "ok");
  EXPECT_EQ(lines[0]["errors"]["truncated"], 1);
  EXPECT_GT(lines[0]["records"], 0);
  EXPECT_EQ(lines[1]["crc"], "unchecked");
  EXPECT_EQ(lines[1]["errors"]["corrupt"], 1) << lines[1].dump();
  EXPECT_THAT(lines[1]["first_error"]["message"].get<std::string>(), HasSubstr("corrupt GZIP stream"));
  EXPECT_EQ(lines[2]["crc"], "bad");
  EXPECT_EQ(lines[2]["errors"]["crc"], 1);
  EXPECT_EQ(lines[2]["first_error"]["code"], "DATA_LOSS");
  EXPECT_EQ(lines[3]["first_error"]["code"], "FAILED_PRECONDITION");
  EXPECT_EQ(lines[3]["errors"]["unreadable"], 1);
}

TEST_F(InspectTest, UsageErrorsExitTwo) {
  EXPECT_EQ(Inspect({}).exit_code, 2);
  EXPECT_EQ(Inspect({"--compression=lz4", "x"}).exit_code, 2);
  EXPECT_EQ(Inspect({"--bogus", "x"}).exit_code, 2);
  EXPECT_EQ(Inspect({"--json", "--dump", "x"}).exit_code, 2);
  EXPECT_EQ(Inspect({"--all", "--dump", "x"}).exit_code, 2);
  EXPECT_EQ(Inspect({"-", "-"}).exit_code, 2);
  InspectOptions none;
  EXPECT_EQ(InspectWith(none).exit_code, 2);
}

TEST_F(InspectTest, JsonLinesDescribeSharedFiles) {
  InspectRun run =
      Inspect({"--json", SharedFile("torchdata_example.tfrecord"),
               SharedFile("derived/torchdata_example.tfrecord.gz"),
               SharedFile("derived/beam_foo_bar_truncated.tfrecord"),
               SharedFile("derived/beam_foo_bar_corrupt_data.tfrecord"),
               SharedFile("tfx_tfrecord_sequence/data_tfrecord_eval.gz"), SharedFile("no_such_file")});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.err, "");
  const std::vector<Json> lines = JsonLines(run.out);
  ASSERT_EQ(lines.size(), 6u) << run.out;

  const Json& plain = lines[0];
  EXPECT_EQ(plain["file"], SharedFile("torchdata_example.tfrecord"));
  EXPECT_EQ(plain["compression"], "NONE");
  EXPECT_EQ(plain["compression_detected"], true);
  EXPECT_EQ(plain["records"], 4);
  EXPECT_EQ(plain["bytes"], 523);  // the file's size (see its sidecar)
  EXPECT_EQ(plain["record_bytes"], 523 - 4 * 16);
  EXPECT_EQ(plain["crc"], "ok");
  EXPECT_EQ(plain["bad_records"], 0);
  EXPECT_TRUE(plain["first_error"].is_null());
  EXPECT_EQ(plain["first_record"]["type"], "tf.train.Example");
  EXPECT_EQ(plain["first_record"]["features"]["x_float"]["kind"], "float_list");
  EXPECT_EQ(plain["first_record"]["features"]["x_float"]["values"], 10);
  EXPECT_EQ(plain["first_record"]["features"]["x_byte"]["values"], 1);
  EXPECT_EQ(plain["first_record"]["features"].size(), 3u);

  EXPECT_EQ(lines[1]["compression"], "GZIP");
  EXPECT_EQ(lines[1]["records"], 4);
  EXPECT_EQ(lines[1]["bytes"], 332);
  EXPECT_EQ(lines[1]["record_bytes"], plain["record_bytes"]);

  // derived/README.source.txt: the truncated file ends 2 bytes into record 1, which starts at 16 + 3.
  const Json& truncated = lines[2];
  EXPECT_EQ(truncated["records"], 1);
  EXPECT_EQ(truncated["crc"], "ok");  // the one record read had good CRCs; the file is truncated
  EXPECT_EQ(truncated["errors"]["truncated"], 1);
  EXPECT_EQ(truncated["errors"]["crc"], 0);
  EXPECT_EQ(truncated["bad_records"], 1);
  EXPECT_EQ(truncated["first_error"]["offset"], 19);
  EXPECT_EQ(truncated["first_error"]["code"], "DATA_LOSS");
  EXPECT_THAT(truncated["first_error"]["message"].get<std::string>(),
              HasSubstr("truncated record at offset 19"));
  EXPECT_EQ(truncated["first_record"]["type"], "unknown");  // b"foo" is not an Example

  const Json& corrupt = lines[3];
  EXPECT_EQ(corrupt["first_error"]["offset"], 0);
  EXPECT_THAT(corrupt["first_error"]["message"].get<std::string>(), HasSubstr("data CRC mismatch"));
  EXPECT_EQ(corrupt["records"], 1);  // the reader continues with record 1, b"bar"
  EXPECT_EQ(corrupt["crc"], "bad");
  EXPECT_EQ(corrupt["errors"]["crc"], 1);

  const Json& sequence = lines[4];
  EXPECT_EQ(sequence["records"], 4500);
  EXPECT_EQ(sequence["first_record"]["type"], "tf.train.SequenceExample");
  EXPECT_TRUE(sequence["first_record"]["context"].contains("i"));
  EXPECT_TRUE(sequence["first_record"]["feature_lists"].contains("s"));

  const Json& missing = lines[5];
  EXPECT_EQ(missing["crc"], "unchecked");
  EXPECT_EQ(missing["errors"]["unreadable"], 1);
  EXPECT_EQ(missing["first_error"]["code"], "NOT_FOUND");
  EXPECT_TRUE(missing["first_error"]["offset"].is_null());
  EXPECT_TRUE(missing["first_record"].is_null());
}

TEST_F(InspectTest, JsonAllCountsExamples) {
  InspectRun run =
      Inspect({"--json", "--all", SharedFile("tfx_penguin/Split-eval/data_tfrecord-00000-of-00001.gz"),
               SharedFile("beam_foo_bar.tfrecord")});
  EXPECT_EQ(run.exit_code, 0);
  const std::vector<Json> lines = JsonLines(run.out);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["examples"], 100);
  EXPECT_EQ(lines[1]["records"], 2);
  EXPECT_EQ(lines[1]["examples"], 0);  // b"foo" and b"bar"
  // Without --all the key is absent rather than a misleading 0.
  EXPECT_FALSE(
      JsonLines(Inspect({"--json", SharedFile("beam_foo_bar.tfrecord")}).out)[0].contains("examples"));
}

TEST_F(InspectTest, DumpPrintsTheRecordsOfTheRange) {
  InspectRun run = Inspect({"--dump", "--records", "1:3", SharedFile("torchdata_example.tfrecord")});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  // Record 0 is 108 bytes, so record 1 starts at 108 + 16 and record 2 at 124 + 115 + 16.
  EXPECT_THAT(run.out, HasSubstr("record 1  offset 124  length 115\n"));
  EXPECT_THAT(run.out, HasSubstr("record 2  offset 255  length 118\n"));
  EXPECT_THAT(run.out, Not(HasSubstr("record 0 ")));
  EXPECT_THAT(run.out, Not(HasSubstr("record 3 ")));
  // The sidecar: record i holds x_float = [10i .. 10i+9]; a dump shows up to 16 values.
  EXPECT_THAT(run.out, HasSubstr("x_float: float_list, 10 values [10, 11, 12, 13, 14, 15, 16, 17, 18, 19]"));
  EXPECT_THAT(run.out, HasSubstr("x_int: int64_list, 10 values [200, 210, 220"));
  EXPECT_THAT(run.out, HasSubstr("records: 3 read, 2 shown (1:3)"));
}

TEST_F(InspectTest, DumpRangeForms) {
  const std::string file = SharedFile("torchdata_example.tfrecord");
  InspectRun from = Inspect({"--dump", "--records=3:", file});
  EXPECT_EQ(from.exit_code, 0);
  EXPECT_THAT(from.out, HasSubstr("record 3  offset"));
  EXPECT_THAT(from.out, HasSubstr("records: 4 read, 1 shown (3:)"));
  InspectRun to = Inspect({"--dump", "--records", ":1", file});
  EXPECT_EQ(to.exit_code, 0);
  EXPECT_THAT(to.out, HasSubstr("record 0  offset 0  length 108"));
  EXPECT_THAT(to.out, HasSubstr("records: 1 read, 1 shown (0:1)"));  // stops reading after the range
  InspectRun all = Inspect({"--dump", file});
  EXPECT_EQ(Count(all.out, "  record "), 4u);
  for (const char* bad : {"5", "3:1", "a:b", "-1:2", "1:2:3", "", " 1:2"}) {
    InspectRun run = Inspect({"--dump", "--records", bad, file});
    EXPECT_EQ(run.exit_code, 2) << bad;
    EXPECT_THAT(run.err, HasSubstr("--records")) << bad;
    EXPECT_EQ(run.out, "") << bad;
  }
}

TEST_F(InspectTest, DumpEscapesAndCutsLongValues) {
  const std::string path = testing_util::TempPath("inspect_dump.tfrecord");
  std::string blob(100, '\x01');
  blob[0] = '"';
  std::vector<float> floats(40, 0.5f);
  std::string file;
  io::AppendTFRecord(ExampleBuilder().AddBytes("blob", {blob}).AddFloats("f", floats).Serialize(), &file);
  testing_util::WriteFile(path, file);
  InspectRun run = Inspect({"--dump", path});
  EXPECT_EQ(run.exit_code, 0);
  // C hex escapes, cut after 32 of the 100 bytes.
  std::string escaped = "\\\"";
  for (int i = 0; i < 31; ++i) escaped += "\\x01";
  EXPECT_THAT(run.out,
              HasSubstr(absl::StrCat("blob: bytes_list, 1 value [\"", escaped, "\"... (100 bytes)]")))
      << run.out;
  EXPECT_THAT(run.out,
              HasSubstr("f: float_list, 40 values [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, "
                        "0.5, 0.5, 0.5, 0.5, 0.5, ... (24 more)]"));
  std::remove(path.c_str());
}

TEST_F(InspectTest, StdinStreamWithCompressionDetected) {
  const std::string bytes = testing_util::ReadWholeFile(SharedFile("torchdata_example.tfrecord"));
  {
    FedPipe pipe(Gzip(bytes));
    InspectRun run = Inspect({"--json", "-"}, pipe.fd());
    EXPECT_EQ(run.exit_code, 0) << run.out;
    const std::vector<Json> lines = JsonLines(run.out);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0]["file"], "-");
    EXPECT_EQ(lines[0]["compression"], "GZIP");
    EXPECT_EQ(lines[0]["records"], 4);
    EXPECT_EQ(lines[0]["record_bytes"], bytes.size() - 4 * 16);
    EXPECT_EQ(lines[0]["first_record"]["features"]["x_int"]["values"], 10);
  }
  {
    FedPipe pipe(bytes);
    InspectRun run = Inspect({"-"}, pipe.fd());
    EXPECT_EQ(run.exit_code, 0);
    EXPECT_THAT(run.out, HasSubstr("<stdin>\n  compression: NONE (detected)"));
    EXPECT_THAT(run.out, HasSubstr(absl::StrCat("bytes: ", bytes.size(), " in the stream")));
  }
  {
    FedPipe pipe(Gzip(testing_util::ReadWholeFile(SharedFile("derived/beam_foo_bar_truncated.tfrecord"))));
    InspectRun run = Inspect({"--json", "-"}, pipe.fd());
    EXPECT_EQ(run.exit_code, 1);
    const Json line = JsonLines(run.out).at(0);
    EXPECT_EQ(line["first_error"]["offset"], 19);
    EXPECT_THAT(line["first_error"]["message"].get<std::string>(),
                HasSubstr("<stdin> (decompressed): truncated record at offset 19"));
  }
  {
    FedPipe pipe(bytes);
    InspectRun run = Inspect({"--dump", "--records", "2:3", "--compression=none", "-"}, pipe.fd());
    EXPECT_EQ(run.exit_code, 0);
    EXPECT_THAT(run.out, HasSubstr("record 2  offset 255  length 118"));
  }
}

// Issue 13, item 6: a FIFO given by path blocked the open forever without a writer, and with one it
// consumed the writer's data before failing. It is refused at once, its data left where it was; a FIFO
// redirected to stdin ("-") is still read as a stream.
TEST_F(InspectTest, NamedFifoIsRefusedWithoutWaitingOrReading) {
  const std::string path = testing_util::TempPath("inspect_fifo");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  // No writer. Were the open to block, a watchdog opens the write end (bounded: 30 s) so that the test
  // fails instead of hanging.
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 3000 && !done.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (done.load()) return;
    ADD_FAILURE() << "sluice inspect blocked on a FIFO without a writer";
    const int fd = ::open(path.c_str(), O_WRONLY);
    if (fd >= 0) ::close(fd);
  });
  InspectRun run = Inspect({path});
  done.store(true);
  watchdog.join();
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.out, HasSubstr(absl::StrCat("error: FAILED_PRECONDITION: ", path,
                                              ": not a regular file (a FIFO); files are read by path, streams "
                                              "from stdin: sluice inspect - < ", path)));

  // A writer with data in the FIFO: refused the same way, and the data is still there afterwards.
  const int rw = ::open(path.c_str(), O_RDWR | O_NONBLOCK);  // Linux: a FIFO end that never blocks
  ASSERT_GE(rw, 0);
  const std::string bytes = Gzip(testing_util::ReadWholeFile(SharedFile("beam_foo_bar.tfrecord")));
  ASSERT_EQ(::write(rw, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  const InspectRun json = Inspect({"--json", path});
  EXPECT_EQ(json.exit_code, 1);
  const Json line = JsonLines(json.out).at(0);
  EXPECT_EQ(line["crc"], "unchecked");
  EXPECT_EQ(line["first_error"]["code"], "FAILED_PRECONDITION");
  std::string left(bytes.size() + 1, '\0');
  EXPECT_EQ(::read(rw, left.data(), left.size()), static_cast<ssize_t>(bytes.size()));
  left.resize(bytes.size());
  EXPECT_EQ(left, bytes);

  // The same FIFO as stdin is a stream (the shell's `sluice inspect - < FIFO`).
  ASSERT_EQ(::write(rw, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  const int writer_gone = ::open(path.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(writer_gone, 0);
  ::close(rw);  // end of stream once the data is read: no writer is left
  const InspectRun stream = Inspect({"--json", "-"}, writer_gone);
  ::close(writer_gone);
  std::remove(path.c_str());
  EXPECT_EQ(stream.exit_code, 0) << stream.out;
  const Json streamed = JsonLines(stream.out).at(0);
  EXPECT_EQ(streamed["compression"], "GZIP");
  EXPECT_EQ(streamed["records"], 2);

  // Character devices too: /dev/zero used to be read forever.
  const InspectRun zero = Inspect({"/dev/zero"});
  EXPECT_EQ(zero.exit_code, 1);
  EXPECT_THAT(zero.out, HasSubstr("/dev/zero: not a regular file (a character device)"));
}

// Issue #13, item 2: every error was kept and printed twice (stdout and stderr).
TEST_F(InspectTest, ManyBadCrcRecordsGiveOneBoundedErrorList) {
  constexpr int kRecords = 1000;
  std::string file;
  for (int i = 0; i < kRecords; ++i) {
    io::AppendTFRecord(absl::StrCat("payload ", i), &file);
    file.back() ^= 0x55;  // the data CRC's last byte
  }
  const std::string path = testing_util::TempPath("inspect_bad_crcs.tfrecord.gz");
  testing_util::WriteFile(path, Gzip(file));

  InspectRun text = Inspect({path});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_EQ(Count(text.out, "  error: "), kMaxErrorsShown) << text.out;
  EXPECT_EQ(Count(text.out, "data CRC mismatch"), kMaxErrorsShown);
  EXPECT_THAT(text.out, HasSubstr("corrupted record at offset 0: data CRC mismatch"));
  EXPECT_THAT(text.out, HasSubstr("records: 0\n"));
  EXPECT_THAT(text.out, HasSubstr("crc: FAILED (1000 bad records)\n"
                                  "  errors: 1000 (1000 bad CRC; the first 10 are shown above)\n"));
  EXPECT_EQ(text.err, "");

  InspectRun json = Inspect({"--json", path});
  EXPECT_EQ(json.exit_code, 1);
  const Json line = JsonLines(json.out).at(0);
  EXPECT_EQ(line["bad_records"], kRecords);
  EXPECT_EQ(line["first_error"]["offset"], 0);
  EXPECT_TRUE(line["first_record"].is_null());

  InspectOptions options;
  options.files = {path};
  options.max_errors_shown = 3;
  EXPECT_EQ(Count(InspectWith(options).out, "  error: "), 3u);
  std::remove(path.c_str());
}

// Issue #13, item 3: the first record was decoded without bound (120 million empty bytes values took
// 4.2 GB). 300,000 empty values are a 600 KB record but over the default budget of 2^18 items.
TEST_F(InspectTest, LargeRecordIsReportedAsTooLargeToShow) {
  const std::vector<std::string> empties(300000);
  std::string file;
  io::AppendTFRecord(ExampleBuilder().AddBytes("many", empties).Serialize(), &file);
  io::AppendTFRecord(ExampleBuilder().AddInt64s("small", {1}).Serialize(), &file);
  const std::string path = testing_util::TempPath("inspect_large.tfrecord");
  testing_util::WriteFile(path, file);

  InspectRun text = Inspect({path});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_THAT(text.out, HasSubstr("first record: too large to show ("));
  EXPECT_THAT(text.out, HasSubstr("300001 features, steps and values, over the display budget of 262144"));
  EXPECT_THAT(text.out, Not(HasSubstr("many:")));

  const Json line = JsonLines(Inspect({"--json", "--all", path}).out).at(0);
  EXPECT_EQ(line["first_record"]["type"], "too_large");
  EXPECT_EQ(line["records"], 2);
  EXPECT_EQ(line["examples"], 2);  // judged by the allocation-free walk

  InspectRun dump = Inspect({"--dump", path});
  EXPECT_THAT(dump.out, HasSubstr("record 0  offset 0  length"));
  EXPECT_THAT(dump.out, HasSubstr("too large to show"));
  EXPECT_THAT(dump.out, HasSubstr("small: int64_list, 1 value [1]"));

  // The byte budget: a record bigger than max_record_bytes is not decoded at all.
  InspectOptions options;
  options.files = {SharedFile("torchdata_example.tfrecord")};
  options.budget.max_record_bytes = 100;
  EXPECT_THAT(InspectWith(options).out,
              HasSubstr("first record: too large to show (108 bytes): over the display budget of 100 bytes"));
  std::remove(path.c_str());
}

TEST(RecordRangeTest, Parses) {
  absl::StatusOr<RecordRange> r = ParseRecordRange("2:5");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->begin, 2u);
  EXPECT_EQ(r->end, 5u);
  EXPECT_FALSE(r->Contains(1));
  EXPECT_TRUE(r->Contains(2));
  EXPECT_TRUE(r->Contains(4));
  EXPECT_FALSE(r->Contains(5));
  r = ParseRecordRange("7:");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->begin, 7u);
  EXPECT_FALSE(r->end.has_value());
  EXPECT_EQ(r->ToString(), "7:");
  r = ParseRecordRange(":3");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->begin, 0u);
  EXPECT_EQ(r->end, 3u);
  EXPECT_TRUE(ParseRecordRange(":").ok());
  EXPECT_TRUE(ParseRecordRange("4:4").ok());  // empty, not wrong
  for (const char* bad : {"", "3", "3:2", "x:", ":y", "+1:2", "1:-2", "99999999999999999999:"}) {
    EXPECT_FALSE(ParseRecordRange(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace inspect_test_file
}  // namespace sluice::tools
