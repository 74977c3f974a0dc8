// Per-element cost of a synchronous pipeline: Range -> Map(x + 1) -> Filter(even) -> Batch(256) -> drain,
// against a hand-written loop doing the same work in the same run (issue 4's first benchmark).
#include <cstdint>
#include <vector>

#include "benchmark/benchmark.h"
#include "sluice/io/tensor.h"
#include "sluice/ops/dataset.h"

namespace sluice {
namespace {

constexpr int64_t kElements = int64_t{1} << 24;

void BM_SyncPipeline(benchmark::State& state) {
  auto ds = Range(kElements)
                .Map([](int64_t x) { return x + 1; })
                .Filter([](const int64_t& x) { return x % 2 == 0; })
                .Batch(256);
  for (auto _ : state) {
    Iterator<Tensor> it = ds.MakeIterator();
    int64_t sum = 0;
    for (;;) {
      absl::StatusOr<std::optional<Tensor>> batch = it.NextBlocking();
      if (!batch.ok() || !batch->has_value()) break;
      for (int64_t x : (**batch).span<int64_t>()) sum += x;
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * kElements);
  // Four ops (Range, Map, Filter, Batch) see each input element.
  state.counters["ns_per_element_per_op"] = benchmark::Counter(
      static_cast<double>(kElements) * 4, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SyncPipeline)->Unit(benchmark::kMillisecond);

void BM_HandLoop(benchmark::State& state) {
  for (auto _ : state) {
    std::vector<int64_t> batch;
    batch.reserve(256);
    int64_t sum = 0;
    for (int64_t i = 0; i < kElements; ++i) {
      int64_t x = i + 1;
      benchmark::DoNotOptimize(x);
      if (x % 2 != 0) continue;
      batch.push_back(x);
      if (batch.size() == 256) {
        for (int64_t v : batch) sum += v;
        batch.clear();
      }
    }
    for (int64_t v : batch) sum += v;
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * kElements);
}
BENCHMARK(BM_HandLoop)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
