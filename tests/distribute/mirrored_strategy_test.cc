#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <stop_token>
#include <string>
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
#include "tests/ops/test_helpers.h"

namespace sluice {
namespace mirrored_strategy_test_file {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Batch = std::vector<int64_t>;
using Steps = std::vector<std::vector<Batch>>;

#if defined(SLUICE_SANITIZED_BUILD)
constexpr int kScale = 1;
#else
constexpr int kScale = 4;
#endif

// Every step of a whole-step pass; fails the test on an error step.
template <class B>
std::vector<std::vector<B>> AllSteps(const DistributedDataset<B>& dist) {
  std::vector<std::vector<B>> steps;
  DistributedIterator<B> it = dist.MakeIterator();
  for (int guard = 0; guard < 100000; ++guard) {
    auto next = it.NextBlocking();
    EXPECT_TRUE(next.ok()) << next.status();
    if (!next.ok() || !next->has_value()) break;
    steps.push_back((*next)->LocalResults());
  }
  return steps;
}

// AllSteps of int64 tensor batches (Range(n).Batch(g) stacks int64[g] tensors), as int vectors.
Steps IntSteps(const DistributedDataset<Tensor>& dist) {
  Steps steps;
  for (const std::vector<Tensor>& step : AllSteps(dist)) {
    for (const Tensor& piece : step) EXPECT_EQ(piece.shape().rank(), 1);
    steps.push_back(test_ops::IntBatches(step));
  }
  return steps;
}

TEST(MirroredStrategyTest, Shape) {
  MirroredStrategy strategy(3);
  EXPECT_EQ(strategy.num_replicas_in_sync(), 3);
  EXPECT_EQ(strategy.num_local_replicas(), 3);
  EXPECT_EQ(strategy.num_workers(), 1);
  EXPECT_EQ(strategy.worker_index(), 0);
  EXPECT_TRUE(strategy.status().ok());
  MirroredStrategy multi(2, 4, 3);
  EXPECT_EQ(multi.num_replicas_in_sync(), 8);
  EXPECT_EQ(multi.num_local_replicas(), 2);
}

// tf.distribute's guide: range(8).batch(4) over 3 replicas -> [0,1] [2,3] [] then [4,5] [6,7] [].
TEST(DistributeDatasetTest, DynamicSplitGuideExample) {
  MirroredStrategy strategy(3);
  auto dist = strategy.DistributeDataset(Range(8).Batch(4));
  EXPECT_EQ(IntSteps(dist), (Steps{{{0, 1}, {2, 3}, {}}, {{4, 5}, {6, 7}, {}}}));
  EXPECT_EQ(dist.Cardinality(), 2);
  EXPECT_EQ(dist.applied_shard_policy(), AutoShardPolicy::kOff);
  EXPECT_THAT(dist.stats(), HasSubstr("rebatch=dynamic"));
}

TEST(DistributeDatasetTest, PartialLastBatchSplitsIntoShortPieces) {
  MirroredStrategy strategy(2);
  EXPECT_EQ(IntSteps(strategy.DistributeDataset(Range(6).Batch(4))), (Steps{{{0, 1}, {2, 3}}, {{4}, {5}}}));
  // A last batch of one element over 3 replicas: the others get empty batches, the same step.
  MirroredStrategy three(3);
  EXPECT_EQ(IntSteps(three.DistributeDataset(Range(4).Batch(3))), (Steps{{{0}, {1}, {2}}, {{3}, {}, {}}}));
}

TEST(DistributeDatasetTest, StaticBatchUsesTfDistributeSizes) {
  MirroredStrategy strategy(2);
  auto dist = strategy.DistributeDataset(Range(15).Batch(7, /*drop_remainder=*/true));
  EXPECT_EQ(IntSteps(dist), (Steps{{{0, 1, 2, 3}, {4, 5, 6}}, {{7, 8, 9, 10}, {11, 12, 13}}}));
  EXPECT_THAT(dist.stats(), HasSubstr("static global_batch=7"));
  // G < N: the last replica gets an empty batch every step.
  MirroredStrategy three(3);
  EXPECT_EQ(IntSteps(three.DistributeDataset(Range(4).Batch(2, true).Prefetch(2))),
            (Steps{{{0}, {1}, {}}, {{2}, {3}, {}}}));
}

// Many (G, N): pieces follow the rule, every element is delivered once, in order.
TEST(DistributeDatasetTest, SplitRuleExactlyOnceInOrderForManyShapes) {
  for (int64_t g = 1; g <= 9; ++g) {
    for (int n = 1; n <= 5; ++n) {
      for (bool drop : {false, true}) {
        SCOPED_TRACE(testing::Message() << "G=" << g << " N=" << n << " drop=" << drop);
        const int64_t total = 23;
        MirroredStrategy strategy(n);
        auto steps = IntSteps(strategy.DistributeDataset(Range(total).Batch(g, drop)));
        const int64_t full = total / g;
        ASSERT_EQ(static_cast<int64_t>(steps.size()), drop ? full : full + (total % g != 0));
        std::vector<int64_t> seen;
        for (size_t s = 0; s < steps.size(); ++s) {
          ASSERT_EQ(static_cast<int>(steps[s].size()), n);
          const int64_t b = static_cast<int64_t>(s) < full ? g : total % g;
          for (int r = 0; r < n; ++r) {
            int64_t expected;
            if (drop) {
              expected = g / n + (r < g % n ? 1 : 0);  // tf.distribute: G mod N replicas get one more
            } else {
              const int64_t piece = (b + n - 1) / n;
              expected = std::max<int64_t>(0, std::min<int64_t>(piece, b - r * piece));
            }
            EXPECT_EQ(static_cast<int64_t>(steps[s][r].size()), expected) << "step " << s << " replica " << r;
            seen.insert(seen.end(), steps[s][r].begin(), steps[s][r].end());
          }
        }
        std::vector<int64_t> want;
        for (int64_t i = 0; i < (drop ? full * g : total); ++i) want.push_back(i);
        EXPECT_EQ(seen, want);
      }
    }
  }
}

TEST(DistributeDatasetTest, ElementSpecForVectorAndTensorBatches) {
  MirroredStrategy strategy(2);
  ElementSpec vec = strategy.DistributeDataset(Range(8).BatchVectors(4, true)).element_spec();
  EXPECT_EQ(vec.batch_size, 2);
  ASSERT_EQ(vec.components.size(), 1u);
  EXPECT_EQ(vec.components[0].dtype, DType::kInt64);
  EXPECT_THAT(vec.components[0].shape, ElementsAre(2));
  // Without drop_remainder partial batches are possible: unknown batch dimension.
  EXPECT_EQ(strategy.DistributeDataset(Range(8).BatchVectors(4)).element_spec().batch_size, -1);

  Tensor t = Tensor::Zeros(DType::kFloat32, Shape({4, 3}));
  auto tensors = FromVector<Tensor>({t, t});
  auto dist = strategy.DistributeDataset(tensors);
  auto it = dist.MakeIterator();
  ElementSpec spec = it.ElementSpec();
  EXPECT_EQ(spec.batch_size, -1);
  ASSERT_EQ(spec.components.size(), 1u);
  EXPECT_EQ(spec.components[0].dtype, DType::kFloat32);
  EXPECT_THAT(spec.components[0].shape, ElementsAre(-1, 3));
  auto step = it.NextBlocking();
  ASSERT_TRUE(step.ok() && step->has_value());
  EXPECT_EQ((**step)[0].shape(), Shape({2, 3}));
  EXPECT_EQ((**step)[1].shape(), Shape({2, 3}));
}

// The producer, stuck on full queues of error steps, must not keep ElementSpec() waiting.
TEST(DistributeDatasetTest, ElementSpecDoesNotWaitBehindErrors) {
  MirroredStrategy strategy(2);
  DistributeOptions options;
  options.prefetch_per_replica = 1;
  auto ds = Range(100)
                .Map([](int64_t) -> absl::StatusOr<int64_t> { return absl::DataLossError("no"); })
                .BatchVectors(2);
  auto it = strategy.DistributeDataset(ds, options).MakeIterator();
  ElementSpec spec = it.ElementSpec();
  EXPECT_TRUE(spec.components.empty());
  EXPECT_EQ(it.NextBlocking().status().code(), absl::StatusCode::kDataLoss);
}

TEST(DistributeDatasetTest, EmptyTensorPiecesKeepDtypeAndInnerShape) {
  MirroredStrategy strategy(3);
  Tensor t = Tensor::Zeros(DType::kInt32, Shape({1, 5}));
  auto it = strategy.DistributeDataset(FromVector<Tensor>({t})).MakeIterator();
  auto step = it.NextBlocking();
  ASSERT_TRUE(step.ok() && step->has_value());
  EXPECT_EQ((**step)[0].shape(), Shape({1, 5}));
  EXPECT_EQ((**step)[1].shape(), Shape({0, 5}));
  EXPECT_EQ((**step)[2].dtype(), DType::kInt32);
  EXPECT_EQ((**step)[2].shape(), Shape({0, 5}));
  auto end = it.NextBlocking();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
}

TEST(DistributedIteratorTest, ErrorElementsAreSteps) {
  MirroredStrategy strategy(2);
  auto ds = Range(8)
                .Map([](int64_t x) -> absl::StatusOr<int64_t> {
                  if (x == 5) return absl::DataLossError("bad record 5");
                  return x;
                })
                .BatchVectors(2);
  auto it = strategy.DistributeDataset(ds).MakeIterator();
  std::vector<std::string> log;
  for (int guard = 0; guard < 10; ++guard) {
    auto next = it.NextBlocking();
    if (!next.ok()) {
      log.push_back(std::string(next.status().message()));
      continue;
    }
    if (!next->has_value()) break;
    log.push_back(absl::StrCat((**next)[0].size() ? (**next)[0][0] : -1, "|", (**next)[1][0]));
  }
  ASSERT_EQ(log.size(), 4u);
  EXPECT_EQ(log[0], "0|1");
  EXPECT_EQ(log[1], "2|3");
  EXPECT_THAT(log[2], HasSubstr("bad record 5"));  // both replicas get the error in the same step
  EXPECT_EQ(log[3], "6|7");
}

TEST(DistributedIteratorTest, GetNextAsOptionalAndRangeFor) {
  MirroredStrategy strategy(2);
  auto dist = strategy.DistributeDataset(Range(4).BatchVectors(2));
  auto it = dist.MakeIterator();
  int steps = 0;
  while (std::optional<PerReplica<Batch>> step = it.GetNextAsOptional()) {
    EXPECT_EQ(step->size(), 2u);
    ++steps;
    ASSERT_LT(steps, 10);
  }
  EXPECT_EQ(steps, 2);
  EXPECT_TRUE(it.status().ok());
  EXPECT_FALSE(it.GetNextAsOptional().has_value());  // stays at the end, no error

  auto it2 = dist.MakeIterator();
  std::vector<int64_t> firsts;
  for (absl::StatusOr<PerReplica<Batch>> step : it2) {
    ASSERT_TRUE(step.ok());
    firsts.push_back((*step)[0][0]);
  }
  EXPECT_THAT(firsts, ElementsAre(0, 2));

  MirroredStrategy bad(0);
  auto broken = bad.DistributeDataset(Range(4).BatchVectors(2)).MakeIterator();
  EXPECT_FALSE(broken.GetNextAsOptional().has_value());
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(broken.status().message()), HasSubstr("replicas per worker"));
  EXPECT_FALSE(broken.GetNextAsOptional().has_value());
  EXPECT_TRUE(broken.status().ok() || broken.status().code() == absl::StatusCode::kInvalidArgument);
}

TEST(DistributedIteratorTest, BadPrefetchIsAnErrorStep) {
  MirroredStrategy strategy(2);
  DistributeOptions options;
  options.prefetch_per_replica = -3;
  auto dist = strategy.DistributeDataset(Range(4).BatchVectors(2), options);
  EXPECT_EQ(dist.status().code(), absl::StatusCode::kInvalidArgument);
  auto it = dist.MakeIterator();
  auto first = it.NextBlocking();
  EXPECT_EQ(first.status().code(), absl::StatusCode::kInvalidArgument);
  auto end = it.NextBlocking();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
}

TEST(DistributedIteratorTest, MixingWholeStepAndPerReplicaIsFailedPrecondition) {
  MirroredStrategy strategy(2);
  auto dist = strategy.DistributeDataset(Range(8).BatchVectors(2));
  auto it = dist.MakeIterator();
  ASSERT_TRUE(it.NextBlocking().ok());
  EXPECT_EQ(it.Replica(0).NextBlocking().status().code(), absl::StatusCode::kFailedPrecondition);
  auto it2 = dist.MakeIterator();
  ASSERT_TRUE(strategy.ReplicaIterator(it2, 1).NextBlocking().ok());
  EXPECT_EQ(it2.NextBlocking().status().code(), absl::StatusCode::kFailedPrecondition);
}

// Replicas on their own threads, at their own pace: each sees its pieces in step order, and together they
// see every element once.
TEST(ReplicaIteratorTest, ReplicaThreadsSeeAlignedSteps) {
  constexpr int kReplicas = 4;
  const int64_t total = 500 * kScale;
  MirroredStrategy strategy(kReplicas);
  auto it = strategy.DistributeDataset(Range(total).BatchVectors(6)).MakeIterator();
  std::vector<std::vector<Batch>> got(kReplicas);
  std::vector<absl::Status> errors(kReplicas);
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < kReplicas; ++r) {
      threads.emplace_back([&, r] {
        ReplicaIterator<Batch> mine = it.Replica(r);
        for (int guard = 0; guard < 100000; ++guard) {
          auto next = mine.NextBlocking();
          if (!next.ok()) {
            errors[r] = next.status();
            return;
          }
          if (!next->has_value()) return;
          got[r].push_back(std::move(**next));
        }
      });
    }
  }
  std::vector<int64_t> seen;
  for (int r = 0; r < kReplicas; ++r) {
    EXPECT_TRUE(errors[r].ok()) << errors[r];
    ASSERT_EQ(got[r].size(), got[0].size());
  }
  for (size_t s = 0; s < got[0].size(); ++s) {
    for (int r = 0; r < kReplicas; ++r) seen.insert(seen.end(), got[r][s].begin(), got[r][s].end());
  }
  ASSERT_EQ(static_cast<int64_t>(seen.size()), total);
  for (int64_t i = 0; i < total; ++i) ASSERT_EQ(seen[static_cast<size_t>(i)], i);
}

