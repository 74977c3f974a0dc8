#include "sluice/engine/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sluice/engine/reactor.h"
#include "sluice/ops/dataset.h"
#include "tests/ops/test_helpers.h"
#include "tests/test_util.h"

namespace sluice {

// Failure messages name the level (found by argument-dependent lookup, so outside the unnamed namespace).
void PrintTo(LogLevel level, std::ostream* os) { *os << LogLevelName(level); }

namespace log_test_file {
namespace {

using test_ops::Collect;

struct Message {
  LogLevel level;
  std::string text;
};

// Keeps what its sink receives. The sink is called under the log's mutex; mu_ is for the test's reads.
class Recorder {
 public:
  LogSink Sink() {
    return [this](LogLevel level, std::string_view text) {
      std::lock_guard<std::mutex> lock(mu_);
      messages_.push_back({level, std::string(text)});
    };
  }
  std::vector<Message> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(messages_);
  }

 private:
  std::mutex mu_;
  std::vector<Message> messages_;
};

// Points fd 2 at a temporary file until Finish(), which returns what was written there.
class StderrCapture {
 public:
  StderrCapture() : path_(testing_util::TempPath("stderr_capture")) {
    std::fflush(stderr);
    file_fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    saved_fd_ = ::dup(STDERR_FILENO);
    ok_ = file_fd_ >= 0 && saved_fd_ >= 0 && ::dup2(file_fd_, STDERR_FILENO) == STDERR_FILENO;
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;
  ~StderrCapture() { Finish(); }

  bool ok() const { return ok_; }

  std::string Finish() {
    if (finished_) return "";
    finished_ = true;
    std::fflush(stderr);
    if (saved_fd_ >= 0) {
      ::dup2(saved_fd_, STDERR_FILENO);
      ::close(saved_fd_);
    }
    if (file_fd_ >= 0) ::close(file_fd_);
    std::string written = testing_util::ReadWholeFile(path_);
    ::unlink(path_.c_str());
    return written;
  }

 private:
  std::string path_;
  int file_fd_ = -1;
  int saved_fd_ = -1;
  bool ok_ = false;
  bool finished_ = false;
};

// Each test starts from the default sink and leaves the level and sink as it found them.
class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_level_ = GetLogLevel();
    saved_sink_ = SetLogSink(nullptr);
  }
  void TearDown() override {
    SetLogSink(std::move(saved_sink_));
    SetLogLevel(saved_level_);
  }

