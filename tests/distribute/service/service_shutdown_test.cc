// Shutdown with clients connected: servers stop promptly and consumers end with an error; a consumer
// that leaves mid-stream stops its requests and the servers stop afterwards.
#include <cstdint>
#include <limits>

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

}  // namespace
}  // namespace service_shutdown_test_file
}  // namespace sluice::service