Task<absl::StatusOr<std::vector<Batch>>> DrainReplica(ReplicaIterator<Batch> replica) {
  std::vector<Batch> out;
  for (int guard = 0; guard < 100000; ++guard) {
    absl::StatusOr<std::optional<Batch>> next = co_await replica.Next();
    if (!next.ok()) co_return next.status();
    if (!next->has_value()) break;
    out.push_back(std::move(**next));
  }
  co_return out;
}

Task<absl::StatusOr<std::vector<std::vector<Batch>>>> DrainWhole(DistributedIterator<Batch>* it) {
  std::vector<std::vector<Batch>> out;
  for (int guard = 0; guard < 100000; ++guard) {
    absl::StatusOr<std::optional<PerReplica<Batch>>> next = co_await it->Next();
    if (!next.ok()) co_return next.status();
    if (!next->has_value()) break;
    out.push_back((*next)->LocalResults());
  }
  co_return out;
}

TEST(ReplicaIteratorTest, CoroutineAccess) {
  MirroredStrategy strategy(2);
  auto dist = strategy.DistributeDataset(Range(7).BatchVectors(4));
  auto it = dist.MakeIterator();
  auto whole = SyncWait(DrainWhole(&it));
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(*whole, (Steps{{{0, 1}, {2, 3}}, {{4, 5}, {6}}}));

  auto it2 = dist.MakeIterator();
  auto r1 = SyncWait(DrainReplica(it2.Replica(1)));
  auto r0 = SyncWait(DrainReplica(it2.Replica(0)));
  ASSERT_TRUE(r0.ok() && r1.ok());
  EXPECT_EQ(*r0, (std::vector<Batch>{{0, 1}, {4, 5}}));
  EXPECT_EQ(*r1, (std::vector<Batch>{{2, 3}, {6}}));
}

