// MirroredStrategy over the data service: two trainers (multi-worker MirroredStrategy, one thread each)
// reading one shared job see each element once in all, because auto-shard applies OFF to a shared job;
// the static batch size is found through the Distribute boundary.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/distribute.h"
#include "sluice/distribute/service.h"
#include "tests/distribute/service/service_test_util.h"

namespace sluice::service {
namespace service_mirrored_test_file {
namespace {

using testing::Cluster;
using ::testing::HasSubstr;

TEST(ServiceMirroredTest, TwoTrainersOnASharedJobSeeEachElementOnceInAll) {
  constexpr int kTrainers = 2;
  constexpr int64_t kElements = 1000;
  Cluster cluster = Cluster::Start(2);
  const ServiceOptions options = cluster.Options(ProcessingMode::kDistributedEpoch, "shared_train");
  auto agreement = std::make_shared<InProcessWorkerAgreement>(kTrainers);
  std::vector<std::vector<int64_t>> seen(kTrainers);
  std::vector<std::string> stats(kTrainers);
  std::vector<absl::Status> errors(kTrainers);
  {
    std::vector<std::jthread> trainers;
    for (int w = 0; w < kTrainers; ++w) {
      trainers.emplace_back([&, w] {
        MirroredStrategy strategy(/*replicas_per_worker=*/2, kTrainers, w, agreement);
        DistributedDataset<std::vector<int64_t>> dataset =
            strategy.DistributeDataset(Range(kElements).Distribute(options).BatchVectors(10));
        stats[w] = dataset.stats();
        DistributedIterator<std::vector<int64_t>> it = dataset.MakeIterator();
        for (int guard = 0; guard < 10000; ++guard) {
          auto next = it.NextBlocking();
          if (!next.ok()) {
            errors[w] = next.status();
            return;
          }
          if (!next->has_value()) return;
          for (const std::vector<int64_t>& piece : (*next)->LocalResults()) {
            seen[w].insert(seen[w].end(), piece.begin(), piece.end());
          }
        }
      });
    }
  }
  std::vector<int64_t> all;
  for (int w = 0; w < kTrainers; ++w) {
    ASSERT_TRUE(errors[w].ok()) << errors[w];
    EXPECT_THAT(stats[w], HasSubstr("applied=OFF (shared data-service job 'shared_train')"));
    all.insert(all.end(), seen[w].begin(), seen[w].end());
  }
  std::sort(all.begin(), all.end());
  std::vector<int64_t> want(kElements);
  for (int64_t i = 0; i < kElements; ++i) want[i] = i;
  EXPECT_EQ(all, want);
}

TEST(ServiceMirroredTest, ExplicitShardingOfASharedJobIsRefused) {
  for (AutoShardPolicy policy : {AutoShardPolicy::kData, AutoShardPolicy::kFile}) {
    ServiceOptions options;
    options.processing_mode = ProcessingMode::kDistributedEpoch;
    options.dispatcher_address = "127.0.0.1:1";  // never contacted: the decision is made from the graph
    options.job_name = "shared";
    absl::StatusOr<distribute::ShardDecision> decision =
        distribute::DecideShardPolicy(*Range(10).Distribute(options).Batch(2).node(), policy, 2);
    ASSERT_FALSE(decision.ok());
    EXPECT_EQ(decision.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(decision.status().message(), HasSubstr("shared data-service job 'shared'"));
  }
}

TEST(ServiceMirroredTest, AnUnsharedJobIsShardedByData) {
  ServiceOptions options;
  options.processing_mode = ProcessingMode::kParallelEpochs;
  options.dispatcher_address = "127.0.0.1:1";
  absl::StatusOr<distribute::ShardDecision> decision = distribute::DecideShardPolicy(
      *Range(10).Distribute(options).Batch(2).node(), AutoShardPolicy::kAuto, 2);
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->applied, AutoShardPolicy::kData);
}

TEST(ServiceMirroredTest, StaticBatchSizeIsFoundThroughDistribute) {
  ServiceOptions options;
  options.processing_mode = ProcessingMode::kParallelEpochs;
  options.dispatcher_address = "127.0.0.1:1";
  EXPECT_EQ(
      distribute::FindStaticBatchSize(
          *Range(100).Batch(8, /*drop_remainder=*/true).Prefetch(2).Distribute(options).Prefetch(1).node()),
      std::optional<int64_t>(8));
  EXPECT_EQ(distribute::FindStaticBatchSize(*Range(100).Batch(8).Distribute(options).node()), std::nullopt);
  EXPECT_EQ(distribute::FindStaticBatchSize(*Range(100).Distribute(options).node()), std::nullopt);
}

}  // namespace
}  // namespace service_mirrored_test_file
}  // namespace sluice::service
