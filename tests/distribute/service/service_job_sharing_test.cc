// Job sharing and iterations: consumers naming one job read it together; pass k reads iteration k; a
// finished iteration ends at once; a name reused with another mode is refused.
#include <algorithm>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "sluice/distribute/service.h"
#include "tests/distribute/service/service_test_util.h"

namespace sluice::service {
namespace service_job_sharing_test_file {
namespace {

using testing::Cluster;
using testing::Drain;
using testing::DrainIterator;

TEST(ServiceJobSharingTest, TwoConsumersOfOneJobSeeDisjointSetsWhoseUnionIsEverything) {
  Cluster cluster = Cluster::Start(2);
  // Small requests, so that both consumers take part while the job runs.
  ServiceOptions options = cluster.Options(ProcessingMode::kDistributedEpoch, "shared");
  options.max_outstanding_requests = 4;
  Dataset<int64_t> ds = Range(2000).Distribute(options);
  Iterator<int64_t> a = ds.MakeIterator();
  Iterator<int64_t> b = ds.MakeIterator();
  testing::Drained<int64_t> got_a;
  testing::Drained<int64_t> got_b;
  std::thread reader([&] { got_b = DrainIterator(b); });
  got_a = DrainIterator(a);
  reader.join();
  EXPECT_TRUE(got_a.ended && got_b.ended);
  EXPECT_TRUE(got_a.errors.empty() && got_b.errors.empty());
  std::set<int64_t> seen_a(got_a.values.begin(), got_a.values.end());
  EXPECT_EQ(seen_a.size(), got_a.values.size());
  std::vector<int64_t> all = got_a.values;
  all.insert(all.end(), got_b.values.begin(), got_b.values.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), 2000u);  // disjoint: no element twice
  for (int64_t i = 0; i < 2000; ++i) ASSERT_EQ(all[i], i);
}

TEST(ServiceJobSharingTest, FinishedIterationOfANamedJobEndsAtOnce) {
  Cluster cluster = Cluster::Start(1);
  Dataset<int64_t> ds = Range(50).Distribute(cluster.Options(ProcessingMode::kParallelEpochs, "once"));
  testing::Drained<int64_t> first = Drain(ds);
  EXPECT_TRUE(first.ended);
  EXPECT_EQ(first.values.size(), 50u);
  testing::Drained<int64_t> again = Drain(ds);  // a new iterator: pass 0, iteration 0, finished
  EXPECT_TRUE(again.ended);
  EXPECT_TRUE(again.values.empty());
  EXPECT_TRUE(again.errors.empty()) << again.errors.front();
}

TEST(ServiceJobSharingTest, RepeatAfterDistributeReadsIterationKInPassK) {
  Cluster cluster = Cluster::Start(2);
  // Each pass of the Repeat is a new iteration of the job, split afresh: each element once per pass.
  testing::Drained<int64_t> got =
      Drain(Range(100).Distribute(cluster.Options(ProcessingMode::kDistributedEpoch, "epochs")).Repeat(3));
  EXPECT_TRUE(got.ended);
  EXPECT_TRUE(got.errors.empty()) << got.errors.front();
  ASSERT_EQ(got.values.size(), 300u);
  // Passes do not interleave: the first 100 are iteration 0, and so on.
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<int64_t> part(got.values.begin() + pass * 100, got.values.begin() + (pass + 1) * 100);
    std::sort(part.begin(), part.end());
    for (int64_t i = 0; i < 100; ++i) ASSERT_EQ(part[i], i) << "pass " << pass;
  }
  // An unnamed job: the Repeat's passes continue the consumer's own job.
  testing::Drained<int64_t> anonymous =
      Drain(Range(10).Distribute(cluster.Options(ProcessingMode::kParallelEpochs)).Repeat(2));
  EXPECT_TRUE(anonymous.ended);
  EXPECT_EQ(anonymous.values.size(), 40u);  // 2 workers x 10 elements x 2 passes
}

TEST(ServiceJobSharingTest, ReusingANameWithAnotherModeIsRefused) {
  Cluster cluster = Cluster::Start(1);
  testing::Drained<int64_t> first =
      Drain(Range(10).Distribute(cluster.Options(ProcessingMode::kParallelEpochs, "m")));
  EXPECT_EQ(first.values.size(), 10u);
  testing::Drained<int64_t> other =
      Drain(Range(10).Distribute(cluster.Options(ProcessingMode::kDistributedEpoch, "m")));
  EXPECT_TRUE(other.ended);
  EXPECT_TRUE(other.values.empty());
  ASSERT_EQ(other.errors.size(), 1u);
  EXPECT_EQ(other.errors[0].code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(other.errors[0].message().find("parallel_epochs"), std::string::npos) << other.errors[0];
}

}  // namespace
}  // namespace service_job_sharing_test_file
}  // namespace sluice::service
