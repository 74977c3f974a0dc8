// Errors a consumer sees, each naming what failed: an unserializable pipeline, a worker lacking a
// registration, an element type that does not match the job's, an unreachable dispatcher, and error
// elements of the pipeline itself.
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/distribute/service.h"
#include "sluice/ops/registration.h"
#include "tests/distribute/service/service_test_util.h"

namespace service_errors_test {
inline constexpr sluice::Function<int64_t(int64_t)> kNobodyRegisteredMe{
    "service_errors_test.nobody_registered_me"};
inline constexpr sluice::Function<absl::StatusOr<int64_t>(int64_t)> kFailOnTwo{
    "service_errors_test.fail_on_two"};
SLUICE_REGISTER_FUNCTION(kFailOnTwo, [](const sluice::FunctionArgs&) {
  return [](int64_t x) -> absl::StatusOr<int64_t> {
    if (x == 2) return absl::DataLossError("element two is broken");
    return x;
  };
});
}  // namespace service_errors_test

namespace sluice::service {
namespace service_errors_test_file {
namespace {

using testing::Cluster;
using testing::Drain;

TEST(ServiceErrorsTest, UnserializablePipelineFailsAtDistributeNamingTheOp) {
  ServiceOptions options;
  options.dispatcher_address = "127.0.0.1:1";  // never contacted
  testing::Drained<int64_t> got =
      Drain(Range(3).Map([](int64_t x) { return x; }, "a_lambda").Distribute(options));
  EXPECT_TRUE(got.ended);
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(got.errors[0].message().find("Map"), std::string::npos) << got.errors[0];
  EXPECT_NE(got.errors[0].message().find("Distribute"), std::string::npos) << got.errors[0];
}

TEST(ServiceErrorsTest, AMissingRegistrationOnTheWorkerFailsTheJobNamingIt) {
  Cluster cluster = Cluster::Start(1);
  testing::Drained<int64_t> got = Drain(Range(3)
                                            .Map(service_errors_test::kNobodyRegisteredMe)
                                            .Distribute(cluster.Options(ProcessingMode::kParallelEpochs)));
  EXPECT_TRUE(got.ended);
  EXPECT_TRUE(got.values.empty());
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(got.errors[0].message().find("service_errors_test.nobody_registered_me"), std::string::npos)
      << got.errors[0];
}

TEST(ServiceErrorsTest, ElementTypeMismatchOnASharedJobNamesBothTypes) {
  Cluster cluster = Cluster::Start(1);
  testing::Drained<int64_t> first =
      Drain(Range(4).Distribute(cluster.Options(ProcessingMode::kParallelEpochs, "t")));
  EXPECT_EQ(first.values.size(), 4u);
  testing::Drained<std::string> other =
      Drain(FromVector<std::string>({"a"}).Distribute(cluster.Options(ProcessingMode::kParallelEpochs, "t")));
  EXPECT_TRUE(other.ended);
  ASSERT_EQ(other.errors.size(), 1u);
  EXPECT_EQ(other.errors[0].code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(other.errors[0].message().find("int64"), std::string::npos) << other.errors[0];
  EXPECT_NE(other.errors[0].message().find("string"), std::string::npos) << other.errors[0];
}

TEST(ServiceErrorsTest, UnreachableDispatcherIsAnErrorThenTheEnd) {
  Cluster cluster = Cluster::Start(0);
  ServiceOptions options = cluster.Options(ProcessingMode::kParallelEpochs);
  const std::string address = options.dispatcher_address;
  cluster.dispatcher->Stop();  // a port that was just ours, now closed
  testing::Drained<int64_t> got = Drain(Range(3).Distribute(options));
  EXPECT_TRUE(got.ended);
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(got.errors[0].message().find(address), std::string::npos) << got.errors[0];
}

TEST(ServiceErrorsTest, PipelineErrorElementsArriveAsErrorElementsAndReadingGoesOn) {
  Cluster cluster = Cluster::Start(1);
  testing::Drained<int64_t> got = Drain(Range(5)
                                            .Map(service_errors_test::kFailOnTwo)
                                            .Distribute(cluster.Options(ProcessingMode::kParallelEpochs)));
  EXPECT_TRUE(got.ended);
  EXPECT_EQ(got.values, (std::vector<int64_t>{0, 1, 3, 4}));
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_EQ(got.errors[0].code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(got.errors[0].message().find("element two is broken"), std::string::npos) << got.errors[0];
}

}  // namespace
}  // namespace service_errors_test_file
}  // namespace sluice::service
