#include "distribute/service/cpu_shares.h"

#include <optional>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace sluice::service {
namespace cpu_shares_test_file {
namespace {

int Of(const CpuShares::Share& share) { return share.value()->load(); }

TEST(CpuSharesTest, TasksSplitThePoolAndGetItBackWhenOthersLeave) {
  CpuShares shares(4);
  std::optional<CpuShares::Share> a(shares.Join());
  EXPECT_EQ(Of(*a), 4);
  CpuShares::Share b = shares.Join();
  EXPECT_EQ(Of(*a), 2);
  EXPECT_EQ(Of(b), 2);
  std::optional<CpuShares::Share> c(shares.Join());
  EXPECT_EQ(Of(*a) + Of(b) + Of(*c), 4);  // 2 + 1 + 1: the earliest task gets the remainder
  EXPECT_EQ(Of(*a), 2);
  a.reset();
  EXPECT_EQ(Of(b), 2);
  EXPECT_EQ(Of(*c), 2);
  c.reset();
  EXPECT_EQ(Of(b), 4);
}

TEST(CpuSharesTest, MoreTasksThanThreadsGetOneEach) {
  CpuShares shares(2);
  std::vector<CpuShares::Share> held;
  for (int i = 0; i < 5; ++i) held.push_back(shares.Join());
  for (const CpuShares::Share& share : held) EXPECT_EQ(Of(share), 1);
  while (held.size() > 1) held.pop_back();
  EXPECT_EQ(Of(held[0]), 2);
}

TEST(CpuSharesTest, AMovedShareLeavesOnce) {
  CpuShares shares(3);
  CpuShares::Share first = shares.Join();
  std::optional<CpuShares::Share> second(shares.Join());
  {
    CpuShares::Share moved(std::move(*second));
    second.reset();  // the moved-from share gives nothing back
    EXPECT_EQ(Of(first), 2);
    EXPECT_EQ(Of(moved), 1);
  }
  EXPECT_EQ(Of(first), 3);
}

TEST(CpuSharesTest, IdleTasksAreLeftOutOfTheSplitUntilTheyRunAgain) {
  CpuShares shares(4);
  CpuShares::Share a = shares.Join();
  CpuShares::Share b = shares.Join();
  CpuShares::Share c = shares.Join();
  b.SetIdle(true);  // b's buffer is full: a and c split the pool
  EXPECT_EQ(Of(a), 2);
  EXPECT_EQ(Of(c), 2);
  b.SetIdle(true);  // twice is once
  EXPECT_EQ(Of(a), 2);
  b.SetIdle(false);
  EXPECT_EQ(Of(a) + Of(b) + Of(c), 4);
  EXPECT_EQ(Of(a), 2);
  EXPECT_EQ(Of(b), 1);
  a.SetIdle(true);
  b.SetIdle(true);
  EXPECT_EQ(Of(c), 4);  // the only one running
  c.SetIdle(true);      // nobody runs: values stay
  EXPECT_EQ(Of(c), 4);
  a.SetIdle(false);
  EXPECT_EQ(Of(a), 4);
  EXPECT_EQ(Of(b), 2);  // idle shares keep their last value (b and c ran alone) until they run again
}

TEST(CpuSharesTest, ZeroThreadsCountAsOne) {
  CpuShares shares(0);
  EXPECT_EQ(shares.threads(), 1);
  EXPECT_EQ(Of(shares.Join()), 1);
}

}  // namespace
}  // namespace cpu_shares_test_file
}  // namespace sluice::service
