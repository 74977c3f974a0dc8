// Autotune against hand-picked settings on three pipelines, on a private 2-thread pool:
//   CpuMap:          Range -> Map(~10 us CPU function, num_parallel_calls)
//   ShardsAndMap:    12 TFRecord shards -> Interleave(cycle 4, num_parallel_calls) -> Map(~2 us, calls)
//   BurstyPrefetch:  Range -> Map(bursty producer: every 32nd element ~32 us, the rest free)
//                    -> Prefetch(buffer_size) -> Map(~1.5 us on the consumer's thread)
// Each hand-picked setting and kAutotune (-1) run side by side; compare items/s of the autotuned row
// with the best hand-picked row:
//
//   build/bin/autotune_benchmark
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "sluice/ops/dataset.h"
#include "sluice/io/tfrecord.h"

namespace sluice {
namespace {

int64_t Spin(int64_t x, int rounds) {
  uint64_t acc = static_cast<uint64_t>(x) | 1;
  for (int i = 0; i < rounds; ++i) {
    acc = acc * 6364136223846793005ull + 1442695040888963407ull;
    benchmark::DoNotOptimize(acc);
  }
  return static_cast<int64_t>(acc >> 1);
}
int64_t Work10us(int64_t x) { return Spin(x, 9000); }
int64_t Work2us(const std::string& record) { return Spin(static_cast<int64_t>(record.size()), 1800); }

template <class T>
int64_t Drain(const Dataset<T>& ds) {
  Options options;
  options.thread_pool_size = 2;
  Iterator<T> it = ds.MakeIterator(options);
  int64_t n = 0;
  for (;;) {
    absl::StatusOr<std::optional<T>> x = it.NextBlocking();
    if (!x.ok()) std::abort();
    if (!x->has_value()) break;
    ++n;
  }
  return n;
}

constexpr int64_t kCpuElements = 20000;

void BM_CpuMap(benchmark::State& state) {
  Dataset<int64_t> ds = Range(kCpuElements).Map(Work10us, state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(Drain(ds));
  state.SetItemsProcessed(state.iterations() * kCpuElements);
}
BENCHMARK(BM_CpuMap)->ArgName("calls")->Arg(0)->Arg(2)->Arg(3)->Arg(4)->Arg(kAutotune)->Unit(
    benchmark::kMillisecond)->UseRealTime();

constexpr int kShards = 12;
constexpr int64_t kRecordsPerShard = 4096;

const std::vector<std::string>& Shards() {
  static const std::vector<std::string> files = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::filesystem::path dir = std::filesystem::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") /
                                "sluice_autotune_bench";
    std::filesystem::create_directories(dir);
    std::vector<std::string> out;
    std::string payload(1024, 'y');
    for (int s = 0; s < kShards; ++s) {
      std::string path = (dir / ("shard-" + std::to_string(s) + ".tfrecord")).string();
      absl::StatusOr<TFRecordWriter> writer = TFRecordWriter::Open(path);
      if (!writer.ok()) std::abort();
      for (int64_t r = 0; r < kRecordsPerShard; ++r) {
        if (!writer->Write(payload).ok()) std::abort();
      }
      if (!writer->Close().ok()) std::abort();
      out.push_back(path);
    }
    return out;
  }();
  return files;
}

Dataset<std::string> OpenShard(std::string file) { return TFRecord({std::move(file)}); }

void BM_ShardsAndMap(benchmark::State& state) {
  Dataset<int64_t> ds =
      FromVector(Shards()).Interleave(OpenShard, 4, 16, state.range(0)).Map(Work2us, state.range(1));
  for (auto _ : state) {
    if (Drain(ds) != kShards * kRecordsPerShard) state.SkipWithError("wrong count");
  }
  state.SetItemsProcessed(state.iterations() * kShards * kRecordsPerShard);
}
BENCHMARK(BM_ShardsAndMap)
    ->ArgNames({"interleave_calls", "map_calls"})
    ->Args({0, 0})
    ->Args({1, 1})
    ->Args({1, 2})
    ->Args({2, 2})
    ->Args({1, 3})
    ->Args({2, 1})
    ->Args({1, 4})
    ->Args({kAutotune, kAutotune})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The producer averages ~1 us per element in bursts of ~32 us; the consumer spends ~1.5 us on each. A
// buffer that holds a burst's worth keeps the consumer busy through the producer's slow elements.
constexpr int64_t kBurstyElements = 400000;
int64_t BurstyProducer(int64_t x) { return x % 32 == 0 ? Spin(x, 32 * 900) : x; }
int64_t ConsumerWork(int64_t x) { return Spin(x, 1350); }

void BM_BurstyPrefetch(benchmark::State& state) {
  Dataset<int64_t> ds = Range(kBurstyElements).Map(BurstyProducer).Prefetch(state.range(0)).Map(ConsumerWork);
  for (auto _ : state) {
    if (Drain(ds) != kBurstyElements) state.SkipWithError("wrong count");
  }
  state.SetItemsProcessed(state.iterations() * kBurstyElements);
}
BENCHMARK(BM_BurstyPrefetch)->ArgName("buffer")->Arg(2)->Arg(8)->Arg(32)->Arg(64)->Arg(kAutotune)->Unit(
    benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
