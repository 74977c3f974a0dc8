// Flow control: a consumer never has more than max_outstanding_requests elements buffered or requested.
#include <cstdint>
#include <memory>

#include "gtest/gtest.h"
#include "sluice/distribute/service.h"
#include "tests/distribute/service/service_test_util.h"

namespace sluice::service {
namespace service_flow_control_test_file {
namespace {

using testing::Cluster;
using testing::Drain;

TEST(ServiceFlowControlTest, OutstandingElementsNeverExceedTheBound) {
  Cluster cluster = Cluster::Start(2);
  ServiceOptions options = cluster.Options(ProcessingMode::kParallelEpochs);
  options.max_outstanding_requests = 5;
  options.stats = std::make_shared<ServiceClientStats>();
  testing::Drained<int64_t> got = Drain(Range(1000).Distribute(options));
  EXPECT_TRUE(got.ended);
  ASSERT_EQ(got.values.size(), 2000u);
  EXPECT_EQ(options.stats->elements.load(), 2000);
  EXPECT_GE(options.stats->max_outstanding.load(), 1);
  EXPECT_LE(options.stats->max_outstanding.load(), 5);
  // Workers answer at most what a request asks, so the bound on each request shows in the count too.
  EXPECT_GE(options.stats->requests.load(), 2000 / 5);
}

TEST(ServiceFlowControlTest, ElementsLargerThanTheByteBudgetStillArriveOneAtATime) {
  Cluster cluster = Cluster::Start(1);
  ServiceOptions options = cluster.Options(ProcessingMode::kParallelEpochs);
  options.max_request_bytes = 1;  // every element is larger: one per answer
  options.stats = std::make_shared<ServiceClientStats>();
  std::vector<std::string> values(20, std::string(100, 'x'));
  testing::Drained<std::string> got = Drain(FromVector(values).Distribute(options));
  EXPECT_TRUE(got.ended);
  EXPECT_EQ(got.values, values);
  EXPECT_GE(options.stats->requests.load(), 20);
}

}  // namespace
}  // namespace service_flow_control_test_file
}  // namespace sluice::service
