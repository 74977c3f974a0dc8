// The data service across processes: `sluice dispatcher` and two `sluice worker` processes on loopback,
// this test process as the trainer.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "examples/data_service/functions.h"
#include "gtest/gtest.h"
#include "io/tfrecord_writer.h"
#include "sluice/distribute/service.h"
#include "sluice/io/example.h"
#include "sluice/ops/library_functions.h"
#include "sluice/ops/registration.h"
#include "tests/distribute/service/child_process.h"
#include "tests/distribute/service/service_test_util.h"
#include "tests/test_util.h"

namespace service_processes_test {
// Registered in this binary only: the stock worker does not know it.
inline constexpr sluice::Function<int64_t(int64_t)> kTrainerOnly{"service_processes_test.trainer_only"};
SLUICE_REGISTER_FUNCTION(kTrainerOnly,
                         [](const sluice::FunctionArgs&) { return [](int64_t x) { return x; }; });
}  // namespace service_processes_test

namespace sluice::service {
namespace service_processes_test_file {
namespace {

// Never drained in a test.
constexpr int64_t kEndless = int64_t{1} << 40;

#ifdef SLUICE_CLI_PATH

constexpr auto kStartup = std::chrono::seconds(20);
constexpr auto kExit = std::chrono::seconds(20);

using testing::ChildProcess;
using testing::Drain;

struct Processes {
  std::unique_ptr<ChildProcess> dispatcher;
  std::vector<std::unique_ptr<ChildProcess>> workers;
  std::string address;

  // Whether every process printed its "listening on" line.
  bool Start(int num_workers, std::vector<std::string> dispatcher_flags = {"--port", "0"}) {
    if (!StartDispatcher(std::move(dispatcher_flags))) return false;
    for (int i = 0; i < num_workers; ++i) {
      workers.push_back(std::make_unique<ChildProcess>(
          SLUICE_CLI_PATH, std::vector<std::string>{"worker", "--dispatcher", address, "--port", "0"},
          testing_util::TempPath(absl::StrCat("worker", i, ".err"))));
      std::optional<std::string> ready = workers.back()->ReadLine(kStartup);
      if (!ready || !absl::StartsWith(*ready, "listening on ")) {
        ADD_FAILURE() << "worker: " << ready.value_or("(no line)") << "\n" << workers.back()->Stderr();
        return false;
      }
    }
    return true;
  }

  bool StartDispatcher(std::vector<std::string> flags) {
    flags.insert(flags.begin(), "dispatcher");
    dispatcher = std::make_unique<ChildProcess>(SLUICE_CLI_PATH, std::move(flags),
                                                testing_util::TempPath("dispatcher.err"));
    std::optional<std::string> line = dispatcher->ReadLine(kStartup);
    if (!line || !absl::StartsWith(*line, "listening on ")) {
      ADD_FAILURE() << "dispatcher: " << line.value_or("(no line)") << "\n" << dispatcher->Stderr();
      return false;
    }
    address = line->substr(std::string("listening on ").size());
    return true;
  }

  // SIGTERM to the workers, then (once they exited) to the dispatcher; each exits 0 within the bound.
  // In this order each worker's goodbye reaches a live dispatcher.
  void StopAll() {
    for (auto& worker : workers) worker->Signal(SIGTERM);
    for (auto& worker : workers) {
      EXPECT_EQ(worker->Wait(kExit), std::optional<int>(0)) << worker->Stderr();
    }
    dispatcher->Signal(SIGTERM);
    EXPECT_EQ(dispatcher->Wait(kExit), std::optional<int>(0)) << dispatcher->Stderr();
  }

