// Channel<T> push+pop throughput: N producers feed one consumer through a bounded channel.
//
// Each iteration moves kItemsPerIteration int64 values end to end (threads start and join inside the
// iteration; with 64Ki items their cost is amortised). Variants: blocking side on plain threads, and
// coroutine side (Push/Pop awaited in Tasks driven by SyncWait on the same kind of threads); capacity 64
// and 1024; 1 and 2 producers. Reported: items_per_second and ns_per_item (wall time / items).
//
//   build/bin/channel_benchmark
#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "benchmark/benchmark.h"
#include "sluice/engine/channel.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"

namespace sluice {
namespace {

constexpr int64_t kItemsPerIteration = 1 << 16;

Task<absl::Status> ProduceRange(Channel<int64_t>* ch, int64_t first, int64_t n) {
  for (int64_t i = first; i < first + n; ++i) {
    absl::Status s = co_await ch->Push(i);
    if (!s.ok()) co_return s;
  }
  co_return absl::OkStatus();
}

Task<absl::StatusOr<int64_t>> ConsumeAll(Channel<int64_t>* ch) {
  int64_t sum = 0;
  for (;;) {
    absl::StatusOr<std::optional<int64_t>> v = co_await ch->Pop();
    if (!v.ok()) co_return v.status();
    if (!v->has_value()) co_return sum;
    sum += **v;
  }
}

// `wall_ns`: wall time summed over the iterations (threads included), measured by the benchmark itself so
// that ns_per_item prints as a plain number.
void ReportPerItem(benchmark::State& state, int64_t wall_ns) {
  const int64_t items = state.iterations() * kItemsPerIteration;
  state.SetItemsProcessed(items);
  state.counters["ns_per_item"] = static_cast<double>(wall_ns) / static_cast<double>(items);
}

int64_t NanosSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
}

// Args: capacity, producers.
void BM_ChannelBlockingThreads(benchmark::State& state) {
  const size_t capacity = static_cast<size_t>(state.range(0));
  const int producers = static_cast<int>(state.range(1));
  const int64_t per_producer = kItemsPerIteration / producers;
  int64_t wall_ns = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    Channel<int64_t> ch(capacity);
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&ch, p, per_producer] {
        for (int64_t i = p * per_producer; i < (p + 1) * per_producer; ++i) {
          if (!ch.PushBlocking(i).ok()) return;
        }
      });
    }
    std::thread closer([&threads, &ch] {
      for (std::thread& t : threads) t.join();
      ch.Close();
    });
    int64_t sum = 0;
    for (;;) {
      absl::StatusOr<std::optional<int64_t>> v = ch.PopBlocking();
      if (!v.ok() || !v->has_value()) break;
      sum += **v;
    }
    closer.join();
    wall_ns += NanosSince(start);
    benchmark::DoNotOptimize(sum);
    if (sum != kItemsPerIteration * (kItemsPerIteration - 1) / 2) state.SkipWithError("lost items");
  }
  ReportPerItem(state, wall_ns);
}

void BM_ChannelCoroutines(benchmark::State& state) {
  const size_t capacity = static_cast<size_t>(state.range(0));
  const int producers = static_cast<int>(state.range(1));
  const int64_t per_producer = kItemsPerIteration / producers;
  int64_t wall_ns = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    Channel<int64_t> ch(capacity);
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&ch, p, per_producer] {
        (void)SyncWait(ProduceRange(&ch, p * per_producer, per_producer));
      });
    }
    std::thread closer([&threads, &ch] {
      for (std::thread& t : threads) t.join();
      ch.Close();
    });
    absl::StatusOr<int64_t> sum = SyncWait(ConsumeAll(&ch));
    closer.join();
    wall_ns += NanosSince(start);
    if (!sum.ok() || *sum != kItemsPerIteration * (kItemsPerIteration - 1) / 2) {
      state.SkipWithError("lost items");
    }
  }
  ReportPerItem(state, wall_ns);
}

// The uncontended cost of one TryPush+TryPop pair on one thread: the floor under the numbers above.
void BM_ChannelTryPushTryPopSingleThread(benchmark::State& state) {
  Channel<int64_t> ch(64);
  int64_t v = 0;
  for (auto _ : state) {
    int64_t x = v++;
    benchmark::DoNotOptimize(ch.TryPush(x));
    benchmark::DoNotOptimize(ch.TryPop());
  }
  state.SetItemsProcessed(state.iterations());
}

void Shapes(benchmark::internal::Benchmark* b) {
  for (int64_t capacity : {64, 1024}) {
    for (int64_t producers : {1, 2}) b->Args({capacity, producers});
  }
  b->ArgNames({"capacity", "producers"})->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.2);
}

BENCHMARK(BM_ChannelBlockingThreads)->Apply(Shapes);
BENCHMARK(BM_ChannelCoroutines)->Apply(Shapes);
BENCHMARK(BM_ChannelTryPushTryPopSingleThread);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
