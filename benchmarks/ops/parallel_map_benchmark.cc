// Parallel Map of a ~10 us CPU function (a fixed arithmetic loop, not a sleep) on a private 2-thread pool:
// the sequential Map against Map(f, num_parallel_calls = 1 and 2), deterministic and not. Run the
// variants side by side (the machine is shared) and compare items/s:
//
//   build/bin/parallel_map_benchmark --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//
// The speed-up is items/s of Parallel/2 over Sequential; the deterministic cost is Parallel/2/det=1
// against det=0. The CPU column is the whole process's CPU time (all threads), so CPU per item against
// BM_SequentialMap's shows the parallel machinery's overhead even when a loaded machine cannot give the
// process two cores (check the load average in the header).
#include <cstdint>
#include <optional>
#include <thread>

#include "benchmark/benchmark.h"
#include "sluice/ops/dataset.h"

namespace sluice {
namespace {

constexpr int64_t kElements = 4000;

// About 10 us on this machine: a dependent chain of multiply-adds the compiler cannot fold.
int64_t Work(int64_t x) {
  uint64_t acc = static_cast<uint64_t>(x) | 1;
  for (int i = 0; i < 9000; ++i) {
    acc = acc * 6364136223846793005ull + 1442695040888963407ull;
    benchmark::DoNotOptimize(acc);
  }
  return static_cast<int64_t>(acc >> 1);
}

void Drain(const Dataset<int64_t>& ds, benchmark::State& state) {
  Options options;
  options.thread_pool_size = 2;
  for (auto _ : state) {
    Iterator<int64_t> it = ds.MakeIterator(options);
    int64_t sum = 0;
    for (;;) {
      absl::StatusOr<std::optional<int64_t>> x = it.NextBlocking();
      if (!x.ok() || !x->has_value()) break;
      sum += **x;
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * kElements);
}

void BM_FunctionAlone(benchmark::State& state) {
  int64_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(Work(i++));
}
BENCHMARK(BM_FunctionAlone)->Unit(benchmark::kMicrosecond);

// The ceiling on this machine: the same work split over two plain threads by hand, no pipeline. On a
// shared machine this is what "2 threads" can give; compare the parallel map's speed-up with this one's.
void BM_HandTwoThreads(benchmark::State& state) {
  for (auto _ : state) {
    int64_t a = 0;
    int64_t b = 0;
    std::thread other([&a] {
      for (int64_t i = 0; i < kElements / 2; ++i) a += Work(i);
    });
    for (int64_t i = kElements / 2; i < kElements; ++i) b += Work(i);
    other.join();
    benchmark::DoNotOptimize(a + b);
  }
  state.SetItemsProcessed(state.iterations() * kElements);
}
BENCHMARK(BM_HandTwoThreads)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();

void BM_HandOneThread(benchmark::State& state) {
  for (auto _ : state) {
    int64_t a = 0;
    for (int64_t i = 0; i < kElements; ++i) a += Work(i);
    benchmark::DoNotOptimize(a);
  }
  state.SetItemsProcessed(state.iterations() * kElements);
}
BENCHMARK(BM_HandOneThread)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();

void BM_SequentialMap(benchmark::State& state) { Drain(Range(kElements).Map(Work), state); }
BENCHMARK(BM_SequentialMap)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();

void BM_ParallelMap(benchmark::State& state) {
  Drain(Range(kElements).Map(Work, state.range(0), state.range(1) != 0), state);
}
BENCHMARK(BM_ParallelMap)
    ->ArgNames({"calls", "det"})
    ->Args({2, 1})
    ->Args({2, 0})
    ->Args({3, 1})
    ->Args({kAutotune, 1})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()->UseRealTime();

// One worker of the parallel machinery (Dataset::Map(f, 1) is the sequential op, so build the node).
void BM_ParallelMapOneWorker(benchmark::State& state) {
  using Node = ops::ParallelMapNode<int64_t, int64_t (*)(int64_t)>;
  Drain(Dataset<int64_t>(std::make_shared<Node>(Range(kElements).node(), &Work, FunctionLabel("work"), 1, true)), state);
}
BENCHMARK(BM_ParallelMapOneWorker)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
