// parallel_epochs: every worker runs the whole pipeline; ops before Distribute
// run on the workers, the ones after it locally.
#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "gtest/gtest.h"
#include "sluice/distribute/service.h"
#include "sluice/ops/registration.h"
#include "tests/distribute/service/service_test_util.h"

namespace service_parallel_epochs_test {
inline constexpr sluice::Function<int64_t(int64_t)> kSquare{"service_parallel_epochs_test.square"};
SLUICE_REGISTER_FUNCTION(kSquare,
                         [](const sluice::FunctionArgs&) { return [](int64_t x) { return x * x; }; });
}  // namespace service_parallel_epochs_test

namespace sluice::service {
namespace service_parallel_epochs_test_file {
namespace {

using testing::Cluster;
using testing::Drain;

TEST(ServiceParallelEpochsTest, ReferenceExampleRunsTheMapOnTheWorker) {
  Cluster cluster = Cluster::Start(1);
  Dataset<int64_t> ds = Range(5)
                            .Map(service_parallel_epochs_test::kSquare)
                            .Distribute(cluster.Options(ProcessingMode::kParallelEpochs))
                            .Map([](int64_t x) { return x + 1; });
  testing::Drained<int64_t> got = Drain(ds);
  EXPECT_TRUE(got.ended);
  EXPECT_TRUE(got.errors.empty()) << got.errors.front();
  std::sort(got.values.begin(), got.values.end());
  EXPECT_EQ(got.values, (std::vector<int64_t>{1, 2, 5, 10, 17}));
}

TEST(ServiceParallelEpochsTest, ThreeWorkersYieldEachElementThreeTimes) {
  Cluster cluster = Cluster::Start(3);
  testing::Drained<int64_t> got =
      Drain(Range(100).Distribute(cluster.Options(ProcessingMode::kParallelEpochs)));
  EXPECT_TRUE(got.ended);
  EXPECT_TRUE(got.errors.empty()) << got.errors.front();
  ASSERT_EQ(got.values.size(), 300u);
  std::map<int64_t, int> counts;
  for (int64_t x : got.values) ++counts[x];
  ASSERT_EQ(counts.size(), 100u);
  for (const auto& [value, count] : counts) EXPECT_EQ(count, 3) << value;
  EXPECT_EQ(counts.begin()->first, 0);
  EXPECT_EQ(counts.rbegin()->first, 99);
}

}  // namespace
}  // namespace service_parallel_epochs_test_file
}  // namespace sluice::service
