// Shutdown with clients connected: servers stop promptly and consumers end with an error; a consumer
// that leaves mid-stream stops its requests and the servers stop afterwards.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "sluice/distribute/service.h"
#include "tests/distribute/service/service_test_util.h"

namespace sluice::service {
namespace service_shutdown_test_file {
namespace {

// Never drained in a test. Not INT64_MAX: RangeNode::cardinality overflows there (UBSan).
constexpr int64_t kEndlessRange = int64_t{1} << 40;

using testing::Cluster;
using testing::DrainIterator;
using testing::LogLines;

TEST(ServiceShutdownTest, ServersStopWithAConsumerConnectedAndTheConsumerEnds) {
  Cluster cluster = Cluster::Start(2);
  Dataset<int64_t> endless =
      Range(0, kEndlessRange).Distribute(cluster.Options(ProcessingMode::kParallelEpochs));
  Iterator<int64_t> it = endless.MakeIterator();
  testing::Drained<int64_t> before = DrainIterator(it, 100);
  EXPECT_EQ(before.values.size(), 100u);
  for (auto& worker : cluster.workers) worker->Stop();
  cluster.dispatcher->Stop();
  // Whatever was buffered, then the lost workers and dispatcher as errors, then the end.
  testing::Drained<int64_t> after = DrainIterator(it, 1000000);
  EXPECT_TRUE(after.ended);
  ASSERT_FALSE(after.errors.empty());
  for (const absl::Status& error : after.errors) {
    EXPECT_EQ(error.code(), absl::StatusCode::kUnavailable) << error;
  }
}

TEST(ServiceShutdownTest, AConsumerLeavingMidStreamLetsTheServersStop) {
  Cluster cluster = Cluster::Start(2);
  {
    Dataset<int64_t> endless =
        Range(0, kEndlessRange).Distribute(cluster.Options(ProcessingMode::kDistributedEpoch, "left"));
    Iterator<int64_t> it = endless.MakeIterator();
    testing::Drained<int64_t> some = DrainIterator(it, 50);
    EXPECT_EQ(some.values.size(), 50u);
  }  // the iterator goes: its network thread stops and joins
  for (auto& worker : cluster.workers) worker->Stop();  // producers blocked on full buffers stop too
  cluster.dispatcher->Stop();
}

// Job GC: the consumer's goodbye cancels the iteration at once; its workers stop the tasks and drop
// their buffers; a new consumer of the name starts the iteration afresh.
TEST(ServiceShutdownTest, AConsumerLeavingMidStreamCancelsItsTasksAndTheNextConsumerStartsAfresh) {
  LogLines worker_log;
  WorkerConfig config;
  config.log = worker_log.Sink();
  Cluster cluster = Cluster::Start(2, config);
  const Dataset<int64_t> endless =
      Range(0, kEndlessRange).Distribute(cluster.Options(ProcessingMode::kDistributedEpoch, "gc"));
  {
    Iterator<int64_t> it = endless.MakeIterator();
    EXPECT_EQ(DrainIterator(it, 50).values.size(), 50u);
    // Both workers run their task (one never delivered would be dropped, not cancelled).
    ASSERT_TRUE(worker_log.WaitFor(") started", 2)) << worker_log.Text();
  }
  ASSERT_TRUE(worker_log.WaitFor("cancelled by the dispatcher", 2)) << worker_log.Text();
  // The same name again, from a dataset built anew (its first pass reads iteration 0, as the first
  // consumer's did): iteration 0 from the start, element 0 included.
  const Dataset<int64_t> rebuilt =
      Range(0, kEndlessRange).Distribute(cluster.Options(ProcessingMode::kDistributedEpoch, "gc"));
  Iterator<int64_t> again = rebuilt.MakeIterator();
  testing::Drained<int64_t> fresh = DrainIterator(again, 2000);
  EXPECT_TRUE(fresh.errors.empty()) << fresh.errors.front();
  EXPECT_NE(std::find(fresh.values.begin(), fresh.values.end(), 0), fresh.values.end());
  EXPECT_EQ(worker_log.Count("cancelled by the dispatcher"), 2);  // the live iteration is left alone
}

}  // namespace
}  // namespace service_shutdown_test_file
}  // namespace sluice::service