TEST(ReplicaIteratorTest, StoppedCoroutineIsCancelled) {
  MirroredStrategy strategy(2);
  DistributeOptions options;
  options.prefetch_per_replica = 4;  // the whole epoch fits, so replica 1 can finish while 0 stops
  auto it = strategy.DistributeDataset(Range(8).BatchVectors(2), options).MakeIterator();
  std::stop_source stop;
  stop.request_stop();
  auto r = SyncWait(DrainReplica(it.Replica(0)), stop.get_token());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
  auto w = SyncWait(DrainReplica(it.Replica(1)));  // the other replica still works
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(*w, (std::vector<Batch>{{1}, {3}, {5}, {7}}));
}

Task<absl::StatusOr<std::optional<Batch>>> NextOnce(ReplicaIterator<Batch> replica) {
  absl::StatusOr<std::optional<Batch>> got = co_await replica.Next();
  co_return got;
}

// Replica 0 never reads, so the producer stops on its full queue; replica 1 drains its queue and blocks.
// Destroying the iterator wakes replica 1 (thread and coroutine forms) with the end, and joins the producer.
TEST(DistributedIteratorTest, DestroyMidEpochWakesBlockedReplicas) {
  for (bool coroutine : {false, true}) {
    SCOPED_TRACE(coroutine ? "coroutine" : "thread");
    MirroredStrategy strategy(2);
    DistributeOptions options;
    options.prefetch_per_replica = 2;
    auto it = std::make_optional(
        strategy.DistributeDataset(Range(1000000).BatchVectors(2), options).MakeIterator());
    ReplicaIterator<Batch> blocked = it->Replica(1);
    std::atomic<int> received{0};
    std::atomic<bool> done{false};
    absl::StatusOr<std::optional<Batch>> last = absl::UnknownError("unset");
    std::jthread replica([&] {
      for (int guard = 0; guard < 1000; ++guard) {
        absl::StatusOr<std::optional<Batch>> next = coroutine ? SyncWait(NextOnce(blocked)) : blocked.NextBlocking();
        if (!next.ok() || !next->has_value()) {
          last = std::move(next);
          break;
        }
        received.fetch_add(1);
      }
      done.store(true);
    });
    // Wait (bounded) until replica 1 has taken the two steps the producer could push, and is waiting.
    for (int i = 0; i < 2000 && !(received.load() >= 2 && blocked.buffered() == 0); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(done.load());
    it.reset();  // destroys the iterator: stop, close, join
    replica.join();
    EXPECT_TRUE(done.load());
    ASSERT_TRUE(last.ok()) << last.status();
    EXPECT_FALSE(last->has_value());
    EXPECT_LE(received.load(), 3);  // the producer never ran ahead of replica 0's full queue
    auto after = blocked.NextBlocking();  // a copy outliving the iterator sees the end
    ASSERT_TRUE(after.ok());
    EXPECT_FALSE(after->has_value());
  }
}

// A live-element counter, to check that a slow replica bounds what the fan-out buffers.
std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};
struct Counted {
  int64_t value = 0;
  explicit Counted(int64_t v) : value(v) { Up(); }
  Counted(const Counted& other) : value(other.value) { Up(); }
  Counted(Counted&& other) noexcept : value(other.value) { Up(); }
  Counted& operator=(const Counted&) = default;
  Counted& operator=(Counted&&) = default;
  ~Counted() { g_live.fetch_sub(1); }
  static void Up() {
    int64_t now = g_live.fetch_add(1) + 1;
    int64_t peak = g_peak.load();
    while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
    }
  }
};

