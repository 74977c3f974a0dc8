// ServiceWorkerAgreement: multi-worker MirroredStrategy trainers agreeing on the end of the data through
// the dispatcher, each with its own connection as separate processes would have.
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
#include "sluice/engine/async_scope.h"
#include "sluice/engine/sync_wait.h"
#include "tests/distribute/service/service_test_util.h"

namespace sluice::service {
namespace service_agreement_test_file {
namespace {

using testing::Cluster;
using ::testing::HasSubstr;

struct TrainerRun {
  std::vector<std::vector<int64_t>> steps;  // per step: this worker's rows, its replicas' pieces joined
  absl::Status error;
};

// `workers` trainers as threads, each with its own agreement connection, each reading make(worker).
template <class Make>
std::vector<TrainerRun> RunTrainers(const std::string& dispatcher, int workers, AutoShardPolicy policy,
                                    Make make) {
  std::vector<TrainerRun> runs(static_cast<size_t>(workers));
  std::vector<std::jthread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      TrainerRun& run = runs[static_cast<size_t>(w)];
      absl::StatusOr<std::shared_ptr<ServiceWorkerAgreement>> agreement =
          ServiceWorkerAgreement::Connect(dispatcher, "trainers", workers);
      if (!agreement.ok()) {
        run.error = agreement.status();
        return;
      }
      MirroredStrategy strategy(/*replicas_per_worker=*/2, workers, w, *agreement);
      DistributeOptions options;
      options.auto_shard_policy = policy;
      DistributedIterator<std::vector<int64_t>> it =
          strategy.DistributeDataset(make(w), options).MakeIterator();
      for (int guard = 0; guard < 10000; ++guard) {
        auto next = it.NextBlocking();
        if (!next.ok()) {
          run.error = next.status();
          return;
        }
        if (!next->has_value()) return;
        std::vector<int64_t> rows;
        for (const std::vector<int64_t>& piece : (*next)->LocalResults())
          rows.insert(rows.end(), piece.begin(), piece.end());
        run.steps.push_back(std::move(rows));
      }
    });
  }
  threads.clear();  // joins
  return runs;
}

// OFF with uneven data: worker 0 has 3 batches, worker 1 has 7. Both step 7 times (worker 0's last four
// steps are empty), then see the end together.
TEST(ServiceAgreementTest, TrainersInSeparateConnectionsEndTogether) {
  Cluster cluster = Cluster::Start(0);
  std::vector<TrainerRun> runs = RunTrainers(cluster.dispatcher->address(), 2, AutoShardPolicy::kOff,
                                             [](int w) { return Range(w == 0 ? 12 : 28).BatchVectors(4); });
  ASSERT_TRUE(runs[0].error.ok()) << runs[0].error;
  ASSERT_TRUE(runs[1].error.ok()) << runs[1].error;
  EXPECT_EQ(runs[0].steps.size(), runs[1].steps.size());
  int64_t rows0 = 0, rows1 = 0;
  for (const auto& step : runs[0].steps) rows0 += static_cast<int64_t>(step.size());
  for (const auto& step : runs[1].steps) rows1 += static_cast<int64_t>(step.size());
  EXPECT_EQ(rows0, 12);
  EXPECT_EQ(rows1, 28);
}

// DATA: every trainer reads everything and keeps its share: each element once across both.
TEST(ServiceAgreementTest, DataPolicyDeliversEveryElementOnce) {
  Cluster cluster = Cluster::Start(0);
  std::vector<TrainerRun> runs = RunTrainers(cluster.dispatcher->address(), 2, AutoShardPolicy::kData,
                                             [](int) { return Range(37).BatchVectors(8); });
  std::vector<int64_t> seen;
  for (const TrainerRun& run : runs) {
    ASSERT_TRUE(run.error.ok()) << run.error;
    for (const auto& step : run.steps) seen.insert(seen.end(), step.begin(), step.end());
  }
  std::sort(seen.begin(), seen.end());
  ASSERT_EQ(seen.size(), 37u);
  for (int64_t i = 0; i < 37; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)], i);
}

TEST(ServiceAgreementTest, AnotherWorkerCountIsRefused) {
  Cluster cluster = Cluster::Start(0);
  auto two = ServiceWorkerAgreement::Connect(cluster.dispatcher->address(), "shared-name", 2);
  auto three = ServiceWorkerAgreement::Connect(cluster.dispatcher->address(), "shared-name", 3);
  ASSERT_TRUE(two.ok() && three.ok());
  // One whole round of "two" first, so the agreement exists among 2 workers before "three" asks (had
  // "three" arrived first, it would have made it among 3 and waited for a third worker).
  AsyncScope scope;
  absl::StatusOr<bool> first = false;
  scope.Spawn([](std::shared_ptr<ServiceWorkerAgreement> a, absl::StatusOr<bool>* out) -> Task<void> {
    *out = co_await a->AnyWorkerHasData(0, 0, 0, true);
  }(*two, &first));
  absl::StatusOr<bool> second = SyncWait((*two)->AnyWorkerHasData(1, 0, 0, false));
  scope.JoinBlocking();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(*second);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(*first);
  absl::StatusOr<bool> refused = SyncWait((*three)->AnyWorkerHasData(0, 0, 1, true));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("is among 2 workers; this trainer says 3"));
}

TEST(ServiceAgreementTest, AbandonedEpochFailsTheOthersRound) {
  Cluster cluster = Cluster::Start(0);
  auto a = ServiceWorkerAgreement::Connect(cluster.dispatcher->address(), "leaving", 2);
  auto b = ServiceWorkerAgreement::Connect(cluster.dispatcher->address(), "leaving", 2);
  ASSERT_TRUE(a.ok() && b.ok());
  AsyncScope scope;
  absl::StatusOr<bool> waiting = false;
  scope.Spawn([](std::shared_ptr<ServiceWorkerAgreement> agreement, absl::StatusOr<bool>* out) -> Task<void> {
    *out = co_await agreement->AnyWorkerHasData(0, 0, 5, true);
  }(*a, &waiting));
  (*b)->Abandon(1, 0);
  scope.JoinBlocking();
  EXPECT_EQ(waiting.status().code(), absl::StatusCode::kCancelled) << waiting.status();
  EXPECT_THAT(waiting.status().message(), HasSubstr("worker 1 left epoch 0"));
}

TEST(ServiceAgreementTest, UnreachableDispatcherIsUnavailable) {
  auto agreement = ServiceWorkerAgreement::Connect("127.0.0.1:1", "nobody", 2);
  EXPECT_EQ(agreement.status().code(), absl::StatusCode::kUnavailable) << agreement.status();
}

}  // namespace
}  // namespace service_agreement_test_file
}  // namespace sluice::service
