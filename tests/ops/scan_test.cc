#include "sluice/ops/scan.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "tests/ops/test_helpers.h"

namespace sluice {
namespace scan_test_file {
namespace {

using test_ops::Collect;
using test_ops::Values;

struct RunningSum {
  std::pair<int64_t, int64_t> operator()(const int64_t& sum, int64_t x) const { return {sum + x, sum + x}; }
};

TEST(ScanTest, RunningSumAsTfData) {
  // tf.data's documented example: range(10).scan(0, lambda s, x: (s + x, s + x)).
  auto ds = Range(10).Scan(int64_t{0}, RunningSum{}, "running_sum");
  EXPECT_EQ(Values(ds), (std::vector<int64_t>{0, 1, 3, 6, 10, 15, 21, 28, 36, 45}));
  EXPECT_EQ(ds.Cardinality(), 10);
  EXPECT_EQ(Range(3).Repeat().Scan(int64_t{0}, RunningSum{}).Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Range(3).Filter([](const int64_t&) { return true; }).Scan(int64_t{0}, RunningSum{}).Cardinality(),
            kUnknownCardinality);
  EXPECT_NE(ds.DebugString().find("Scan(f=\"running_sum\", initial_state=<8 bytes>)"), std::string::npos) << ds.DebugString();
}

TEST(ScanTest, StateAndOutputTypesDifferAndEveryIterationRestarts) {
  // State: the previous element as a string; output: "prev->cur".
  auto ds = Range(4).Scan(std::string("start"), [](const std::string& prev, int64_t x) {
    return std::make_pair(std::to_string(x), prev + "->" + std::to_string(x));
  });
  std::vector<std::string> expected = {"start->0", "0->1", "1->2", "2->3"};
  EXPECT_EQ(Values(ds), expected);
  EXPECT_EQ(Values(ds), expected);  // a new iterator starts from the initial state
  auto twice = Values(ds.Repeat(2));
  ASSERT_EQ(twice.size(), 8u);
  EXPECT_EQ(twice[4], "start->0");
}

TEST(ScanTest, ErrorsAreElementsAndKeepTheState) {
  auto input = Range(6).Map([](int64_t x) -> absl::StatusOr<int64_t> {
    if (x == 1) return absl::DataLossError("bad input");
    return x;
  });
  auto ds = input.Scan(int64_t{0}, [](const int64_t& sum, int64_t x) -> absl::StatusOr<std::pair<int64_t, int64_t>> {
    if (x == 3) return absl::InvalidArgumentError("rejected");
    if (x == 4) throw std::runtime_error("thrown");
    return std::make_pair(sum + x, sum + x);
  });
  auto got = Collect(ds);
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(*got[0], 0);
  EXPECT_EQ(got[1].status().code(), absl::StatusCode::kDataLoss);  // passed through, f not called
  EXPECT_EQ(*got[2], 2);
  EXPECT_EQ(got[3].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(got[3].status().message().find("Scan (element 3)"), std::string::npos) << got[3].status();
  EXPECT_EQ(got[4].status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(got[4].status().message().find("Scan (element 4)"), std::string::npos) << got[4].status();
  EXPECT_EQ(*got[5], 7);  // state 2 survived both failures: 2 + 5
}

TEST(ScanTest, DestroyedMidStream) {
  for (int round = 0; round < 10; ++round) {
    auto ds = Range(0, 1000000).Prefetch(4).Scan(int64_t{0}, RunningSum{}).Prefetch(2);
    Iterator<int64_t> it = ds.MakeIterator();
    int64_t expected = 0;
    for (int i = 0; i < round; ++i) {
      absl::StatusOr<std::optional<int64_t>> next = it.NextBlocking();
      ASSERT_TRUE(next.ok() && next->has_value());
      expected += i;
      EXPECT_EQ(**next, expected);
    }
  }
}

}  // namespace
}  // namespace scan_test_file
}  // namespace sluice
