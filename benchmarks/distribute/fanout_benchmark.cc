// The fan-out stage of a DistributedIterator: per-replica batches/s, a replica's Next() latency, and the
// elements buffered.
//
//   build/bin/fanout_benchmark
//
// The producer is free: the pipeline repeats one pre-built Tensor batch (copies share its buffer) and the
// rebatch slices are views, so the figures measure the fan-out (split, queues, parking, wake-ups) and not
// the pipeline. Each replica is a thread calling ReplicaIterator::NextBlocking. Wall time (UseRealTime).
// With 2 cores, 8 replica threads measure parking and wake-ups more than the queues.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "sluice/distribute.h"
#include "sluice/io/tensor.h"
#include "sluice/ops/dataset.h"

namespace sluice {
namespace {

constexpr int64_t kStepsPerIteration = 20'000;
constexpr int64_t kRowsPerReplica = 32;

Dataset<Tensor> GlobalBatches(int replicas, int64_t steps) {
  Tensor batch = Tensor::Zeros(DType::kFloat32, Shape({kRowsPerReplica * replicas, 8}));
  return FromVector<Tensor>({batch}).Repeat(steps);
}

struct ReplicaStats {
  int64_t batches = 0;
  size_t max_buffered = 0;
  std::vector<int64_t> latencies_ns;
};

// A training step between two Next() calls. A sleep, not a busy wait: the step runs on an accelerator,
// and on these 2 cores two spinning replicas would starve the producer thread (p99 then ~120 us, the
// scheduler's, not the fan-out's). Sleeps last at least `step` (timer slack adds ~50 us).
void Compute(std::chrono::microseconds step) {
  if (step.count() != 0) std::this_thread::sleep_for(step);
}

// A replica's loop: its step, then Next(). With `step_sync`, every replica finishes its step before any
// calls Next(), as the all-reduce at the end of a Mirrored training step makes them do.
void RunReplica(ReplicaIterator<Tensor> replica, bool timed, ReplicaStats* stats,
                std::chrono::microseconds step, std::barrier<>* step_sync) {
  if (timed) stats->latencies_ns.reserve(static_cast<size_t>(kStepsPerIteration));
  for (;;) {
    Compute(step);
    if (step_sync != nullptr) step_sync->arrive_and_wait();
    stats->max_buffered = std::max(stats->max_buffered, replica.buffered());
    auto start = std::chrono::steady_clock::now();
    auto next = replica.NextBlocking();
    if (timed) {
      stats->latencies_ns.push_back(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
    }
    if (!next.ok() || !next->has_value()) {
      if (step_sync != nullptr) step_sync->arrive_and_drop();
      return;
    }
    benchmark::DoNotOptimize((*next)->num_elements());
    ++stats->batches;
  }
}

// Per-replica batches/s with 2, 4, 8 replicas; max_buffered is the most pieces one replica's queue held
// (the prefetch window is prefetch_per_replica = the number of replicas).
void BM_FanOutThroughput(benchmark::State& state) {
  const int replicas = static_cast<int>(state.range(0));
  MirroredStrategy strategy(replicas);
  auto dist = strategy.DistributeDataset(GlobalBatches(replicas, kStepsPerIteration));
  int64_t total = 0;
  size_t max_buffered = 0;
  for (auto _ : state) {
    auto it = dist.MakeIterator();
    std::vector<ReplicaStats> stats(static_cast<size_t>(replicas));
    {
      std::vector<std::jthread> threads;
      for (int r = 0; r < replicas; ++r)
        threads.emplace_back(RunReplica, it.Replica(r), false, &stats[r], std::chrono::microseconds(0),
                             nullptr);
    }
    for (const ReplicaStats& s : stats) {
      total += s.batches;
      max_buffered = std::max(max_buffered, s.max_buffered);
    }
  }
  state.SetItemsProcessed(total);  // replica batches, all replicas together
  state.counters["per_replica_batches_per_s"] =
      benchmark::Counter(static_cast<double>(total) / replicas, benchmark::Counter::kIsRate);
  state.counters["max_buffered"] = static_cast<double>(max_buffered);
  state.counters["prefetch_window"] = replicas;
}
BENCHMARK(BM_FanOutThroughput)->Arg(2)->Arg(4)->Arg(8)->UseRealTime()->Unit(benchmark::kMillisecond);

// Latency of one replica's Next(); the producer has nothing to do but the fan-out.
// step_us: each replica spends at least that long on its step between calls, as a trainer does. At 0
// both replicas call Next() back to back and outrun the one producer thread (2 cores, 3 threads), so
// many calls wait for it; at 20 the producer keeps the queues filled and a call measures the hand-off.
// The replicas finish each step together (a barrier, as the step's all-reduce): unsynchronised, their
// lag is a random walk of sleep jitter, and the leader's calls measured how far behind the other was
// (p99 13-23 us with 2 replicas, 0.4-1.2 us with 1, 2026-12-07), not the fan-out.
void BM_ReplicaNextLatency(benchmark::State& state) {
  const int replicas = static_cast<int>(state.range(0));
  const std::chrono::microseconds step(state.range(1));
  MirroredStrategy strategy(replicas);
  auto dist = strategy.DistributeDataset(GlobalBatches(replicas, kStepsPerIteration));
  std::vector<int64_t> all;
  size_t max_buffered = 0;
  for (auto _ : state) {
    auto it = dist.MakeIterator();
    std::vector<ReplicaStats> stats(static_cast<size_t>(replicas));
    std::barrier<> step_sync(replicas);
    {
      std::vector<std::jthread> threads;
      for (int r = 0; r < replicas; ++r)
        threads.emplace_back(RunReplica, it.Replica(r), true, &stats[r], step, &step_sync);
    }
    for (const ReplicaStats& s : stats) {
      all.insert(all.end(), s.latencies_ns.begin(), s.latencies_ns.end());
      max_buffered = std::max(max_buffered, s.max_buffered);
    }
  }
  std::sort(all.begin(), all.end());
  auto at = [&all](double q) {
    return all.empty() ? 0.0 : static_cast<double>(all[std::min(all.size() - 1, static_cast<size_t>(q * all.size()))]);
  };
  state.SetItemsProcessed(static_cast<int64_t>(all.size()));
  state.counters["p50_ns"] = at(0.50);
  state.counters["p99_ns"] = at(0.99);
  state.counters["max_buffered"] = static_cast<double>(max_buffered);
  state.counters["prefetch_window"] = replicas;
}
BENCHMARK(BM_ReplicaNextLatency)
    ->ArgNames({"replicas", "step_us"})
    ->Args({2, 0})
    ->Args({2, 20})
    ->Args({1, 20})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