 private:
  LogLevel saved_level_ = LogLevel::kWarning;
  LogSink saved_sink_;
};

// With nothing configured, starting the I/O engine and reading TFRecords (good and corrupt, errors kept
// or ignored) writes nothing to stderr. First of its suite, so that a run of the whole binary starts
// DefaultReactor here too.
TEST_F(LogTest, LibraryIsSilentByDefault) {
  if (std::getenv("SLUICE_LOG_LEVEL") != nullptr) GTEST_SKIP() << "SLUICE_LOG_LEVEL is set";
  ASSERT_EQ(GetLogLevel(), LogLevel::kWarning);
  const std::string good = testing_util::SharedTFRecord("beam_foo_bar.tfrecord");
  const std::string corrupt = testing_util::SharedTFRecord("derived/beam_foo_bar_corrupt_data.tfrecord");

  StderrCapture capture;
  ASSERT_TRUE(capture.ok());
  absl::StatusOr<std::unique_ptr<Reactor>> reactor = Reactor::Create();
  std::vector<absl::StatusOr<std::string>> records = Collect(TFRecord({good}));  // starts DefaultReactor
  std::vector<absl::StatusOr<std::string>> with_error = Collect(TFRecord({corrupt}));
  std::vector<absl::StatusOr<std::string>> ignored = Collect(TFRecord({corrupt}).IgnoreErrors());
  const std::string written = capture.Finish();

  ASSERT_TRUE(reactor.ok()) << reactor.status();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(*records[0], "foo");
  ASSERT_EQ(with_error.size(), 2u);
  EXPECT_EQ(with_error[0].status().code(), absl::StatusCode::kDataLoss);  // a Status, not a print
  EXPECT_EQ(ignored.size(), 1u);
  EXPECT_EQ(written, "") << "the library wrote to stderr";
}

TEST_F(LogTest, DeliversAtAndAboveTheThresholdOnly) {
  Recorder recorder;
  SetLogSink(recorder.Sink());
  SetLogLevel(LogLevel::kInfo);
  EXPECT_EQ(GetLogLevel(), LogLevel::kInfo);
  EXPECT_FALSE(LogEnabled(LogLevel::kDebug));
  EXPECT_TRUE(LogEnabled(LogLevel::kInfo));
  EXPECT_TRUE(LogEnabled(LogLevel::kError));
  EXPECT_FALSE(LogEnabled(LogLevel::kOff));  // never a message's level
  Log(LogLevel::kDebug, "d");
  Log(LogLevel::kInfo, "i");
  Log(LogLevel::kWarning, "w");
  Log(LogLevel::kError, "e");
  Log(LogLevel::kOff, "o");
  std::vector<Message> got = recorder.Take();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].level, LogLevel::kInfo);
  EXPECT_EQ(got[0].text, "i");
  EXPECT_EQ(got[1].level, LogLevel::kWarning);
  EXPECT_EQ(got[1].text, "w");
  EXPECT_EQ(got[2].level, LogLevel::kError);
  EXPECT_EQ(got[2].text, "e");

  SetLogLevel(LogLevel::kOff);
  EXPECT_FALSE(LogEnabled(LogLevel::kError));
  Log(LogLevel::kError, "e");
  EXPECT_TRUE(recorder.Take().empty());

  SetLogLevel(LogLevel::kDebug);
  Log(LogLevel::kDebug, "d");
  got = recorder.Take();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].level, LogLevel::kDebug);
}

TEST_F(LogTest, ParseLogLevelAcceptsTheFiveNamesInAnyCase) {
  const std::pair<std::string_view, LogLevel> kGood[] = {
      {"debug", LogLevel::kDebug}, {"INFO", LogLevel::kInfo}, {"Warning", LogLevel::kWarning},
      {"ERROR", LogLevel::kError}, {"off", LogLevel::kOff},   {"oFF", LogLevel::kOff}};
  for (const auto& [text, level] : kGood) {
    absl::StatusOr<LogLevel> parsed = ParseLogLevel(text);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.status();
    EXPECT_EQ(*parsed, level) << text;
    EXPECT_EQ(ParseLogLevel(LogLevelName(level)).value(), level);
  }
  for (std::string_view text : {"", "warn", "verbose", " debug", "debug\n", "3", "fatal"}) {
    absl::StatusOr<LogLevel> parsed = ParseLogLevel(text);
    ASSERT_FALSE(parsed.ok()) << "'" << text << "' parsed";
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find(absl::StrCat("'", std::string(text), "'")), std::string::npos)
        << parsed.status();
  }
}

TEST_F(LogTest, EmptySinkRestoresTheDefaultStderrLine) {
  SetLogLevel(LogLevel::kWarning);
  Recorder recorder;
  EXPECT_FALSE(SetLogSink(recorder.Sink())) << "the fixture left the default sink, returned as empty";
  LogSink previous = SetLogSink(nullptr);
  ASSERT_TRUE(previous) << "the recorder should come back";
  previous(LogLevel::kError, "direct");
  EXPECT_EQ(recorder.Take().size(), 1u);

  StderrCapture capture;
  ASSERT_TRUE(capture.ok());
  Log(LogLevel::kWarning, "to stderr");
  Log(LogLevel::kInfo, "below the threshold");
  EXPECT_EQ(capture.Finish(), "sluice: warning: to stderr\n");
  EXPECT_TRUE(recorder.Take().empty());
}

