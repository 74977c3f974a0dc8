// A dispatcher that restarts: with its work folder, the job goes on and every element arrives once;
// without one, consumers fail naming why, and workers register again and drop their stale tasks.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sluice/distribute/service.h"
#include "tests/distribute/service/service_test_util.h"
#include "tests/test_util.h"

namespace sluice::service {
namespace service_restart_test_file {
namespace {

using testing::DrainIterator;
using testing::LogLines;

struct Restartable {
  DispatcherConfig config;
  std::unique_ptr<DispatcherServer> dispatcher;
  std::vector<std::unique_ptr<WorkerServer>> workers;
  std::string address;

  Restartable(std::string work_dir, const LogLines& dispatcher_log, const LogLines& worker_log) {
    config.work_dir = std::move(work_dir);
    config.log = dispatcher_log.Sink();
    Start();
    if (dispatcher == nullptr) return;
    address = dispatcher->address();
    config.port = static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
    for (int i = 0; i < 2; ++i) {
      WorkerConfig worker;
      worker.dispatcher_address = address;
      worker.heartbeat_interval_ms = 10;
      worker.log = worker_log.Sink();
      absl::StatusOr<std::unique_ptr<WorkerServer>> started = WorkerServer::Start(worker);
      EXPECT_TRUE(started.ok()) << started.status();
      if (started.ok()) workers.push_back(std::move(*started));
    }
  }
  // Starts the dispatcher (again, on the same port after the first start).
  void Start() {
    absl::StatusOr<std::unique_ptr<DispatcherServer>> started = DispatcherServer::Start(config);
    EXPECT_TRUE(started.ok()) << started.status();
    if (started.ok()) dispatcher = std::move(*started);
  }
  ~Restartable() {
    for (auto& worker : workers) worker->Stop();
  }
};

TEST(ServiceRestartTest, WithItsWorkFolderARestartedDispatcherLosesAndRepeatsNoElement) {
  LogLines dispatcher_log;
  LogLines worker_log;
  Restartable cluster(testing_util::TempPath("restart_work_dir"), dispatcher_log, worker_log);
  ASSERT_NE(cluster.dispatcher, nullptr);
  constexpr int64_t kElements = 50000;
  ServiceOptions options;
  options.processing_mode = ProcessingMode::kDistributedEpoch;
  options.dispatcher_address = cluster.address;
  options.job_name = "restart";
  options.dispatcher_timeout_ms = 20000;  // only a broken restart waits this long
  Iterator<int64_t> it = Range(0, kElements).Distribute(options).MakeIterator();
  testing::Drained<int64_t> before = DrainIterator(it, 2000);
  ASSERT_EQ(before.values.size(), 2000u);
  cluster.dispatcher.reset();  // stops it and closes its journal
  ASSERT_TRUE(worker_log.WaitFor("lost the dispatcher", 2)) << worker_log.Text();
  cluster.Start();
  ASSERT_NE(cluster.dispatcher, nullptr);
  testing::Drained<int64_t> after = DrainIterator(it, 2 * kElements);
  EXPECT_TRUE(after.ended);
  ASSERT_TRUE(after.errors.empty()) << after.errors.front();
  EXPECT_TRUE(testing::EachOfRangeOnce(std::move(before.values), after.values, kElements));
  EXPECT_EQ(dispatcher_log.Count("recovered from"), 1);
  EXPECT_EQ(worker_log.Count("reconnected to the dispatcher"), 2);
  EXPECT_EQ(worker_log.Count("registering again"), 0);  // the restarted dispatcher knew them
}

TEST(ServiceRestartTest, WithoutAWorkFolderConsumersFailNamingItAndWorkersDropTheirStaleTasks) {
  LogLines dispatcher_log;
  LogLines worker_log;
  Restartable cluster("", dispatcher_log, worker_log);
  ASSERT_NE(cluster.dispatcher, nullptr);
  ServiceOptions options;
  options.processing_mode = ProcessingMode::kDistributedEpoch;
  options.dispatcher_address = cluster.address;
  options.job_name = "forgotten";
  options.dispatcher_timeout_ms = 20000;
  Iterator<int64_t> it = Range(0, int64_t{1} << 40).Distribute(options).MakeIterator();
  ASSERT_EQ(DrainIterator(it, 100).values.size(), 100u);
  ASSERT_TRUE(worker_log.WaitFor(") started", 2)) << worker_log.Text();  // both tasks reached their workers
  cluster.dispatcher.reset();
  ASSERT_TRUE(worker_log.WaitFor("lost the dispatcher", 2)) << worker_log.Text();
  cluster.Start();
  ASSERT_NE(cluster.dispatcher, nullptr);
  ASSERT_TRUE(worker_log.WaitFor("registering again", 2)) << worker_log.Text();
  ASSERT_TRUE(worker_log.WaitFor("cancelled by the dispatcher", 2))
      << worker_log.Text();  // the forgotten job's
  testing::Drained<int64_t> rest = DrainIterator(it, 1 << 20);
  ASSERT_FALSE(rest.errors.empty());
  // Whichever comes first: the dispatcher not knowing the job, or a worker's cancelled task.
  const absl::Status& why = rest.errors.back();
  EXPECT_TRUE(why.code() == absl::StatusCode::kNotFound || why.code() == absl::StatusCode::kCancelled) << why;
  EXPECT_NE(why.message().find("without a work folder"), std::string::npos) << why;
}

}  // namespace
}  // namespace service_restart_test_file
}  // namespace sluice::service
