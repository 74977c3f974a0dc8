// ValueRing: FIFO order across growth and wrap-around, storage kept in steady state, cells reused.
#include "sluice/ops/detail/value_ring.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sluice/ops/stream_mark.h"

namespace sluice {
namespace value_ring_test_file {
namespace {

using ops::detail_ring::ValueRing;

std::vector<int> Drain(ValueRing<int>* ring) {
  std::vector<int> out;
  while (!ring->empty()) {
    out.push_back(ring->front());
    ring->pop_front();
  }
  return out;
}

TEST(ValueRingTest, KeepsFifoOrderWhenItGrowsWhileWrapped) {
  ValueRing<int> ring;
  for (int i = 0; i < 3; ++i) ring.push_back(int{i});
  ring.pop_front();
  ring.pop_front();                                     // head is now at cell 2 of 4
  for (int i = 3; i < 12; ++i) ring.push_back(int{i});  // wraps, then grows twice
  EXPECT_EQ(ring.size(), 10u);
  EXPECT_EQ(ring.capacity(), 16u);
  std::vector<int> indexed;
  for (size_t k = 0; k < ring.size(); ++k) indexed.push_back(ring[k]);
  EXPECT_EQ(indexed, (std::vector<int>{2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(Drain(&ring), indexed);
}

TEST(ValueRingTest, SteadyStateKeepsItsStorage) {
  ValueRing<std::string> ring;
  std::string out;
  for (int i = 0; i < 1000; ++i) {
    ring.push_back(std::string(100, static_cast<char>('a' + i % 26)));
    if (ring.size() == 3) {
      out = std::move(ring.front());
      ring.pop_front();
      ASSERT_EQ(out, std::string(100, static_cast<char>('a' + (i - 2) % 26)));
    }
  }
  EXPECT_EQ(ring.capacity(), 4u);
  EXPECT_EQ(ring.size(), 2u);
}

TEST(ValueRingTest, ClearReleasesEveryCellAndKeepsCapacity) {
  ValueRing<std::string> ring;
  for (int i = 0; i < 5; ++i) ring.push_back(std::string(64, 'x'));
  ring.pop_front();  // its cell keeps the value until a push or clear
  ring.clear();
  EXPECT_TRUE(ring.empty());
  EXPECT_EQ(ring.capacity(), 8u);
  ring.push_back(std::string("a"));
  EXPECT_EQ(ring.front(), "a");
  for (size_t k = 1; k < ring.capacity(); ++k) {
    ring.emplace_back();
    EXPECT_TRUE(ring[k].empty()) << k;  // cleared cells come back empty
  }
}

TEST(ValueRingTest, EmplaceBackGivesADefaultValueInAReusedCell) {
  ValueRing<StreamMark> ring;
  MarkWriter writer;
  StreamMark mark;
  writer.Begin(&mark);
  writer.Write(int64_t{7});
  ring.push_back(std::move(mark));
  ring.pop_front();                                 // cell 0 still holds the mark; the head moves to cell 1
  for (int i = 0; i < 4; ++i) ring.emplace_back();  // cells 1, 2, 3, then 0 again
  for (size_t k = 0; k < ring.size(); ++k) EXPECT_TRUE(ring[k].empty()) << k;
  EXPECT_EQ(ring.capacity(), 4u);
}

}  // namespace
}  // namespace value_ring_test_file
}  // namespace sluice