  ServiceOptions Options(ProcessingMode mode, std::string job_name = "") const {
    ServiceOptions options;
    options.processing_mode = mode;
    options.dispatcher_address = address;
    options.job_name = std::move(job_name);
    options.dispatcher_timeout_ms = 500;  // a test that stops the dispatcher sees its consumer fail soon
    return options;
  }
};

TEST(ServiceProcessesTest, DistributedEpochAcrossProcessesYieldsEachElementOnce) {
  Processes processes;
  ASSERT_TRUE(processes.Start(2));
  testing::Drained<int64_t> got = Drain(Range(10000).BatchVectors(100).Unbatch().Distribute(
      processes.Options(ProcessingMode::kDistributedEpoch)));
  EXPECT_TRUE(got.ended);
  EXPECT_TRUE(got.errors.empty()) << got.errors.front();
  std::sort(got.values.begin(), got.values.end());
  ASSERT_EQ(got.values.size(), 10000u);
  for (int64_t i = 0; i < 10000; ++i) ASSERT_EQ(got.values[i], i);
  processes.StopAll();
  EXPECT_TRUE(absl::StrContains(processes.dispatcher->Stderr(), "joined")) << processes.dispatcher->Stderr();
  EXPECT_TRUE(absl::StrContains(processes.dispatcher->Stderr(), "created")) << processes.dispatcher->Stderr();
  EXPECT_TRUE(absl::StrContains(processes.dispatcher->Stderr(), "left (stopping)"))
      << processes.dispatcher->Stderr();
}

TEST(ServiceProcessesTest, TheStockWorkerNamesARegistrationItLacks) {
  Processes processes;
  ASSERT_TRUE(processes.Start(1));
  testing::Drained<int64_t> got = Drain(Range(3)
                                            .Map(service_processes_test::kTrainerOnly)
                                            .Distribute(processes.Options(ProcessingMode::kParallelEpochs)));
  EXPECT_TRUE(got.ended);
  EXPECT_TRUE(got.values.empty());
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_NE(got.errors[0].message().find("service_processes_test.trainer_only"), std::string::npos)
      << got.errors[0];
  processes.StopAll();
}

// The library's own functions need no registration in the worker: a TFRecord-of-Examples pipeline runs
// on the stock worker, one file per split.
TEST(ServiceProcessesTest, TheStockWorkerRunsTheLibraryFunctions) {
  std::vector<std::string> files;
  for (int64_t f = 0; f < 3; ++f) {
    absl::StatusOr<io::TFRecordBufferWriter> writer = io::TFRecordBufferWriter::Create(Compression::kNone);
    ASSERT_TRUE(writer.ok());
    for (int64_t r = 0; r < 4; ++r) {
      const std::string image = {static_cast<char>(f), static_cast<char>(r)};
      ASSERT_TRUE(
          writer
              ->Write(ExampleBuilder().AddBytes("image", {image}).AddInt64s("label", {f * 4 + r}).Serialize())
              .ok());
    }
    ASSERT_TRUE(writer->Finish().ok());
    files.push_back(testing_util::TempPath(absl::StrCat("stock_worker_", f, ".tfrecord")));
    testing_util::WriteFile(files.back(), writer->output());
  }
  ParseSpec spec;
  spec.fixed.push_back({"image", DType::kString, Shape(), std::nullopt});
  spec.fixed.push_back({"label", DType::kInt64, Shape(), std::nullopt});
  Processes processes;
  ASSERT_TRUE(processes.Start(1));
  testing::Drained<std::pair<Tensor, Tensor>> got = Drain(
      ListFiles(files)
          .Interleave(kReadTFRecord.With(), 1)
          .ParseExample(spec)
          .Map(kExampleToPair.With({{"decode_raw", std::string("uint8")}, {"cast", std::string("float")}}))
          .Distribute(processes.Options(ProcessingMode::kDistributedEpoch)));
  EXPECT_TRUE(got.ended);
  EXPECT_TRUE(got.errors.empty()) << got.errors.front();
  ASSERT_EQ(got.values.size(), 12u);
  std::vector<int64_t> labels;
  for (const auto& [image, label] : got.values) {
    const int64_t l = label.data<int64_t>()[0];
    labels.push_back(l);
    EXPECT_EQ(image, Tensor::FromVector<float>({static_cast<float>(l / 4), static_cast<float>(l % 4)}));
  }
  std::sort(labels.begin(), labels.end());
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(labels[i], i);
  processes.StopAll();
}

#ifdef SLUICE_DATA_SERVICE_EXAMPLE
// examples/data_service: its own worker binary (WorkerMain with the example's function) serves the
// example's client, which this process runs; the reference sequence comes back.
TEST(ServiceProcessesTest, TheExamplesOwnWorkerBinaryServesItsFunction) {
  Processes processes;
  processes.dispatcher =
      std::make_unique<ChildProcess>(SLUICE_CLI_PATH, std::vector<std::string>{"dispatcher", "--port", "0"},
                                     testing_util::TempPath("ex_dispatcher.err"));
  std::optional<std::string> line = processes.dispatcher->ReadLine(kStartup);
  ASSERT_TRUE(line && absl::StartsWith(*line, "listening on ")) << processes.dispatcher->Stderr();
  processes.address = line->substr(std::string("listening on ").size());
  processes.workers.push_back(std::make_unique<ChildProcess>(
      SLUICE_DATA_SERVICE_EXAMPLE,
      std::vector<std::string>{"worker", "--dispatcher", processes.address, "--port", "0"},
      testing_util::TempPath("ex_worker.err")));
  std::optional<std::string> ready = processes.workers.back()->ReadLine(kStartup);
  ASSERT_TRUE(ready && absl::StartsWith(*ready, "listening on ")) << processes.workers.back()->Stderr();
  data_service_example::ClientConfig config;
  config.dispatcher = processes.address;
  absl::StatusOr<std::vector<int64_t>> values = data_service_example::RunClient(config);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(*values, (std::vector<int64_t>{1, 2, 5, 10, 17}));
  processes.StopAll();
}
#endif

// A kill in the middle: the dispatcher dies (SIGKILL) mid-epoch and is started again on its port and work
// folder; the workers and the consumer reconnect, and every element still arrives exactly once.
TEST(ServiceProcessesTest, AKilledDispatcherRestartedOnItsWorkFolderLosesAndRepeatsNothing) {
  const std::string work_dir = testing_util::TempPath("killed_dispatcher");
  Processes processes;
  ASSERT_TRUE(processes.Start(2, {"--port", "0", "--work-dir", work_dir}));
  const std::string port = processes.address.substr(processes.address.rfind(':') + 1);
  constexpr int64_t kElements = 50000;
  ServiceOptions options = processes.Options(ProcessingMode::kDistributedEpoch, "killed");
  options.dispatcher_timeout_ms = 20000;
  Iterator<int64_t> it = Range(0, kElements).Distribute(options).MakeIterator();
  testing::Drained<int64_t> before = testing::DrainIterator(it, 2000);
  ASSERT_EQ(before.values.size(), 2000u);
  processes.dispatcher->Signal(SIGKILL);
  ASSERT_TRUE(processes.dispatcher->Wait(kExit).has_value());
  ASSERT_TRUE(processes.StartDispatcher({"--port", port, "--work-dir", work_dir}));
  testing::Drained<int64_t> after = testing::DrainIterator(it, 2 * kElements);
  EXPECT_TRUE(after.ended);
  ASSERT_TRUE(after.errors.empty()) << after.errors.front();
  EXPECT_TRUE(testing::EachOfRangeOnce(std::move(before.values), after.values, kElements));
  processes.StopAll();
  EXPECT_NE(processes.dispatcher->Stderr().find("recovered from"), std::string::npos)
      << processes.dispatcher->Stderr();
}

TEST(ServiceProcessesTest, ProcessesExitCleanlyOnSigtermWithAClientConnected) {
  Processes processes;
  ASSERT_TRUE(processes.Start(1));
  Iterator<int64_t> it =
      Range(0, kEndless).Distribute(processes.Options(ProcessingMode::kParallelEpochs)).MakeIterator();
  testing::Drained<int64_t> some = testing::DrainIterator(it, 100);
  EXPECT_EQ(some.values.size(), 100u);
  processes.StopAll();  // the iterator is still connected to both
  testing::Drained<int64_t> rest = testing::DrainIterator(it, 1000000);
  EXPECT_TRUE(rest.ended);
  EXPECT_FALSE(rest.errors.empty());
}

#else
TEST(ServiceProcessesTest, NeedsTheSluiceBinary) { GTEST_SKIP() << "built without SLUICE_CLI_PATH"; }
#endif

}  // namespace
}  // namespace service_processes_test_file
}  // namespace sluice::service
