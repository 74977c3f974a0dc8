// Allocations per sample and samples/s of the quick start's training pipeline (issue 14): the trainer's own
// MakeTrainPipeline (ListFiles -> Interleave(TFRecord) -> ParseExample -> Map(decode to 784 standardised
// floats) -> Shuffle(10,000) -> Batch(256)) over 8 generated Fashion-MNIST-shaped shards (784 random image
// bytes, an int64 label, height and width, as `sluice convert fashion-mnist` writes them).
// Arg: the Interleave's and Map's parallel calls (-1 = autotune, the trainer's default; 0 = sequential).
// Counters: allocs_per_sample counts every operator new of the epoch (iterator setup included) over the
// samples delivered; items/s is samples/s; cpu_us_per_sample is the process's CPU time (all threads) per
// sample, steadier than samples/s on a shared machine; faults_per_sample the process's minor page faults
// (memory the epoch touched for the first time: freed to the system by the last epoch, then faulted in).
//
//   build/bin/quick_start_allocations_benchmark --benchmark_repetitions=5
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "benchmarks/allocation_counter.h"
#include "examples/fashion_mnist_trainer/trainer.h"
#include "sluice/io/example.h"
#include "sluice/io/tfrecord.h"

namespace sluice {
namespace {

constexpr int kShards = 8;
constexpr int64_t kExamples = 60000;
constexpr size_t kImageBytes = 28 * 28;

struct ProcessUsage {
  double cpu_seconds = 0;
  int64_t minor_faults = 0;
};

ProcessUsage Usage() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  return ProcessUsage{seconds(usage.ru_utime) + seconds(usage.ru_stime), usage.ru_minflt};
}

std::filesystem::path DataDir() {
  static const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / absl::StrCat("sluice-quick-start-allocs-", ::getpid());
  return dir;
}

// The shards, written once per process (random pixels from a fixed xorshift stream).
const std::vector<std::string>& Shards() {
  static const std::vector<std::string> files = [] {
    std::filesystem::create_directories(DataDir());
    std::vector<std::string> paths;
    uint64_t state = 0x9E3779B97F4A7C15ull;
    std::string image(kImageBytes, '\0');
    for (int shard = 0; shard < kShards; ++shard) {
      const std::string path =
          (DataDir() / absl::StrCat("train-", shard, "-of-", kShards, ".tfrecord")).string();
      absl::StatusOr<TFRecordWriter> writer = TFRecordWriter::Open(path);
      if (!writer.ok()) std::abort();
      for (int64_t i = kExamples * shard / kShards; i < kExamples * (shard + 1) / kShards; ++i) {
        for (size_t j = 0; j < image.size(); j += 8) {
          state ^= state << 13;
          state ^= state >> 7;
          state ^= state << 17;
          std::memcpy(image.data() + j, &state, std::min<size_t>(8, image.size() - j));
        }
        const std::string record = ExampleBuilder()
                                       .AddBytes("image", {std::string_view(image)})
                                       .AddInt64s("label", {i % 10})
                                       .AddInt64s("height", {28})
                                       .AddInt64s("width", {28})
                                       .Serialize();
        if (!writer->Write(record).ok()) std::abort();
      }
      if (!writer->Close().ok()) std::abort();
      paths.push_back(path);
    }
    return paths;
  }();
  return files;
}

void BM_QuickStartEpoch(benchmark::State& state) {
  fashion_mnist::TrainerConfig config;
  config.parallel_calls = state.range(0);
  fashion_mnist::ShardSet shards;
  shards.train = Shards();
  shards.train_records = kExamples;
  const Dataset<fashion_mnist::ImageLabelBatch> pipeline = fashion_mnist::MakeTrainPipeline(config, shards);
  int64_t samples = 0;
  uint64_t allocations = 0;
  double cpu_seconds = 0;
  int64_t faults = 0;
  for (auto _ : state) {
    const uint64_t before = bench::AllocationCount();
    const ProcessUsage usage_before = Usage();
    Iterator<fashion_mnist::ImageLabelBatch> it = pipeline.MakeIterator();
    int64_t epoch_samples = 0;
    for (;;) {
      auto batch = it.NextBlocking();
      if (!batch.ok()) {
        state.SkipWithError(std::string(batch.status().message()).c_str());
        return;
      }
      if (!batch->has_value()) break;
      epoch_samples += (*batch)->first.shape().dim(0);
    }
    allocations += bench::AllocationCount() - before;
    const ProcessUsage usage_after = Usage();
    cpu_seconds += usage_after.cpu_seconds - usage_before.cpu_seconds;
    faults += usage_after.minor_faults - usage_before.minor_faults;
    if (epoch_samples != kExamples) {
      state.SkipWithError("an epoch did not deliver every example");
      return;
    }
    samples += epoch_samples;
  }
  state.SetItemsProcessed(samples);
  state.counters["cpu_us_per_sample"] =
      benchmark::Counter(cpu_seconds * 1e6 / static_cast<double>(std::max<int64_t>(samples, 1)));
  state.counters["allocs_per_sample"] = benchmark::Counter(
      static_cast<double>(allocations) / static_cast<double>(std::max<int64_t>(samples, 1)));
  state.counters["faults_per_sample"] =
      benchmark::Counter(static_cast<double>(faults) / static_cast<double>(std::max<int64_t>(samples, 1)));
}
BENCHMARK(BM_QuickStartEpoch)
    ->ArgName("parallel_calls")
    ->Arg(-1)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ignored;
  std::filesystem::remove_all(sluice::DataDir(), ignored);
  return 0;
}
