// ReplicaQueue throughput and Pop latency.
//
//   build/bin/replica_queue_benchmark
//
// Every benchmark moves kItemsPerIteration elements per iteration between real threads, so read
// items_per_second (wall time: UseRealTime). The machine's core count matters: with fewer cores than
// threads, the figures measure parking and wake-ups more than the queue.
#include "sluice/distribute/detail/replica_queue.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmark/benchmark.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"

namespace sluice::distribute {
namespace {

constexpr int64_t kItemsPerIteration = 100'000;
constexpr size_t kCapacity = 256;

void ProduceBlocking(ReplicaQueue<int64_t>* queue, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (!queue->PushBlocking(i).ok()) return;
  }
  queue->Close();
}

Task<int64_t> ConsumeAll(ReplicaQueue<int64_t>* queue) {
  int64_t sum = 0;
  for (;;) {
    absl::StatusOr<std::optional<int64_t>> v = co_await queue->Pop();
    if (!v.ok() || !v->has_value()) co_return sum;
    sum += **v;
  }
}

void BM_BlockingSpsc(benchmark::State& state) {
  for (auto _ : state) {
    ReplicaQueue<int64_t> queue(kCapacity);
    std::thread producer(ProduceBlocking, &queue, kItemsPerIteration);
    int64_t sum = 0;
    for (;;) {
      absl::StatusOr<std::optional<int64_t>> v = queue.PopBlocking();
      if (!v.ok() || !v->has_value()) break;
      sum += **v;
    }
    producer.join();
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * kItemsPerIteration);
}
BENCHMARK(BM_BlockingSpsc)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_CoroutineConsumerSpsc(benchmark::State& state) {
  for (auto _ : state) {
    ReplicaQueue<int64_t> queue(kCapacity);
    std::thread producer(ProduceBlocking, &queue, kItemsPerIteration);
    int64_t sum = SyncWait(ConsumeAll(&queue));
    producer.join();
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * kItemsPerIteration);
}
BENCHMARK(BM_CoroutineConsumerSpsc)->UseRealTime()->Unit(benchmark::kMillisecond);

// One producer thread feeds N replica queues round-robin; N consumer threads drain them.
void BM_FanOut(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    ReplicaQueues<int64_t> queues(n, kCapacity);
    std::vector<std::thread> consumers;
    for (int r = 0; r < n; ++r) {
      consumers.emplace_back([&queues, r] {
        int64_t sum = 0;
        for (;;) {
          absl::StatusOr<std::optional<int64_t>> v = queues[r].PopBlocking();
          if (!v.ok()) std::fprintf(stderr, "replica %d: %s\n", r, v.status().ToString().c_str());
          if (!v.ok() || !v->has_value()) break;
          sum += **v;
        }
        benchmark::DoNotOptimize(sum);
      });
    }
    for (int64_t i = 0; i < kItemsPerIteration; ++i) {
      if (!queues[static_cast<int>(i % n)].PushBlocking(i).ok()) break;
    }
    queues.Close();
    for (std::thread& t : consumers) t.join();
  }
  state.SetItemsProcessed(state.iterations() * kItemsPerIteration);
}
BENCHMARK(BM_FanOut)->Arg(2)->Arg(4)->Arg(8)->UseRealTime()->Unit(benchmark::kMillisecond);

// Duration of each PopBlocking call while a producer thread keeps the queue topped up; p50/p99 in ns.
void BM_PopLatencyProducerKeepsUp(benchmark::State& state) {
  std::vector<int64_t> ns;
  ns.reserve(static_cast<size_t>(kItemsPerIteration));
  std::vector<int64_t> all;
  for (auto _ : state) {
    ReplicaQueue<int64_t> queue(kCapacity);
    std::thread producer(ProduceBlocking, &queue, kItemsPerIteration);
    // Let the producer fill the queue first, as a prefetching fan-out stage would.
    for (int i = 0; i < 10'000 && queue.size() < kCapacity; ++i) std::this_thread::yield();
    ns.clear();
    for (;;) {
      auto start = std::chrono::steady_clock::now();
      absl::StatusOr<std::optional<int64_t>> v = queue.PopBlocking();
      auto end = std::chrono::steady_clock::now();
      if (!v.ok() || !v->has_value()) break;
      ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
    }
    producer.join();
    all.insert(all.end(), ns.begin(), ns.end());
  }
  std::sort(all.begin(), all.end());
  if (!all.empty()) {
    state.counters["p50_ns"] = static_cast<double>(all[all.size() / 2]);
    state.counters["p99_ns"] = static_cast<double>(all[all.size() * 99 / 100]);
    state.counters["p999_ns"] = static_cast<double>(all[all.size() * 999 / 1000]);
  }
  state.SetItemsProcessed(state.iterations() * kItemsPerIteration);
}
BENCHMARK(BM_PopLatencyProducerKeepsUp)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice::distribute

BENCHMARK_MAIN();