TEST(ReplicaIteratorTest, SlowAndFastReplicaBackpressureNoLossBoundedMemory) {
  constexpr int kReplicas = 2;
  constexpr int64_t kGlobal = 8;
  constexpr int64_t kPrefetch = 3;
  const int64_t total = 400 * kScale;
  g_live.store(0);
  g_peak.store(0);
  {
    MirroredStrategy strategy(kReplicas);
    DistributeOptions options;
    options.prefetch_per_replica = kPrefetch;
    auto ds = Range(total).Map([](int64_t x) { return Counted(x); }).Batch(kGlobal);
    auto it = strategy.DistributeDataset(ds, options).MakeIterator();
    std::vector<std::vector<int64_t>> got(kReplicas);
    std::atomic<int64_t> max_lead{0};
    std::atomic<int64_t> steps_done[kReplicas] = {0, 0};
    {
      std::vector<std::jthread> threads;
      for (int r = 0; r < kReplicas; ++r) {
        threads.emplace_back([&, r] {
          ReplicaIterator<std::vector<Counted>> mine = it.Replica(r);
          for (int guard = 0; guard < 100000; ++guard) {
            auto next = mine.NextBlocking();
            if (!next.ok() || !next->has_value()) return;
            for (const Counted& c : **next) got[r].push_back(c.value);
            int64_t mine_done = steps_done[r].fetch_add(1) + 1;
            int64_t other = steps_done[1 - r].load();
            int64_t lead = mine_done - other;
            int64_t seen = max_lead.load();
            while (lead > seen && !max_lead.compare_exchange_weak(seen, lead)) {
            }
            if (r == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));  // the slow replica
          }
        });
      }
    }
    // The fast replica can run ahead of the slow one by its queue plus the step in hand, no more.
    EXPECT_LE(max_lead.load(), kPrefetch + 2);
    std::vector<int64_t> all;
    for (int64_t step = 0; step * kGlobal < total; ++step) {
      for (int r = 0; r < kReplicas; ++r) {
        for (int64_t i = 0; i < kGlobal / kReplicas; ++i) {
          size_t at = static_cast<size_t>(step * (kGlobal / kReplicas) + i);
          if (at < got[r].size()) all.push_back(got[r][at]);
        }
      }
    }
    ASSERT_EQ(static_cast<int64_t>(all.size()), total);
    for (int64_t i = 0; i < total; ++i) ASSERT_EQ(all[static_cast<size_t>(i)], i);
  }
  // Buffered: kPrefetch pieces per replica, plus the producer's batch in hand and the one being collected,
  // plus what the consumers hold: a few global batches, independent of `total`.
  EXPECT_LE(g_peak.load(), (kPrefetch + 4) * kGlobal * 2);
  EXPECT_EQ(g_live.load(), 0);
}

