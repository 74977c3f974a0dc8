// DistributedIterator checkpoints (docs/checkpoint.md, "Distributed iterators"): save at a consumed step,
// restore on the same or another number of replicas, and get exactly the steps not consumed.
#include "sluice/distribute/detail/distributed_checkpoint.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/distribute.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "sluice/io/tensor.h"
#include "sluice/ops/dataset.h"
#include "tests/test_util.h"

namespace sluice::distributed_checkpoint_test {
namespace {

using ::testing::HasSubstr;
using Batch = std::vector<int64_t>;
using Step = std::vector<Batch>;  // one piece per local replica

// Whole steps until the end (at most `limit`); an error step is recorded as one piece holding -1 - code.
std::vector<Step> TakeSteps(DistributedIterator<Batch>& it, size_t limit = 100000) {
  std::vector<Step> steps;
  while (steps.size() < limit) {
    auto next = it.NextBlocking();
    if (!next.ok()) {
      steps.push_back({{-1 - static_cast<int64_t>(next.status().code())}});
      continue;
    }
    if (!next->has_value()) break;
    steps.push_back((*next)->LocalResults());
  }
  return steps;
}

// The global batch of each step: its pieces joined in replica order.
std::vector<Batch> GlobalBatches(const std::vector<Step>& steps) {
  std::vector<Batch> out;
  for (const Step& step : steps) {
    Batch& global = out.emplace_back();
    for (const Batch& piece : step) global.insert(global.end(), piece.begin(), piece.end());
  }
  return out;
}

std::vector<Step> Concat(std::vector<Step> a, const std::vector<Step>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// An unseeded Shuffle: a restore must reuse the saved seed, so only the saving iterator's own
// continuation can say what comes next.
Dataset<Batch> ShuffledBatches(int64_t n, int64_t batch, bool drop_remainder) {
  return Range(n)
      .Shuffle(40)
      .Map([](int64_t x) { return x * 3; }, "times_three")
      .BatchVectors(batch, drop_remainder);
}

// Cut after `cut` steps: the restored iterator yields what the saving one goes on to yield.
void CheckSameReplicas(const MirroredStrategy& strategy, const Dataset<Batch>& input, size_t cut,
                       DistributeOptions options = {}) {
  SCOPED_TRACE(absl::StrCat("cut after ", cut, " steps"));
  DistributedDataset<Batch> dist = strategy.DistributeDataset(input, options);
  DistributedIterator<Batch> it = dist.MakeIterator();
  std::vector<Step> prefix = TakeSteps(it, cut);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  std::vector<Step> live = TakeSteps(it);
  absl::StatusOr<DistributedIterator<Batch>> restored = dist.RestoreIterator(*state);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(TakeSteps(*restored), live);
  EXPECT_GT(prefix.size() + live.size(), 0u);
}

TEST(DistributedCheckpointTest, WholeStepSaveRestoresTheStepsNotConsumed) {
  MirroredStrategy strategy(2);
  for (size_t cut : {0, 1, 5, 12, 24, 25, 40})
    CheckSameReplicas(strategy, ShuffledBatches(200, 8, false), cut);
  // Deep per-replica buffers, so the producer is far ahead (or finished) at the save.
  DistributeOptions deep;
  deep.prefetch_per_replica = 16;
  for (size_t cut : {0, 3, 10}) CheckSameReplicas(strategy, ShuffledBatches(97, 8, false), cut, deep);
}

TEST(DistributedCheckpointTest, StepsMatchAnUninterruptedRun) {
  MirroredStrategy strategy(3);
  DistributedDataset<Batch> dist =
      strategy.DistributeDataset(Range(100).Shuffle(30, 7).BatchVectors(9, /*drop_remainder=*/false));
  std::vector<Step> full;
  {
    DistributedIterator<Batch> it = dist.MakeIterator();
    full = TakeSteps(it);
  }
  ASSERT_EQ(full.size(), 12u);
  // A fresh dataset object: as a new process would build it. Each iterator is the first epoch.
  DistributedDataset<Batch> again =
      strategy.DistributeDataset(Range(100).Shuffle(30, 7).BatchVectors(9, /*drop_remainder=*/false));
  DistributedIterator<Batch> it = again.MakeIterator();
  std::vector<Step> prefix = TakeSteps(it, 4);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  DistributedDataset<Batch> fresh =
      strategy.DistributeDataset(Range(100).Shuffle(30, 7).BatchVectors(9, /*drop_remainder=*/false));
  absl::StatusOr<DistributedIterator<Batch>> restored = fresh.RestoreIterator(*state);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(Concat(prefix, TakeSteps(*restored)), full);
}

TEST(DistributedCheckpointTest, TwoSavesFromOneIteratorAndASaveFromACoroutine) {
  MirroredStrategy strategy(2);
  DistributedDataset<Batch> dist = strategy.DistributeDataset(ShuffledBatches(150, 6, false));
  DistributedIterator<Batch> it = dist.MakeIterator();
  TakeSteps(it, 3);
  absl::StatusOr<std::string> first = it.SaveBlocking();
  ASSERT_TRUE(first.ok()) << first.status();
  std::vector<Step> between = TakeSteps(it, 7);
  absl::StatusOr<std::string> second =
      SyncWait([](DistributedIterator<Batch>* iterator) -> Task<absl::StatusOr<std::string>> {
        co_return co_await iterator->Save();
      }(&it));
  ASSERT_TRUE(second.ok()) << second.status();
  std::vector<Step> rest = TakeSteps(it);
  auto from_first = dist.RestoreIterator(*first);
  auto from_second = dist.RestoreIterator(*second);
  ASSERT_TRUE(from_first.ok() && from_second.ok());
  EXPECT_EQ(TakeSteps(*from_first), Concat(between, rest));
  EXPECT_EQ(TakeSteps(*from_second), rest);
}

// 2 -> 4 and 4 -> 2 replicas (and 3 -> 1): the restored iterator splits the saved global batches by its own
// rule, so the global batches are those the saving iterator goes on to yield.
TEST(DistributedCheckpointTest, RestoresOnAnotherNumberOfReplicasWithTheSameGlobalBatches) {
  for (auto [from, to] : std::vector<std::pair<int, int>>{{2, 4}, {4, 2}, {3, 1}, {1, 3}}) {
    for (bool drop_remainder : {false, true}) {
      for (size_t cut : {0, 2, 9}) {
        SCOPED_TRACE(
            absl::StrCat(from, " -> ", to, " replicas, drop_remainder ", drop_remainder, ", cut ", cut));
        const Dataset<Batch> input = ShuffledBatches(170, 12, drop_remainder);
        DistributedDataset<Batch> saving = MirroredStrategy(from).DistributeDataset(input);
        DistributedIterator<Batch> it = saving.MakeIterator();
        TakeSteps(it, cut);
        absl::StatusOr<std::string> state = it.SaveBlocking();
        ASSERT_TRUE(state.ok()) << state.status();
        std::vector<Step> live = TakeSteps(it);
        DistributedDataset<Batch> restoring = MirroredStrategy(to).DistributeDataset(input);
        absl::StatusOr<DistributedIterator<Batch>> restored = restoring.RestoreIterator(*state);
        ASSERT_TRUE(restored.ok()) << restored.status();
        std::vector<Step> steps = TakeSteps(*restored);
        EXPECT_EQ(GlobalBatches(steps), GlobalBatches(live));
        for (const Step& step : steps) EXPECT_EQ(step.size(), static_cast<size_t>(to));
      }
    }
  }
}

// Compact checkpoints on, with `prefetch_per_replica` steps queued per replica.
DistributeOptions CompactOptions(int prefetch_per_replica) {
  DistributeOptions options;
  options.iterator_options.compact_checkpoints = true;
  options.prefetch_per_replica = prefetch_per_replica;
  return options;
}

// Compact checkpoints: the state holds the input's position at the consumed step (a compact state of the
// input pipeline), not the steps queued after it, and restores exactly on the same or another number of
// replicas. Deep per-replica queues keep many steps queued at each save.
TEST(DistributedCheckpointTest, CompactStatesHoldNoStepsAndRestoreExactly) {
  const DistributeOptions compact = CompactOptions(/*prefetch_per_replica=*/16);
  const Dataset<Batch> input =
      Range(400)
          .Shuffle(50)
          .Map([](int64_t x) { return x * 3; }, 2, /*deterministic=*/true, "times_three")
          .BatchVectors(12, /*drop_remainder=*/false)
          .Prefetch(4);
  MirroredStrategy strategy(2);
  for (size_t cut : {0, 1, 7, 20, 33, 34}) {
    CheckSameReplicas(strategy, input, cut, compact);
    DistributedIterator<Batch> it = strategy.DistributeDataset(input, compact).MakeIterator();
    TakeSteps(it, cut);
    absl::StatusOr<std::string> state = it.SaveBlocking();
    ASSERT_TRUE(state.ok()) << state.status();
    EXPECT_LT(state->size(), 1024u) << "cut " << cut;
    absl::StatusOr<std::string_view> body = distribute::UnframeDistributedCheckpoint(*state);
    ASSERT_TRUE(body.ok()) << body.status();
    absl::StatusOr<distribute::DistributedCheckpoint<Batch>> saved =
        distribute::DecodeDistributedCheckpointBody<Batch>(*body);
    ASSERT_TRUE(saved.ok()) << saved.status();
    EXPECT_TRUE(saved->steps.empty()) << "cut " << cut << ": " << saved->steps.size() << " steps saved";
    EXPECT_EQ(saved->consumed_steps, static_cast<int64_t>(cut));
  }
  for (auto [from, to] : std::vector<std::pair<int, int>>{{2, 3}, {3, 1}}) {
    SCOPED_TRACE(absl::StrCat(from, " -> ", to, " replicas"));
    DistributedIterator<Batch> it = MirroredStrategy(from).DistributeDataset(input, compact).MakeIterator();
    TakeSteps(it, 5);
    absl::StatusOr<std::string> state = it.SaveBlocking();
    ASSERT_TRUE(state.ok()) << state.status();
    std::vector<Step> live = TakeSteps(it);
    absl::StatusOr<DistributedIterator<Batch>> restored =
        MirroredStrategy(to).DistributeDataset(input, compact).RestoreIterator(*state);
    ASSERT_TRUE(restored.ok()) << restored.status();
    EXPECT_EQ(GlobalBatches(TakeSteps(*restored)), GlobalBatches(live));
  }
}

// Adds how many elements it has seen: its output depends on its state.
struct RunningOffset {
  int64_t seen = 0;
  int64_t operator()(int64_t x) { return x * 1000 + seen++; }
};

// Compact mode with a pipeline it refuses (a function declared Stateful: a mark holds no function state):
// the distributed save writes the full state, which restores exactly.
TEST(DistributedCheckpointTest, CompactOptionOnAPipelineCompactModeRefusesSavesTheFullState) {
  const DistributeOptions compact = CompactOptions(/*prefetch_per_replica=*/4);
  const Dataset<Batch> input =
      Range(120)
          .Map(Stateful(
              RunningOffset{}, [](const RunningOffset& f) { return std::to_string(f.seen); },
              [](RunningOffset& f, std::string_view state) { f.seen = std::stoll(std::string(state)); }))
          .BatchVectors(6);
  MirroredStrategy strategy(2);
  for (size_t cut : {0, 3, 9}) CheckSameReplicas(strategy, input, cut, compact);
}

TEST(DistributedCheckpointTest, ErrorStepsAreSavedAsErrors) {
  MirroredStrategy strategy(2);
  Dataset<Batch> input = Range(60)
                             .Map([](int64_t x) -> absl::StatusOr<int64_t> {
                               if (x % 13 == 5) return absl::InvalidArgumentError("thirteen");
                               return x;
                             })
                             .BatchVectors(4);
  for (size_t cut : {0, 1, 2, 6}) {
    CheckSameReplicas(strategy, input, cut);
    DistributedIterator<Batch> it = strategy.DistributeDataset(input).MakeIterator();
    TakeSteps(it, cut);
    absl::StatusOr<std::string> state = it.SaveBlocking();
    ASSERT_TRUE(state.ok());
    std::vector<Step> live = TakeSteps(it);
    auto restored = MirroredStrategy(3).DistributeDataset(input).RestoreIterator(*state);
    ASSERT_TRUE(restored.ok()) << restored.status();
    EXPECT_EQ(GlobalBatches(TakeSteps(*restored)), GlobalBatches(live));
  }
}

TEST(DistributedCheckpointTest, PerReplicaSaveNeedsEveryReplicaAtTheSameStep) {
  MirroredStrategy strategy(2);
  DistributeOptions options;
  options.prefetch_per_replica = 4;
  DistributedDataset<Batch> dist = strategy.DistributeDataset(Range(80).BatchVectors(4), options);
  DistributedIterator<Batch> it = dist.MakeIterator();
  ReplicaIterator<Batch> r0 = it.Replica(0);
  ReplicaIterator<Batch> r1 = it.Replica(1);
  auto take = [](ReplicaIterator<Batch>& r, int n) {
    std::vector<Batch> out;
    for (int i = 0; i < n; ++i) {
      auto next = r.NextBlocking();
      if (!next.ok() || !next->has_value()) break;
      out.push_back(**next);
    }
    return out;
  };
  std::vector<Batch> got0 = take(r0, 3);
  std::vector<Batch> got1 = take(r1, 1);
  absl::StatusOr<std::string> refused = it.SaveBlocking();
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("replica 0 at step 3, replica 1 at step 1"));
  // The refused save lost nothing: each replica goes on with its own next piece.
  for (const Batch& b : take(r1, 2)) got1.push_back(b);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  // One thread takes both replicas' pieces in turn: a replica left behind would hold the producer.
  for (int guard = 0; guard < 100; ++guard) {
    std::vector<Batch> a = take(r0, 1);
    std::vector<Batch> b = take(r1, 1);
    if (a.empty() && b.empty()) break;
    got0.insert(got0.end(), a.begin(), a.end());
    got1.insert(got1.end(), b.begin(), b.end());
  }
  ASSERT_EQ(got0.size(), 20u);
  ASSERT_EQ(got1.size(), 20u);
  for (size_t s = 0; s < got0.size(); ++s) {
    const auto first = static_cast<int64_t>(4 * s);
    EXPECT_EQ(got0[s], (Batch{first, first + 1}));
    EXPECT_EQ(got1[s], (Batch{first + 2, first + 3}));
  }
  absl::StatusOr<DistributedIterator<Batch>> restored = dist.RestoreIterator(*state);
  ASSERT_TRUE(restored.ok()) << restored.status();
  std::vector<Step> steps = TakeSteps(*restored);
  ASSERT_EQ(steps.size(), 17u);
  EXPECT_EQ(steps.front(), (Step{{12, 13}, {14, 15}}));
}

TEST(DistributedCheckpointTest, FromFunctionRestoresOnTheSameAndAnotherNumberOfReplicas) {
  auto make = [](int replicas) {
    return MirroredStrategy(replicas).DistributeDatasetsFromFunction(
        [](const InputContext&) { return Range(50).Shuffle(10).BatchVectors(3); });
  };
  for (auto [from, to] : std::vector<std::pair<int, int>>{{2, 2}, {2, 3}, {3, 2}}) {
    for (size_t cut : {0, 2, 5}) {
      SCOPED_TRACE(absl::StrCat(from, " -> ", to, ", cut ", cut));
      DistributedDataset<Batch> saving = make(from);
      DistributedIterator<Batch> it = saving.MakeIterator();
      TakeSteps(it, cut);
      absl::StatusOr<std::string> state = it.SaveBlocking();
      ASSERT_TRUE(state.ok()) << state.status();
      // The elements still to come, in order, without the empty fillers of a short last step.
      auto flatten = [](const std::vector<Step>& steps) {
        std::vector<Batch> out;
        for (const Step& step : steps) {
          for (const Batch& piece : step) {
            if (!piece.empty()) out.push_back(piece);
          }
        }
        return out;
      };
      std::vector<Batch> live = flatten(TakeSteps(it));
      absl::StatusOr<DistributedIterator<Batch>> restored = make(to).RestoreIterator(*state);
      ASSERT_TRUE(restored.ok()) << restored.status();
      EXPECT_EQ(flatten(TakeSteps(*restored)), live);
    }
  }
}

TEST(DistributedCheckpointTest, MultiWorkerStateRestoresOnTheSameWorker) {
  // Two workers without sharding: each input batch feeds two steps, so a save can fall inside one.
  DistributeOptions off;
  off.auto_shard_policy = AutoShardPolicy::kOff;
  MirroredStrategy worker1(2, 2, 1, nullptr);
  for (size_t cut : {0, 1, 2, 3, 7}) CheckSameReplicas(worker1, ShuffledBatches(90, 8, true), cut, off);
  DistributedIterator<Batch> it = worker1.DistributeDataset(ShuffledBatches(90, 8, true), off).MakeIterator();
  TakeSteps(it, 3);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  auto elsewhere =
      MirroredStrategy(4).DistributeDataset(ShuffledBatches(90, 8, true)).RestoreIterator(*state);
  EXPECT_EQ(elsewhere.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(elsewhere.status().message(), HasSubstr("saved on 2 workers (worker 1) with 2 replicas each"));
}

TEST(DistributedCheckpointTest, RestoredIteratorIsFollowedByTheNextEpoch) {
  auto make = [] { return MirroredStrategy(2).DistributeDataset(Range(40).Shuffle(40, 3).BatchVectors(4)); };
  std::vector<Step> epoch1;
  {
    DistributedDataset<Batch> dist = make();
    DistributedIterator<Batch> first = dist.MakeIterator();
    TakeSteps(first);
    DistributedIterator<Batch> second = dist.MakeIterator();
    epoch1 = TakeSteps(second);
  }
  DistributedDataset<Batch> dist = make();
  DistributedIterator<Batch> it = dist.MakeIterator();
  TakeSteps(it, 2);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok());
  DistributedDataset<Batch> resumed = make();
  absl::StatusOr<DistributedIterator<Batch>> restored = resumed.RestoreIterator(*state);
  ASSERT_TRUE(restored.ok());
  TakeSteps(*restored);
  DistributedIterator<Batch> next = resumed.MakeIterator();
  EXPECT_EQ(TakeSteps(next), epoch1);
}

TEST(DistributedCheckpointTest, ChangedPipelineAndCorruptStatesFailCleanly) {
  MirroredStrategy strategy(2);
  DistributedIterator<Batch> it =
      strategy.DistributeDataset(Range(64).Shuffle(16).BatchVectors(4)).MakeIterator();
  TakeSteps(it, 3);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok());
  auto changed = strategy.DistributeDataset(Range(64).Shuffle(8).BatchVectors(4)).RestoreIterator(*state);
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(changed.status().message(), HasSubstr("Shuffle"));
  DistributedDataset<Tensor> tensors = strategy.DistributeDataset(
      Range(64).Map([](int64_t x) { return Tensor::Scalar<int64_t>(x); }).Batch(4));
  auto other_type = tensors.RestoreIterator(*state);
  EXPECT_EQ(other_type.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(other_type.status().message(), HasSubstr("vector<int64>"));

  DistributedDataset<Batch> dist = strategy.DistributeDataset(Range(64).Shuffle(16).BatchVectors(4));
  for (size_t n = 0; n < state->size(); n += 1 + n / 16) {
    auto truncated = dist.RestoreIterator(state->substr(0, n));
    EXPECT_EQ(truncated.status().code(), absl::StatusCode::kDataLoss) << "truncated to " << n;
  }
  for (size_t bit = 0; bit < state->size() * 8; bit += 1 + bit / 64) {
    std::string flipped = *state;
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    auto restored = dist.RestoreIterator(flipped);
    EXPECT_FALSE(restored.ok()) << "bit " << bit;
  }
}

TEST(DistributedCheckpointTest, SaveToFileAndRestoreFromFile) {
  MirroredStrategy strategy(2);
  DistributedDataset<Batch> dist = strategy.DistributeDataset(ShuffledBatches(64, 4, false));
  DistributedIterator<Batch> it = dist.MakeIterator();
  TakeSteps(it, 5);
  const std::string path = testing_util::TempPath("distributed_checkpoint");
  ASSERT_TRUE(it.SaveToFileBlocking(path).ok());
  std::vector<Step> live = TakeSteps(it);
  absl::StatusOr<DistributedIterator<Batch>> restored = dist.RestoreIteratorFromFile(path);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(TakeSteps(*restored), live);
}

}  // namespace
}  // namespace sluice::distributed_checkpoint_test
