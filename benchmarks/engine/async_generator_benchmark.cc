// Per-element cost of a chain of AsyncGenerator links (each link pulls one element from its upstream
// and yields it on), against a plain loop doing the same arithmetic in the same run.
#include <cstdint>
#include <optional>

#include "benchmark/benchmark.h"
#include "sluice/engine/async_generator.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"

namespace sluice {
namespace {

AsyncGenerator<int64_t> Source(int64_t n) {
  for (int64_t i = 0; i < n; ++i) co_yield int64_t{i};
}

AsyncGenerator<int64_t> Forward(AsyncGenerator<int64_t> upstream) {
  while (std::optional<int64_t> x = co_await upstream.Next()) co_yield *x + 1;
}

Task<int64_t> Drain(AsyncGenerator<int64_t> gen) {
  int64_t sum = 0;
  while (std::optional<int64_t> x = co_await gen.Next()) sum += *x;
  co_return sum;
}

// state.range(0) = number of Forward links on top of the source (0 = the source alone).
void BM_GeneratorChain(benchmark::State& state) {
  const int depth = static_cast<int>(state.range(0));
  constexpr int64_t kElements = 1 << 20;
  for (auto _ : state) {
    AsyncGenerator<int64_t> gen = Source(kElements);
    for (int i = 0; i < depth; ++i) gen = Forward(std::move(gen));
    benchmark::DoNotOptimize(SyncWait(Drain(std::move(gen))));
  }
  state.SetItemsProcessed(state.iterations() * kElements);
  // ns per element per link, the figure the op library has to keep under 5 ns.
  state.counters["ns_per_element_per_link"] = benchmark::Counter(
      static_cast<double>(kElements) * std::max(depth, 1),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_GeneratorChain)->Arg(0)->Arg(1)->Arg(4)->Arg(16)->Unit(benchmark::kMillisecond);

// Baseline: the same work without coroutines.
void BM_PlainLoop(benchmark::State& state) {
  const int depth = static_cast<int>(state.range(0));
  constexpr int64_t kElements = 1 << 20;
  for (auto _ : state) {
    int64_t sum = 0;
    for (int64_t i = 0; i < kElements; ++i) {
      int64_t x = i;
      for (int d = 0; d < depth; ++d) {
        benchmark::DoNotOptimize(x);
        x += 1;
      }
      sum += x;
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * kElements);
}
BENCHMARK(BM_PlainLoop)->Arg(1)->Arg(4)->Arg(16)->Unit(benchmark::kMillisecond);

Task<int> Leaf(int x) { co_return x + 1; }

// Cost of creating, awaiting and destroying one Task (one heap frame).
void BM_TaskAwait(benchmark::State& state) {
  struct Loop {
    static Task<int64_t> Run(int64_t n) {
      int64_t sum = 0;
      for (int64_t i = 0; i < n; ++i) sum += co_await Leaf(static_cast<int>(i & 1023));
      co_return sum;
    }
  };
  constexpr int64_t kTasks = 1 << 18;
  for (auto _ : state) benchmark::DoNotOptimize(SyncWait(Loop::Run(kTasks)));
  state.SetItemsProcessed(state.iterations() * kTasks);
}
BENCHMARK(BM_TaskAwait)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