TEST(DistributeDatasetsFromFunctionTest, UsesTheDatasetAsItIs) {
  MirroredStrategy strategy(3);
  InputContext seen;
  auto dist = strategy.DistributeDatasetsFromFunction([&seen](const InputContext& context) {
    seen = context;
    int64_t per_replica = context.GetPerReplicaBatchSize(6).value_or(-1);
    return Range(10).Batch(per_replica);
  });
  EXPECT_EQ(seen.num_input_pipelines, 1);
  EXPECT_EQ(seen.input_pipeline_id, 0);
  EXPECT_EQ(seen.num_replicas_in_sync, 3);
  EXPECT_THAT(dist.stats(), HasSubstr("from_function"));
  EXPECT_EQ(dist.Cardinality(), 2);
  // Elements 0..4 (batches of 2) go to the replicas in turn; the short last step is padded.
  EXPECT_EQ(IntSteps(dist), (Steps{{{0, 1}, {2, 3}, {4, 5}}, {{6, 7}, {8, 9}, {}}}));
  // No rebatch and no Prefetch op were added: the graph is the function's.
  EXPECT_EQ(dist.node()->op_name(), "Batch");

  auto error = InputContext{1, 0, 4}.GetPerReplicaBatchSize(10);
  EXPECT_EQ(error.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(error.status().message()), HasSubstr("not divisible"));
}

