// ElementCodec encode/decode throughput, and a file Cache replay against the memory cache.
//
//   build/bin/element_codec_benchmark
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "sluice/ops/dataset.h"
#include "sluice/ops/element_codec.h"
#include "sluice/io/tensor.h"

namespace sluice {
namespace {

template <class T>
void EncodeDecode(benchmark::State& state, const T& value) {
  std::string bytes;
  T back{};
  for (auto _ : state) {
    bytes.clear();
    EncodeElement(value, &bytes);
    benchmark::DoNotOptimize(DecodeElement(bytes, &back));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
  state.SetItemsProcessed(state.iterations());
}

void BM_Int64(benchmark::State& state) { EncodeDecode<int64_t>(state, 123456789); }
void BM_String32(benchmark::State& state) { EncodeDecode(state, std::string(32, 'x')); }
void BM_PairInt64String(benchmark::State& state) {
  EncodeDecode(state, std::make_pair(int64_t{7}, std::string(32, 'x')));
}
void BM_VectorFloat1024(benchmark::State& state) { EncodeDecode(state, std::vector<float>(1024, 1.5f)); }
void BM_TensorFloat28x28(benchmark::State& state) {
  EncodeDecode(state, Tensor::Zeros(DType::kFloat32, Shape({28, 28})));
}
void BM_VectorString16x32(benchmark::State& state) {
  EncodeDecode(state, std::vector<std::string>(16, std::string(32, 'y')));
}

BENCHMARK(BM_Int64);
BENCHMARK(BM_String32);
BENCHMARK(BM_PairInt64String);
BENCHMARK(BM_VectorFloat1024);
BENCHMARK(BM_TensorFloat28x28);
BENCHMARK(BM_VectorString16x32);

// Replays 1M int64 elements from a completed cache (memory, then file).
void BM_CacheReplay(benchmark::State& state) {
  const bool file = state.range(0) == 1;
  std::string path = absl::StrCat(std::filesystem::temp_directory_path().string(), "/sluice_bench_cache_", ::getpid());
  Dataset<int64_t> ds = file ? Range(1000000).Cache(path) : Range(1000000).Cache();
  for (auto& x : ds.MakeIterator()) benchmark::DoNotOptimize(x);  // fill
  int64_t n = 0;
  for (auto _ : state) {
    Iterator<int64_t> it = ds.MakeIterator();
    for (absl::StatusOr<int64_t> x : it) {
      benchmark::DoNotOptimize(x);
      ++n;
    }
  }
  state.SetItemsProcessed(n);
  for (const char* suffix : {"", ".index"}) std::filesystem::remove(path + suffix);
}
BENCHMARK(BM_CacheReplay)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
