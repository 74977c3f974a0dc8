// Checkpoint state size and save/restore time (docs/checkpoint.md), full and compact, for the pipelines
// issue 17 names: a TFRecord file pipeline with a Prefetch(64), Shuffle(10,000) of 1 KiB elements and a
// parallel map with 64 results in flight. Each save is taken from one iterator whose buffers are full;
// the state_bytes counter is the state's size; restore rows time RestoreIterator plus the first element.
// BM_ParallelMapDrain, BM_ShuffleDrain: what compact mode costs when nobody saves.
//
//   build/bin/checkpoint_benchmark     (reads $SLUICE_SHARED_DIR, default ../shared, for the TFRecords)
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "sluice/io/tensor.h"
#include "sluice/ops/dataset.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> TaxiShards() {
  const char* env = std::getenv("SLUICE_SHARED_DIR");
  const fs::path shared = env != nullptr && *env != '\0' ? fs::path(env) : fs::path("../shared");
  const fs::path dir = shared / "data" / "tfrecord" / "tfx_chicago_taxi_csv_example_gen" / "Split-eval";
  std::vector<std::string> files;
  for (int i = 0; i < 3; ++i) {
    fs::path file = dir / absl::StrCat("data_tfrecord-0000", i, "-of-00012.gz");
    std::error_code ec;
    if (fs::exists(file, ec)) files.push_back(file.string());
  }
  return files;
}

template <class T>
struct Pipeline {
  Dataset<T> dataset;
  std::string skip;  // why the row cannot run here
};

// Ends in batches of hashes of the parsed examples: Batch takes tensors and numbers, not ParsedExample.
Pipeline<Tensor> FilePipeline() {
  std::vector<std::string> files = TaxiShards();
  ParseSpec spec;
  spec.var.push_back(VarLenFeature{"fare", DType::kFloat32});
  spec.var.push_back(VarLenFeature{"trip_seconds", DType::kInt64});
  auto ds = TFRecord(files, Compression::kGzip)
                .ParseExample(spec)
                .Map([](const ParsedExample& e) { return static_cast<int64_t>(e.var.size()); }, "features")
                .Batch(16)
                .Prefetch(64);
  return {ds, files.size() == 3 ? "" : "the taxi TFRecords are not under $SLUICE_SHARED_DIR/data"};
}

Pipeline<std::string> ShufflePipeline() {
  auto ds = Range(1000000)
                .Map([](int64_t x) { return std::string(1024, static_cast<char>('a' + x % 26)); }, "kib")
                .Shuffle(10000, 7);
  return {ds, ""};
}

Pipeline<int64_t> ParallelMapPipeline() {
  auto ds = Range(10000000).Map([](int64_t x) { return x * 3 + 1; }, 64, true, "affine");
  return {ds, ""};
}

Options Mode(bool compact) {
  Options options;
  options.compact_checkpoints = compact;
  return options;
}

// An iterator `pulled` elements in whose async buffers have had time to fill.
template <class T>
Iterator<T> Started(const Dataset<T>& ds, bool compact, int pulled) {
  Iterator<T> it = ds.MakeIterator(Mode(compact));
  for (int i = 0; i < pulled; ++i) benchmark::DoNotOptimize(it.NextBlocking());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  return it;
}

template <class T>
void SaveRow(benchmark::State& state, Pipeline<T> pipeline, bool compact, int pulled) {
  if (!pipeline.skip.empty()) return state.SkipWithError(pipeline.skip.c_str());
  Iterator<T> it = Started(pipeline.dataset, compact, pulled);
  size_t bytes = 0;
  for (auto _ : state) {
    absl::StatusOr<std::string> saved = it.SaveBlocking();
    if (!saved.ok()) return state.SkipWithError(std::string(saved.status().message()).c_str());
    bytes = saved->size();
  }
  state.counters["state_bytes"] = static_cast<double>(bytes);
}

template <class T>
void RestoreRow(benchmark::State& state, Pipeline<T> pipeline, bool compact, int pulled) {
  if (!pipeline.skip.empty()) return state.SkipWithError(pipeline.skip.c_str());
  absl::StatusOr<std::string> saved;
  {
    Iterator<T> it = Started(pipeline.dataset, compact, pulled);
    saved = it.SaveBlocking();
  }
  if (!saved.ok()) return state.SkipWithError(std::string(saved.status().message()).c_str());
  for (auto _ : state) {
    absl::StatusOr<Iterator<T>> restored = pipeline.dataset.RestoreIterator(*saved, Mode(compact));
    if (!restored.ok()) return state.SkipWithError(std::string(restored.status().message()).c_str());
    benchmark::DoNotOptimize(restored->NextBlocking());
  }
  state.counters["state_bytes"] = static_cast<double>(saved->size());
}

void BM_FileSave(benchmark::State& state) { SaveRow(state, FilePipeline(), state.range(0) == 1, 10); }
void BM_FileRestore(benchmark::State& state) { RestoreRow(state, FilePipeline(), state.range(0) == 1, 10); }
// Compact: the restore (to the first element) replays the draws and re-reads the window.
void BM_Shuffle10kOf1KiBSave(benchmark::State& state) {
  SaveRow(state, ShufflePipeline(), state.range(0) == 1, 100);
}
void BM_Shuffle10kOf1KiBRestore(benchmark::State& state) {
  RestoreRow(state, ShufflePipeline(), state.range(0) == 1, 100);
}
// Compact: the save pauses no worker; the restore computes the 64 results again.
void BM_ParallelMap64Save(benchmark::State& state) {
  SaveRow(state, ParallelMapPipeline(), state.range(0) == 1, 100);
}
void BM_ParallelMap64Restore(benchmark::State& state) {
  RestoreRow(state, ParallelMapPipeline(), state.range(0) == 1, 100);
}
// Drains `ds` (`elements` long) once per iteration, in compact mode or not.
void DrainRow(benchmark::State& state, const Dataset<int64_t>& ds, int64_t elements) {
  for (auto _ : state) {
    Iterator<int64_t> it = ds.MakeIterator(Mode(state.range(0) == 1));
    int64_t sum = 0;
    for (;;) {
      absl::StatusOr<std::optional<int64_t>> next = it.NextBlocking();
      if (!next.ok() || !next->has_value()) break;
      sum += **next;
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * elements);
}
void BM_ParallelMapDrain(benchmark::State& state) {
  constexpr int64_t kElements = 200000;
  DrainRow(state, Range(kElements).Map([](int64_t x) { return x * 3 + 1; }, 2, true, "affine").Prefetch(16),
           kElements);
}
// What compact mode costs a Shuffle when nobody saves (a mark every kMarkInterval elements).
void BM_ShuffleDrain(benchmark::State& state) {
  constexpr int64_t kElements = 200000;
  DrainRow(state, Range(kElements).Map([](int64_t x) { return x * 3 + 1; }, "affine").Shuffle(10000, 7),
           kElements);
}

BENCHMARK(BM_FileSave)->ArgName("compact")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FileRestore)->ArgName("compact")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Shuffle10kOf1KiBSave)->ArgName("compact")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Shuffle10kOf1KiBRestore)->ArgName("compact")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ParallelMap64Save)->ArgName("compact")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ParallelMap64Restore)->ArgName("compact")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ParallelMapDrain)->ArgName("compact")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ShuffleDrain)->ArgName("compact")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