TEST(DistributeValuesFromFunctionTest, OneValuePerReplica) {
  MirroredStrategy strategy(4);
  PerReplica<std::string> values = strategy.DistributeValuesFromFunction([](const ValueContext& context) {
    return absl::StrCat(context.replica_id_in_sync_group, "/", context.num_replicas_in_sync);
  });
  EXPECT_THAT(values.LocalResults(), ElementsAre("0/4", "1/4", "2/4", "3/4"));
  MirroredStrategy worker1(2, 2, 1);
  auto ids = worker1.DistributeValuesFromFunction([](const ValueContext& c) { return c.replica_id_in_sync_group; });
  EXPECT_THAT(ids.LocalResults(), ElementsAre(2, 3));
}

// tf.distribute's guide: enumerate the dataset, run the step per replica, and put the outputs back in
// input order by their index.
TEST(RunTest, ReorderOutputsByEnumerateIndex) {
  MirroredStrategy strategy(3);
  auto ds = Range(10).Map([](int64_t x) { return x * 10; }).Enumerate().BatchVectors(4);
  auto it = strategy.DistributeDataset(ds).MakeIterator();
  std::map<int64_t, int64_t> by_index;
  std::atomic<int> calls{0};
  std::set<std::thread::id> threads_seen;
  std::mutex mu;
  for (int guard = 0; guard < 100; ++guard) {
    auto step = it.GetNextAsOptional();
    if (!step) break;
    PerReplica<std::vector<std::pair<int64_t, int64_t>>> out =
        strategy.Run([&](int replica, const std::vector<std::pair<int64_t, int64_t>>& piece) {
          calls.fetch_add(1);
          {
            std::lock_guard<std::mutex> lock(mu);
            threads_seen.insert(std::this_thread::get_id());
          }
          std::vector<std::pair<int64_t, int64_t>> result;
          for (const auto& [index, value] : piece) result.emplace_back(index, value + replica * 0);
          return result;
        }, *step);
    for (const auto& piece : out.LocalResults()) {
      for (const auto& [index, value] : piece) by_index[index] = value;
    }
  }
  EXPECT_TRUE(it.status().ok());
  EXPECT_EQ(calls.load(), 3 * 3);  // 3 steps (batches of 4, 4, 2) x 3 replicas
  EXPECT_GE(threads_seen.size(), 2u);
  ASSERT_EQ(by_index.size(), 10u);
  int64_t expect = 0;
  for (const auto& [index, value] : by_index) {
    EXPECT_EQ(index, expect);
    EXPECT_EQ(value, expect * 10);
    ++expect;
  }
}

