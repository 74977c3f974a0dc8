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
#include "tests/ops/test_helpers.h"

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

TEST(IteratorStateTest, PassesCountPerNodeFromIndexZero) {
  NodePtr<int64_t> x = SomeNode();
  NodePtr<int64_t> y = SomeNode();
  IteratorState state;
  EXPECT_EQ(state.first_pass(), 0u);
  EXPECT_EQ(state.BeginPass({x.get(), x}), 0u);
  EXPECT_EQ(state.BeginPass({x.get(), x}), 1u);
  EXPECT_EQ(state.BeginPass({y.get(), y}), 0u);
  EXPECT_EQ(state.BeginPass({x.get(), x}), 2u);
  EXPECT_EQ(state.PassNumber(0), 0u);

  IteratorState epoch3(3);  // a DistributedDataset's fourth iterator
  EXPECT_EQ(epoch3.BeginPass({x.get(), x}), 0u);
  EXPECT_EQ(epoch3.PassNumber(0), 3u);
  EXPECT_EQ(epoch3.BeginPass({x.get(), x}), 1u);
  // A resumed pass: new passes continue after it, never before the counter.
  epoch3.ResumePass({x.get(), x}, 9);
  EXPECT_EQ(epoch3.BeginPass({x.get(), x}), 10u);
  epoch3.ResumePass({x.get(), x}, 1);
  EXPECT_EQ(epoch3.BeginPass({x.get(), x}), 11u);
  epoch3.ResumePass({y.get(), y}, 0);
  EXPECT_EQ(epoch3.BeginPass({y.get(), y}), 1u);
  // A rewound one (a compact mark older than the counter): new passes continue right after it.
  epoch3.RewindPass({x.get(), x}, 4);
  EXPECT_EQ(epoch3.BeginPass({x.get(), x}), 5u);
}

TEST(IteratorStateTest, PassNumbersAreDistinctAcrossIndicesAndEpochs) {
  IteratorState root(2);
  std::set<uint64_t> numbers;
  for (uint64_t index = 0; index < 50; ++index) numbers.insert(root.PassNumber(index));
  for (uint64_t outer = 0; outer < 20; ++outer) {
    std::shared_ptr<IteratorState> epoch = root.ForEpoch(outer);
    // Directly under the root, epoch e's first pass is first_pass + e, as a DistributedDataset's epochs.
    EXPECT_EQ(epoch->PassNumber(0), 2 + outer);
    // Epoch 0 directly under the root numbers as the root does (a node is either inside the Repeat or
    // outside it, so the two never meet unless one node is both).
    if (outer > 0) {
      numbers.insert(epoch->PassNumber(0));
      for (uint64_t index = 1; index < 5; ++index) numbers.insert(epoch->PassNumber(index));
    }
    for (uint64_t inner = 1; inner < 5; ++inner) numbers.insert(epoch->ForEpoch(inner)->PassNumber(0));
    // An inner Repeat's first epoch continues the enclosing epoch's first pass.
    EXPECT_EQ(epoch->ForEpoch(0)->PassNumber(0), epoch->PassNumber(0));
  }
  EXPECT_EQ(numbers.size(), 50u + 19 + 19 * 4 + 20 * 4);
}

TEST(IteratorStateTest, EpochsShareSeedsAndResourcesButNotPassCounters) {
  NodePtr<int64_t> x = SomeNode();
  IteratorState root;
  const uint64_t seed = root.Seed({x.get(), x});
  root.Resource<int>({x.get(), x}, [] { return std::make_shared<int>(7); });
  EXPECT_EQ(root.BeginPass({x.get(), x}), 0u);
  std::shared_ptr<IteratorState> epoch = root.ForEpoch(1);
  EXPECT_EQ(epoch->Seed({x.get(), x}), seed);
  EXPECT_EQ(*epoch->Resource<int>({x.get(), x}, [] { return std::make_shared<int>(-1); }), 7);
  EXPECT_EQ(epoch->BeginPass({x.get(), x}), 0u);
  EXPECT_EQ(epoch->BeginPass({x.get(), x}), 1u);
  EXPECT_EQ(root.BeginPass({x.get(), x}), 1u);
  EXPECT_EQ(epoch->Find(*x), (IteratorState::NodeRecord{seed, 2}));
  EXPECT_EQ(root.Find(*x), (IteratorState::NodeRecord{seed, 2}));
  // A seed drawn in an epoch is the whole iterator's.
  NodePtr<int64_t> y = SomeNode();
  EXPECT_EQ(root.Seed({y.get(), y}), epoch->Seed({y.get(), y}));
}

TEST(IteratorStateTest, AReusedEpochStateIsWhatForEpochMakes) {
  NodePtr<int64_t> x = SomeNode();
  IteratorState root(4);
  std::shared_ptr<IteratorState> outer = root.ForEpoch(2);
  std::shared_ptr<IteratorState> inner = outer->ForEpoch(0);
  inner->BeginPass({x.get(), x});
  inner->BeginPass({x.get(), x});
  inner->ReuseForEpoch(*outer, 5);
  EXPECT_EQ(inner->base(), outer->ForEpoch(5)->base());
  EXPECT_EQ(inner->PassNumber(3), outer->ForEpoch(5)->PassNumber(3));
  EXPECT_EQ(inner->BeginPass({x.get(), x}), 0u);  // counters start afresh
  // The depth follows the parent: one under the root numbers additively again.
  inner->ReuseForEpoch(root, 3);
  EXPECT_EQ(inner->base(), 7u);
}

// The bug that made pass numbers per epoch (property test seed 10, pipeline 1327): a parallel Map runs
// ahead of a Take through an inner Repeat and begins later inner epochs' shuffles. With one counter per
// node, the outer Repeat's next epoch began at a pass number that depended on how far it got, so the
// output differed from the same pipeline with a sequential Map, and from run to run.
TEST(IteratorStateTest, RunningAheadThroughAnInnerRepeatDoesNotChangeLaterEpochs) {
  auto pipeline = [](int64_t parallel_calls) {
    return Range(4)
        .Shuffle(4, /*seed=*/11)
        .Repeat(20)
        .Map([](int64_t v) { return v; }, {.num_parallel_calls = parallel_calls, .deterministic = true})
        .Take(4)
        .Repeat(5);
  };
  const std::vector<int64_t> expected = test_ops::Values(pipeline(0));
  ASSERT_EQ(expected.size(), 20u);
  for (int run = 0; run < 20; ++run) ASSERT_EQ(test_ops::Values(pipeline(8)), expected) << "run " << run;
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
