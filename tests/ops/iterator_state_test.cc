// IteratorState: per-node seeds, pass counters and resources of one iterator.
#include "sluice/ops/iterator_state.h"

#include <cstdint>
#include <memory>
#include <new>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "sluice/ops/op_node.h"

namespace sluice {
namespace iterator_state_test_file {
namespace {

using NodeKey = IteratorState::NodeKey;

// Nodes to key by: their addresses are all the state looks at, with their lifetimes.
NodePtr<int64_t> SomeNode() { return Range(3).node(); }

TEST(IteratorStateTest, SeedIsDrawnOnceAndDiffersBetweenStates) {
  NodePtr<int64_t> node = SomeNode();
  IteratorState a;
  IteratorState b;
  EXPECT_FALSE(a.Find(*node).has_value());
  const uint64_t seed = a.Seed({node.get(), node});
  EXPECT_EQ(a.Seed({node.get(), node}), seed);
  ASSERT_TRUE(a.Find(*node).has_value());
  EXPECT_EQ(a.Find(*node)->seed, std::optional<uint64_t>(seed));
  // 64 random bits drawn twice: equal by chance with probability 2^-64.
  EXPECT_NE(b.Seed({node.get(), node}), seed);
  EXPECT_FALSE(a.Find(*SomeNode()).has_value());
}

TEST(IteratorStateTest, PassesCountPerNodeFromFirstPass) {
  NodePtr<int64_t> x = SomeNode();
  NodePtr<int64_t> y = SomeNode();
  IteratorState state;
  EXPECT_EQ(state.first_pass(), 0u);
  EXPECT_EQ(state.BeginPass({x.get(), x}), 0u);
  EXPECT_EQ(state.BeginPass({x.get(), x}), 1u);
  EXPECT_EQ(state.BeginPass({y.get(), y}), 0u);
  EXPECT_EQ(state.BeginPass({x.get(), x}), 2u);
  EXPECT_EQ(state.Find(*x), (IteratorState::NodeRecord{std::nullopt, 3}));

  IteratorState epoch3(3);
  EXPECT_EQ(epoch3.BeginPass({x.get(), x}), 3u);
  EXPECT_EQ(epoch3.BeginPass({x.get(), x}), 4u);
  // Resuming a pass: later new passes come after it, never before one already begun.
  epoch3.ResumePass({x.get(), x}, 9);
  EXPECT_EQ(epoch3.BeginPass({x.get(), x}), 10u);
  epoch3.ResumePass({x.get(), x}, 1);
  EXPECT_EQ(epoch3.BeginPass({x.get(), x}), 11u);
  epoch3.ResumePass({y.get(), y}, 0);
  EXPECT_EQ(epoch3.BeginPass({y.get(), y}), 3u);  // a new entry starts at first_pass, resumed pass 0 is behind it
}

TEST(IteratorStateTest, ResourceIsMadeOncePerNode) {
  NodePtr<int64_t> x = SomeNode();
  NodePtr<int64_t> y = SomeNode();
  IteratorState state;
  int made = 0;
  auto make = [&made] {
    ++made;
    return std::make_shared<std::vector<int>>(1, made);
  };
  std::shared_ptr<std::vector<int>> first = state.Resource<std::vector<int>>({x.get(), x}, make);
  std::shared_ptr<std::vector<int>> again = state.Resource<std::vector<int>>({x.get(), x}, make);
  std::shared_ptr<std::vector<int>> other = state.Resource<std::vector<int>>({y.get(), y}, make);
  EXPECT_EQ(first, again);
  EXPECT_NE(first, other);
  EXPECT_EQ(made, 2);
}

// A node built per element (an Interleave's inner dataset) dies while the iterator runs; a new node at
// the same address must not inherit its seed, passes or resource.
TEST(IteratorStateTest, ADestroyedNodesEntryIsNotInheritedAtItsAddress) {
  IteratorState state;
  // Every node is built in the same storage, so each new node surely takes its predecessor's address
  // (a plain allocator may or may not reuse a block; ASan's quarantine never does).
  alignas(ops::RangeNode) unsigned char storage[sizeof(ops::RangeNode)];
  const OpNode* first_address = nullptr;
  for (int i = 0; i < 5; ++i) {
    std::shared_ptr<const OpNode> node(new (storage) ops::RangeNode(0, 3, 1),
                                       [](const OpNode* dead) { dead->~OpNode(); });
    if (first_address == nullptr) first_address = node.get();
    ASSERT_EQ(node.get(), first_address);
    EXPECT_EQ(state.BeginPass({node.get(), node}), 0u);
    state.Resource<int>({node.get(), node}, [i] { return std::make_shared<int>(i); });
    EXPECT_EQ(*state.Resource<int>({node.get(), node}, [] { return std::make_shared<int>(-1); }), i);
  }
}

TEST(IteratorStateTest, DestroyedNodesEntriesAreDropped) {
  IteratorState state;
  NodePtr<int64_t> kept = SomeNode();
  state.BeginPass({kept.get(), kept});
  std::vector<NodePtr<int64_t>> batch;
  for (int i = 0; i < 10000; ++i) {
    batch.push_back(SomeNode());
    state.Seed({batch.back().get(), batch.back()});
    if (batch.size() == 100) batch.clear();  // nodes die in groups while others are alive
  }
  EXPECT_LT(state.entries(), 400u);
  EXPECT_EQ(state.Find(*kept), (IteratorState::NodeRecord{std::nullopt, 1}));
}

// A node not owned by a shared_ptr is named by its address alone (it outlives the iterator).
TEST(IteratorStateTest, NodesOutsideSharedPtrsAreKeyedByAddress) {
  ops::RangeNode node(0, 3, 1);
  IteratorState state;
  EXPECT_EQ(state.BeginPass({&node, {}}), 0u);
  EXPECT_EQ(state.BeginPass({&node, {}}), 1u);
  EXPECT_EQ(state.Find(node), (IteratorState::NodeRecord{std::nullopt, 2}));
}

TEST(IteratorStateTest, ThreadSafe) {
  NodePtr<int64_t> shared = SomeNode();
  IteratorState state;
  std::vector<std::thread> threads;
  std::vector<std::vector<uint64_t>> passes(4);
  std::vector<uint64_t> seeds(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      seeds[t] = state.Seed({shared.get(), shared});
      for (int i = 0; i < 1000; ++i) {
        passes[t].push_back(state.BeginPass({shared.get(), shared}));
        NodePtr<int64_t> own = SomeNode();  // and entries coming and going meanwhile
        state.Seed({own.get(), own});
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<uint64_t> all;
  for (const auto& p : passes) all.insert(p.begin(), p.end());
  EXPECT_EQ(all.size(), 4000u);  // every pass number handed out once
  EXPECT_EQ(*all.rbegin(), 3999u);
  for (uint64_t s : seeds) EXPECT_EQ(s, seeds[0]);
}

TEST(IteratorStateTest, EveryIteratorContextHasItsOwn) {
  IteratorContext a;
  IteratorContext b;
  ASSERT_NE(a.state, nullptr);
  ASSERT_NE(b.state, nullptr);
  EXPECT_NE(a.state, b.state);
  EXPECT_EQ(a.state->first_pass(), 0u);
}

}  // namespace
}  // namespace iterator_state_test_file
}  // namespace sluice