TEST(RunTest, StatusResultsAndExceptionsPropagate) {
  MirroredStrategy strategy(3);
  PerReplica<int> ids = strategy.DistributeValuesFromFunction([](const ValueContext& c) {
    return c.replica_id_in_sync_group;
  });
  PerReplica<absl::Status> out = strategy.Run(
      [](int replica, const int& id) -> absl::Status {
        if (replica == 2) throw std::runtime_error("replica exploded");
        if (id == 1) return absl::AbortedError("replica 1 failed");
        return absl::OkStatus();
      },
      ids);
  EXPECT_TRUE(out[0].ok());
  EXPECT_EQ(out[1].code(), absl::StatusCode::kAborted);
  EXPECT_EQ(out[2].code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(out[2].message()), HasSubstr("replica exploded"));

  PerReplica<int> short_args(std::vector<int>{1});
  PerReplica<absl::StatusOr<int>> bad = strategy.Run([](int, const int& x) -> absl::StatusOr<int> { return x; },
                                                     short_args);
  EXPECT_EQ(bad[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THROW(strategy.Run([](int, const int& x) { return x; }, short_args), std::invalid_argument);

  std::atomic<int> ran{0};
  strategy.Run([&ran](int) { ran.fetch_add(1); });
  EXPECT_EQ(ran.load(), 3);
}

}  // namespace
}  // namespace mirrored_strategy_test_file
}  // namespace sluice
