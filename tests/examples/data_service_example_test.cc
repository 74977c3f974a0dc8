// examples/data_service: the user function runs on the workers, the rest on the client.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "examples/data_service/functions.h"

namespace data_service_example {
namespace data_service_example_test_file {
namespace {

TEST(DataServiceExampleTest, OneWorkerGivesTheReferenceSequence) {
  ClientConfig config;
  config.mode = sluice::service::ProcessingMode::kDistributedEpoch;
  absl::StatusOr<std::vector<int64_t>> values = RunInProcess(config, /*workers=*/1, nullptr);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(*values, (std::vector<int64_t>{1, 2, 5, 10, 17}));
}

TEST(DataServiceExampleTest, ParallelEpochsGiveEachElementOncePerWorker) {
  ClientConfig config;
  config.mode = sluice::service::ProcessingMode::kParallelEpochs;
  config.elements = 4;
  config.scale = 3;
  absl::StatusOr<std::vector<int64_t>> values = RunInProcess(config, /*workers=*/2, nullptr);
  ASSERT_TRUE(values.ok()) << values.status();
  std::sort(values->begin(), values->end());
  EXPECT_EQ(*values, (std::vector<int64_t>{1, 1, 4, 4, 13, 13, 28, 28}));
}

TEST(DataServiceExampleTest, UnreachableDispatcherIsAnError) {
  ClientConfig config;
  config.dispatcher = "127.0.0.1:1";  // nothing listens on port 1 of loopback
  absl::StatusOr<std::vector<int64_t>> values = RunClient(config);
  EXPECT_FALSE(values.ok());
}

}  // namespace
}  // namespace data_service_example_test_file
}  // namespace data_service_example
