#include "sluice/ops/ignore_errors.h"

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "tests/ops/test_helpers.h"

namespace sluice {
namespace ignore_errors_test_file {
namespace {

using test_ops::Collect;

// Fails every element divisible by 3 (0, 3, 6, ...).
Dataset<int64_t> Flaky(int64_t n) {
  return Range(n).Map([](int64_t x) -> absl::StatusOr<int64_t> {
    if (x % 3 == 0) return absl::InvalidArgumentError("divisible by three");
    return x;
  });
}

TEST(IgnoreErrorsTest, DropsErrorsKeepsOrderAndCounts) {
  auto counter = std::make_shared<ErrorCounter>();
  auto ds = Flaky(10).IgnoreErrors(false, counter);
  auto got = Collect(ds);
  std::vector<int64_t> values;
  for (auto& x : got) {
    ASSERT_TRUE(x.ok()) << x.status();
    values.push_back(*x);
  }
  EXPECT_EQ(values, (std::vector<int64_t>{1, 2, 4, 5, 7, 8}));
  EXPECT_EQ(counter->count(), 4);
  Collect(ds);  // a second iterator adds to the same counter
  EXPECT_EQ(counter->count(), 8);
  EXPECT_EQ(ds.Cardinality(), 10);  // tf.data reports the input's cardinality
  EXPECT_NE(ds.DebugString().find("IgnoreErrors(log_warning=false)"), std::string::npos) << ds.DebugString();
}

TEST(IgnoreErrorsTest, WithoutCounterAndWithLogging) {
  auto got = Collect(Flaky(7).IgnoreErrors());
  EXPECT_EQ(got.size(), 4u);
  testing::internal::CaptureStderr();
  auto logged = Collect(Flaky(4).IgnoreErrors(/*log_warning=*/true));
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(logged.size(), 2u);
  EXPECT_NE(err.find("divisible by three"), std::string::npos) << err;
}

TEST(IgnoreErrorsTest, AllErrorsAndEmptyInputsEnd) {
  auto all_bad = Range(5).Map([](int64_t) -> absl::StatusOr<int64_t> { return absl::DataLossError("x"); });
  EXPECT_TRUE(Collect(all_bad.IgnoreErrors()).empty());
  EXPECT_TRUE(Collect(Range(0).IgnoreErrors()).empty());
}

TEST(IgnoreErrorsTest, CancelledErrorsAreNotIgnored) {
  auto ds = Range(3).Map([](int64_t x) -> absl::StatusOr<int64_t> {
    if (x == 1) return absl::CancelledError("stop");
    return x;
  });
  auto got = Collect(ds.IgnoreErrors());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[1].status().code(), absl::StatusCode::kCancelled);
}

TEST(IgnoreErrorsTest, CounterIsSharedAcrossConcurrentIterators) {
  auto counter = std::make_shared<ErrorCounter>();
  auto ds = Flaky(300).Prefetch(3).IgnoreErrors(false, counter);
  std::vector<std::thread> threads;
  std::vector<size_t> sizes(3, 0);
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&ds, &sizes, t] { sizes[t] = Collect(ds).size(); });
  }
  for (auto& t : threads) t.join();
  for (size_t s : sizes) EXPECT_EQ(s, 200u);
  EXPECT_EQ(counter->count(), 300);
}

TEST(IgnoreErrorsTest, DestroyedMidStream) {
  for (int round = 0; round < 10; ++round) {
    auto ds = Flaky(1000000).Prefetch(8).IgnoreErrors().Prefetch(2);
    Iterator<int64_t> it = ds.MakeIterator();
    for (int i = 0; i < round; ++i) ASSERT_TRUE(it.NextBlocking().ok());
  }
}

}  // namespace
}  // namespace ignore_errors_test_file
}  // namespace sluice