// Counts the calls of one sink, and calls made after SetLogSink had swapped it out.
struct SinkCounter {
  std::atomic<int64_t> calls{0};
  std::atomic<bool> retired{false};
  std::atomic<int64_t> calls_after_retired{0};
};

LogSink CountingSink(std::shared_ptr<SinkCounter> counter) {
  return [counter = std::move(counter)](LogLevel, std::string_view) {
    counter->calls.fetch_add(1, std::memory_order_relaxed);
    if (counter->retired.load(std::memory_order_relaxed)) {
      counter->calls_after_retired.fetch_add(1, std::memory_order_relaxed);
    }
  };
}

TEST_F(LogTest, SinkSwapsWhileThreadsLogAreSafeAndLoseNothing) {
  constexpr int kThreads = 4;
  constexpr int kSwaps = 200;
  SetLogLevel(LogLevel::kWarning);
  std::vector<std::shared_ptr<SinkCounter>> counters;
  counters.push_back(std::make_shared<SinkCounter>());
  SetLogSink(CountingSink(counters.back()));

  // The threads log until the swapping is over, so every swap happens while they log.
  std::atomic<bool> swapping_done{false};
  std::atomic<int64_t> sent{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&swapping_done, &sent, t] {
      int64_t i = 0;
      for (; !swapping_done.load(std::memory_order_acquire); ++i) {
        if (LogEnabled(LogLevel::kError)) Log(LogLevel::kError, absl::StrCat("thread ", t, " message ", i));
        Log(LogLevel::kDebug, "never delivered");
      }
      sent.fetch_add(i, std::memory_order_relaxed);
    });
  }
  for (int swap = 0; swap < kSwaps; ++swap) {
    // Each sink gets a message before it is replaced: the swaps really interleave with the calls.
    while (counters.back()->calls.load(std::memory_order_relaxed) == 0) std::this_thread::yield();
    // The level moves too, always keeping kError delivered and kDebug not.
    SetLogLevel(swap % 2 == 0 ? LogLevel::kInfo : LogLevel::kWarning);
    counters.push_back(std::make_shared<SinkCounter>());
    LogSink old = SetLogSink(CountingSink(counters.back()));
    counters[counters.size() - 2]->retired.store(true, std::memory_order_relaxed);
    old = nullptr;  // destroys the old sink's copy of its counter while the threads keep logging
  }
  swapping_done.store(true, std::memory_order_release);
  for (std::thread& thread : threads) thread.join();
  SetLogSink(nullptr);

  int64_t delivered = 0;
  for (const auto& counter : counters) {
    delivered += counter->calls.load();
    EXPECT_EQ(counter->calls_after_retired.load(), 0) << "a sink was called after SetLogSink replaced it";
  }
  EXPECT_EQ(delivered, sent.load()) << "every kError message reaches exactly one sink";
}

TEST_F(LogTest, BackendChoiceIsLoggedAtDebugOnly) {
  Recorder recorder;
  SetLogSink(recorder.Sink());
  SetLogLevel(LogLevel::kDebug);
  absl::StatusOr<std::unique_ptr<Reactor>> reactor = Reactor::Create();
  ASSERT_TRUE(reactor.ok()) << reactor.status();
  std::vector<Message> got = recorder.Take();
  const std::string expected = absl::StrCat("I/O backend ", std::string((*reactor)->backend_name()));
  bool found = false;
  for (const Message& m : got) {
    if (m.text == expected) {
      found = true;
      EXPECT_EQ(m.level, LogLevel::kDebug);
    }
  }
  EXPECT_TRUE(found) << "no '" << expected << "' among " << got.size() << " messages";

  SetLogLevel(LogLevel::kInfo);
  absl::StatusOr<std::unique_ptr<Reactor>> quiet = Reactor::Create();
  ASSERT_TRUE(quiet.ok()) << quiet.status();
  for (const Message& m : recorder.Take()) EXPECT_NE(m.text, expected) << "delivered at info";
}

TEST_F(LogTest, IgnoreErrorsLogsDroppedErrorsOnlyWhenAsked) {
  Recorder recorder;
  SetLogSink(recorder.Sink());
  SetLogLevel(LogLevel::kWarning);
  const std::string corrupt = testing_util::SharedTFRecord("derived/beam_foo_bar_corrupt_data.tfrecord");
  std::vector<absl::StatusOr<std::string>> quiet = Collect(TFRecord({corrupt}).IgnoreErrors());
  ASSERT_EQ(quiet.size(), 1u);
  EXPECT_TRUE(recorder.Take().empty());  // tf.data's default: log_warning=False

  std::vector<absl::StatusOr<std::string>> logged = Collect(TFRecord({corrupt}).IgnoreErrors(/*log_warning=*/true));
  ASSERT_EQ(logged.size(), 1u);
  std::vector<Message> got = recorder.Take();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].level, LogLevel::kWarning);
  EXPECT_EQ(got[0].text.rfind("IgnoreErrors: dropped error: DATA_LOSS", 0), 0u) << got[0].text;

  SetLogLevel(LogLevel::kError);  // the threshold applies to them too
  Collect(TFRecord({corrupt}).IgnoreErrors(/*log_warning=*/true));
  EXPECT_TRUE(recorder.Take().empty());
}

// SLUICE_LOG_LEVEL is read once per process, so each case runs in a fresh child (threadsafe death tests
// re-execute the binary) that sets the variable first and prints what it found.
void ReportLevelFromEnvironment(const char* value) {
  if (value == nullptr) {
    ::unsetenv("SLUICE_LOG_LEVEL");
  } else {
    ::setenv("SLUICE_LOG_LEVEL", value, 1);
  }
  Recorder recorder;
  SetLogSink(recorder.Sink());  // installing a sink does not read the variable
  const LogLevel level = GetLogLevel();
  GetLogLevel();
  SetLogLevel(LogLevel::kError);
  Log(LogLevel::kWarning, "below the new threshold");
  int complaints = 0;
  std::string first;
  for (const Message& m : recorder.Take()) {
    if (m.level == LogLevel::kWarning && m.text.find("SLUICE_LOG_LEVEL") != std::string::npos) ++complaints;
    if (first.empty()) first = m.text;
  }
  SetLogSink(nullptr);
  std::fprintf(stderr, "level=%s complaints=%d first=[%s]\n", std::string(LogLevelName(level)).c_str(),
               complaints, first.c_str());
  std::fflush(stderr);
  std::_Exit(0);
}

TEST(LogEnvironmentDeathTest, UnsetMeansWarning) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(ReportLevelFromEnvironment(nullptr), ::testing::ExitedWithCode(0),
              "level=warning complaints=0 first=\\[\\]");
}

TEST(LogEnvironmentDeathTest, ValidValueInAnyCaseSetsTheThreshold) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(ReportLevelFromEnvironment("DeBuG"), ::testing::ExitedWithCode(0),
              "level=debug complaints=0 first=\\[\\]");
  EXPECT_EXIT(ReportLevelFromEnvironment("off"), ::testing::ExitedWithCode(0), "level=off complaints=0");
  EXPECT_EXIT(ReportLevelFromEnvironment(""), ::testing::ExitedWithCode(0), "level=warning complaints=0");
}

TEST(LogEnvironmentDeathTest, InvalidValueFallsBackToWarningAndSaysSoOnce) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(ReportLevelFromEnvironment("verbose"), ::testing::ExitedWithCode(0),
              "level=warning complaints=1 first=\\[SLUICE_LOG_LEVEL='verbose' is not a log level");
}

}  // namespace
}  // namespace log_test_file
}  // namespace sluice
