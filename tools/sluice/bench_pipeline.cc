// `sluice bench pipeline`: the quick start's input pipeline (examples/fashion_mnist_trainer) against
// PyTorch's DataLoader doing the same work (benchmarks/baselines/torch_pipeline.py), on the same shards,
// with the same CPU budget. Three sides: sluice as the trainer runs it (the Interleave and the Map at
// kAutotune; one pipeline iterated once per run, as epochs, after an uncounted first pass) on a private
// pool of --threads threads; the same pipeline with every op sequential
// (num_parallel_calls 0), which the default must never fall below; and PyTorch with --threads worker
// processes (one torch thread each). All: parse each tf.train.Example, decode the 784 pixels to
// standardised float32, shuffle through 10,000 examples, batch 256. A second case holds the same examples
// as fixed-size records (a label byte and the pixels) in one file: sluice's FixedLengthRecords ->
// Map(decode) -> Shuffle -> Batch against a map-style PyTorch Dataset over a NumPy memmap
// (benchmarks/baselines/torch_memmap.py, shuffle=True). Reported per side: samples/s (the metric), peak
// RSS (sluice: this process's VmHWM, reset before each run; PyTorch: its process tree's VmRSS summed,
// sampled every 20 ms), CPU time per sample, and for sluice allocations per sample (calls to operator
// new, when this program counts them: the `sluice` binary does). Every side must deliver every example,
// or the run fails.
//
// Data: --data DIR (a folder of `sluice convert fashion-mnist` output: DIR/train-*.tfrecord); else
// build/data/fashion-mnist when present and --size is not given; else --size examples (default 60,000)
// generated in the same shape (8 shards; random pixels) in a temporary folder removed afterwards. The
// fixed-size file is written from those examples into a temporary folder of its own.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sluice/dataset.h"
#include "sluice/io/example.h"
#include "sluice/io/standardize.h"
#include "sluice/io/tensor.h"
#include "sluice/io/tfrecord.h"
#include "tools/sluice/bench_process.h"
#include "tools/sluice/bench_scenarios.h"

namespace sluice::tools {
namespace {

constexpr int64_t kDefaultExamples = 60000;
constexpr int kGeneratedShards = 8;
constexpr int kImageSize = 28 * 28;
constexpr int64_t kShuffleBuffer = 10000;
constexpr int64_t kBatchSize = 256;
constexpr uint64_t kSeed = 42;
// The quick start's interleave: 4 shards at once, 16 records from each in turn.
constexpr int64_t kCycleLength = 4;
constexpr int64_t kBlockLength = 16;
constexpr float kPixelMean = 0.2860f;  // examples/fashion_mnist_trainer/model.h
constexpr float kPixelStd = 0.3530f;
constexpr const char* kDefaultDataDir = "build/data/fashion-mnist";
constexpr double kPythonTimeoutSeconds = 1800;

using ImageLabel = std::pair<Tensor, int64_t>;
constexpr int64_t kFixedRecordBytes = 1 + kImageSize;  // label byte, pixels
constexpr int64_t kSequential = 0;                     // num_parallel_calls: run in the consumer's call

struct OpenShard {
  Dataset<std::string> operator()(std::string path) const { return TFRecord({std::move(path)}); }
};

// The trainer's DecodeImage: parsed (image bytes, label) -> (standardised float pixels, label).
struct DecodeImage {
  absl::StatusOr<ImageLabel> operator()(ParsedExample example) const {
    const std::string& bytes = example.fixed[0].data<std::string>()[0];
    if (bytes.size() != static_cast<size_t>(kImageSize)) {
      return absl::InvalidArgumentError(
          absl::StrCat("image has ", bytes.size(), " bytes, expected ", kImageSize));
    }
    Tensor pixels = Tensor::Empty(DType::kFloat32, Shape({kImageSize}));
    StandardizeBytes(bytes, 1.0f / 255.0f, kPixelMean, 1.0f / kPixelStd, pixels.data<float>());
    return ImageLabel(std::move(pixels), example.fixed[1].data<int64_t>()[0]);
  }
};

// A fixed-size record -> (standardised float pixels, label).
struct DecodeFixed {
  absl::StatusOr<ImageLabel> operator()(std::string record) const {
    if (record.size() != static_cast<size_t>(kFixedRecordBytes)) {
      return absl::InvalidArgumentError(absl::StrCat("record has ", record.size(), " bytes"));
    }
    Tensor pixels = Tensor::Empty(DType::kFloat32, Shape({kImageSize}));
    StandardizeBytes(std::string_view(record).substr(1), 1.0f / 255.0f, kPixelMean, 1.0f / kPixelStd,
                     pixels.data<float>());
    return ImageLabel(std::move(pixels), static_cast<uint8_t>(record[0]));
  }
};

ParseSpec ImageLabelSpec() {
  ParseSpec spec;
  spec.fixed.push_back(
      {.key = "image", .dtype = DType::kString, .shape = Shape(), .default_value = std::nullopt});
  spec.fixed.push_back(
      {.key = "label", .dtype = DType::kInt64, .shape = Shape(), .default_value = std::nullopt});
  return spec;
}

absl::StatusOr<std::vector<std::string>> GenerateShards(const std::string& dir, int64_t examples) {
  std::vector<std::string> files;
  uint64_t state = 0x9E3779B97F4A7C15ull;
  std::string image(kImageSize, '\0');
  for (int shard = 0; shard < kGeneratedShards; ++shard) {
    const std::string path = absl::StrCat(dir, "/train-", shard, "-of-", kGeneratedShards, ".tfrecord");
    absl::StatusOr<TFRecordWriter> writer = TFRecordWriter::Open(path);
    if (!writer.ok()) return writer.status();
    const int64_t begin = examples * shard / kGeneratedShards;
    const int64_t end = examples * (shard + 1) / kGeneratedShards;
    for (int64_t i = begin; i < end; ++i) {
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
      if (absl::Status s = writer->Write(record); !s.ok()) return s;
    }
    if (absl::Status s = writer->Close(); !s.ok()) return s;
    files.push_back(path);
  }
  return files;
}

absl::StatusOr<std::vector<std::string>> ShardsIn(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("train-") && name.ends_with(".tfrecord")) files.push_back(entry.path().string());
  }
  if (ec) return absl::NotFoundError(absl::StrCat(dir, ": ", ec.message()));
  if (files.empty()) {
    return absl::NotFoundError(absl::StrCat(dir,
                                            " has no train-*.tfrecord shards (uncompressed output of "
                                            "`sluice convert fashion-mnist --out ",
                                            dir, "`)"));
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The examples of `files` as one file of fixed-size records, in file order.
absl::Status WriteFixedRecords(const std::vector<std::string>& files, const std::string& out_path) {
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  auto it = FromVector(files).FlatMap(OpenShard{}).ParseExample(ImageLabelSpec()).MakeIterator();
  std::string record(static_cast<size_t>(kFixedRecordBytes), '\0');
  for (;;) {
    auto example = it.NextBlocking();
    if (!example.ok()) return example.status();
    if (!example->has_value()) break;
    const std::string& image = (*example)->fixed[0].data<std::string>()[0];
    if (image.size() != static_cast<size_t>(kImageSize)) {
      return absl::InvalidArgumentError(absl::StrCat("an image has ", image.size(), " bytes"));
    }
    record[0] = static_cast<char>((*example)->fixed[1].data<int64_t>()[0]);
    std::memcpy(record.data() + 1, image.data(), image.size());
    out.write(record.data(), static_cast<std::streamsize>(record.size()));
  }
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", out_path));
  return absl::OkStatus();
}

struct SelfUsage {
  double cpu_seconds = 0;  // user + system, every thread
  int64_t minor_faults = 0;
};

SelfUsage Usage() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  return {.cpu_seconds = seconds(usage.ru_utime) + seconds(usage.ru_stime), .minor_faults = usage.ru_minflt};
}

// The quick start's pipeline over TFRecord shards of Example, its Interleave and Map at `parallel_calls`.
Dataset<std::pair<Tensor, Tensor>> QuickStart(const std::vector<std::string>& files, int64_t parallel_calls) {
  return FromVector(files)
      .Interleave(OpenShard{}, kCycleLength, kBlockLength, parallel_calls, /*deterministic=*/true)
      .ParseExample(ImageLabelSpec())
      .Map(DecodeImage{}, parallel_calls, /*deterministic=*/true)
      .Shuffle(kShuffleBuffer, kSeed)
      .Batch(kBatchSize);
}

// The same decoding over one file of fixed-size records: a label byte, then the 784 pixels.
Dataset<std::pair<Tensor, Tensor>> FixedSize(const std::string& file, int64_t parallel_calls) {
  return FixedLengthRecords({file}, kFixedRecordBytes)
      .Map(DecodeFixed{}, parallel_calls, /*deterministic=*/true)
      .Shuffle(kShuffleBuffer, kSeed)
      .Batch(kBatchSize);
}

// Drains `pipeline` on a private pool of `threads`, timing from MakeIterator to the last batch.
absl::StatusOr<Sample> SluiceRun(const Dataset<std::pair<Tensor, Tensor>>& pipeline, int threads,
                                 int64_t* samples_out) {
  ResetSelfPeakRss();
  const std::optional<uint64_t> allocations_start = SelfAllocationCount();
  const SelfUsage usage_start = Usage();
  const auto start = std::chrono::steady_clock::now();
  Options options;
  options.thread_pool_size = threads;
  auto it = pipeline.MakeIterator(options);
  int64_t samples = 0;
  for (;;) {
    auto batch = it.NextBlocking();
    if (!batch.ok()) return batch.status();
    if (!batch->has_value()) break;
    const Tensor& images = (*batch)->first;
    if (images.dtype() != DType::kFloat32 || images.shape().dims().size() != 2 ||
        images.shape().dims()[1] != kImageSize) {
      return absl::InternalError("a batch of images is not float32 [B, 784]");
    }
    samples += images.shape().dims()[0];
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const SelfUsage usage_end = Usage();
  const std::optional<uint64_t> allocations_end = SelfAllocationCount();
  if (samples == 0) return absl::InvalidArgumentError("the shards hold no examples");
  *samples_out = samples;
  Sample sample;
  sample.value = static_cast<double>(samples) / seconds;
  sample.extra["peak_rss_MiB"] = static_cast<double>(SelfPeakRssBytes()) / (1 << 20);
  sample.extra["cpu_us/sample"] =
      (usage_end.cpu_seconds - usage_start.cpu_seconds) / static_cast<double>(samples) * 1e6;
  sample.extra["faults/sample"] =
      static_cast<double>(usage_end.minor_faults - usage_start.minor_faults) / static_cast<double>(samples);
  if (allocations_start.has_value() && allocations_end.has_value()) {
    sample.extra["allocs/sample"] =
        static_cast<double>(*allocations_end - *allocations_start) / static_cast<double>(samples);
  }
  return sample;
}

// SluiceRun, failing unless every one of the `expected` examples arrived.
absl::StatusOr<Sample> SluiceCounted(const Dataset<std::pair<Tensor, Tensor>>& pipeline, int threads,
                                     int64_t expected) {
  int64_t counted = 0;
  absl::StatusOr<Sample> sample = SluiceRun(pipeline, threads, &counted);
  if (sample.ok() && counted != expected) {
    return absl::InternalError(absl::StrCat("sluice delivered ", counted, " examples of ", expected));
  }
  return sample;
}

// A number from the baseline's one JSON line, e.g. "seconds".
std::optional<double> JsonField(const std::string& json, const std::string& key) {
  const std::string quoted = absl::StrCat("\"", key, "\":");
  size_t at = json.find(quoted);
  if (at == std::string::npos) return std::nullopt;
  at += quoted.size();
  while (at < json.size() && json[at] == ' ') ++at;
  size_t end = at;
  while (end < json.size() && std::strchr("0123456789.eE+-", json[end]) != nullptr) ++end;
  double value = 0;
  if (!absl::SimpleAtod(json.substr(at, end - at), &value)) return std::nullopt;
  return value;
}

// One run of a PyTorch baseline script (argv), which prints torch_pipeline.py's JSON line.
absl::StatusOr<Sample> TorchRun(const std::vector<std::string>& argv, int64_t expected) {
  absl::StatusOr<ProcessResult> run = RunProcess(argv, {.timeout_seconds = kPythonTimeoutSeconds});
  if (!run.ok()) return run.status();
  if (run->exit_code != 0) {
    return absl::InternalError(absl::StrCat(argv[1], " exited ", run->exit_code, ": ", run->err));
  }
  std::optional<double> samples = JsonField(run->out, "samples");
  std::optional<double> seconds = JsonField(run->out, "seconds");
  std::optional<double> cpu = JsonField(run->out, "cpu_seconds");
  if (!samples || !seconds || !cpu || *seconds <= 0) {
    return absl::InternalError(absl::StrCat("cannot read the output of ", argv[1], ": ", run->out));
  }
  if (static_cast<int64_t>(*samples) != expected) {
    return absl::InternalError(
        absl::StrCat("PyTorch delivered ", *samples, " examples, sluice ", expected, ": not the same work"));
  }
  Sample sample;
  sample.value = *samples / *seconds;
  sample.extra["peak_rss_MiB"] = static_cast<double>(run->peak_rss_bytes) / (1 << 20);
  sample.extra["cpu_us/sample"] = *cpu / *samples * 1e6;
  return sample;
}

// The modules the baseline needs, imported by `python`; FailedPrecondition naming the packages if not.
absl::Status CheckTorch(const std::string& python) {
  absl::StatusOr<ProcessResult> run =
      RunProcess({python, "-c", "import torch, numpy, crc32c, google.protobuf"}, {.timeout_seconds = 120});
  if (!run.ok()) return run.status();
  if (run->exit_code == 0) return absl::OkStatus();
  std::string last = run->err;
  while (!last.empty() && last.back() == '\n') last.pop_back();
  last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
  return absl::FailedPreconditionError(absl::StrCat(
      python, " cannot import the PyTorch baseline's modules (", last, "): install them with ",
      kInstallBenchDeps, " (apt-get install python3-torch python3-numpy python3-protobuf python3-crc32c)"));
}

absl::StatusOr<ScenarioResult> RunPipeline(const BenchConfig& config) {
  absl::StatusOr<std::string> python =
      FindTool(config.python, config.path, absl::StrCat(kInstallBenchDeps, " (Debian's python3)"));
  if (!python.ok()) return absl::FailedPreconditionError(python.status().message());
  if (absl::Status s = CheckTorch(*python); !s.ok()) return s;
  absl::StatusOr<std::string> baselines = BaselinesDir(config);
  if (!baselines.ok()) return baselines.status();

  const int threads = BenchThreads(config);
  ScenarioResult result;
  result.scenario = "pipeline";
  std::optional<ScopedTempDir> temp;
  absl::StatusOr<std::vector<std::string>> files;
  std::error_code ec;
  if (config.data.size() > 1) {
    return absl::InvalidArgumentError("pipeline takes one --data folder");
  } else if (config.data.size() == 1) {
    files = ShardsIn(config.data[0]);
    result.parameters.emplace_back("data", config.data[0]);
  } else if (!config.size.has_value() &&
             std::filesystem::exists(absl::StrCat(kDefaultDataDir, "/manifest.txt"), ec)) {
    files = ShardsIn(kDefaultDataDir);
    result.parameters.emplace_back("data", absl::StrCat(kDefaultDataDir, " (sluice convert fashion-mnist)"));
  } else {
    absl::StatusOr<ScopedTempDir> dir = ScopedTempDir::Create(config.work_dir);
    if (!dir.ok()) return dir.status();
    temp.emplace(std::move(*dir));
    const int64_t examples = config.size.value_or(kDefaultExamples);
    ReportProgress(config, absl::StrCat("pipeline: writing ", examples, " examples into ", temp->path()));
    files = GenerateShards(temp->path(), examples);
    result.parameters.emplace_back("data", absl::StrCat(examples, " generated examples, ", kGeneratedShards,
                                                        " shards of Fashion-MNIST's shape"));
  }
  if (!files.ok()) return files.status();
  result.parameters.emplace_back("threads", absl::StrCat(threads));
  result.parameters.emplace_back("shuffle", absl::StrCat(kShuffleBuffer));
  result.parameters.emplace_back("batch", absl::StrCat(kBatchSize));
  result.parameters.emplace_back("repeat", absl::StrCat(config.repeat));

  // One sluice pass first: its count is what PyTorch must match, and it warms the page cache for both.
  ReportProgress(config, "pipeline: a first sluice pass (warms the page cache, counts the examples)");
  int64_t expected = 0;
  // One pipeline per side for every run, as a trainer iterates its dataset once per epoch: the first pass
  // is the tuned side's first epoch, and what its tuner learned carries over to the measured runs as it
  // does from epoch to epoch (a new pipeline would pay its warm-up and first probe in every run).
  const Dataset<std::pair<Tensor, Tensor>> quick_start = QuickStart(*files, kAutotune);
  const Dataset<std::pair<Tensor, Tensor>> quick_start_sequential = QuickStart(*files, kSequential);
  if (absl::StatusOr<Sample> warm = SluiceRun(quick_start, threads, &expected); !warm.ok()) {
    return warm.status();
  }
  const std::string thread_count = absl::StrCat(threads, threads == 1 ? " thread" : " threads");

  CaseResult c;
  c.name = absl::StrCat("quick start, ", thread_count);
  c.metric = "samples/s";
  c.x_label = "threads";
  c.x = threads;
  std::vector<std::string> torch_argv = {
      *python,   *baselines + "/torch_pipeline.py", "--workers", absl::StrCat(threads),
      "--batch", absl::StrCat(kBatchSize),          "--shuffle", absl::StrCat(kShuffleBuffer)};
  torch_argv.insert(torch_argv.end(), files->begin(), files->end());
  absl::Status s = RunAlternating(
      config,
      {{"sluice", [&] { return SluiceCounted(quick_start, threads, expected); }},
       {"sequential", [&] { return SluiceCounted(quick_start_sequential, threads, expected); }},
       {"pytorch", [&] { return TorchRun(torch_argv, expected); }}},
      &c);
  if (!s.ok()) return s;
  c.note =
      absl::StrCat(expected, " examples per run; PyTorch: IterableDataset over the shards, buffer shuffle");
  result.cases.push_back(std::move(c));

  // The fixed-size-record variant, in a temporary folder of its own (the data may be the user's).
  absl::StatusOr<ScopedTempDir> fixed_dir = ScopedTempDir::Create(config.work_dir);
  if (!fixed_dir.ok()) return fixed_dir.status();
  const std::string fixed_file = fixed_dir->path() + "/images-785.bin";
  ReportProgress(config, absl::StrCat("pipeline: writing ", expected, " fixed-size records to ", fixed_file));
  if (absl::Status w = WriteFixedRecords(*files, fixed_file); !w.ok()) return w;
  const Dataset<std::pair<Tensor, Tensor>> fixed_size = FixedSize(fixed_file, kAutotune);
  const Dataset<std::pair<Tensor, Tensor>> fixed_size_sequential = FixedSize(fixed_file, kSequential);
  if (absl::Status warm = SluiceCounted(fixed_size, threads, expected).status(); !warm.ok()) {
    return warm;
  }
  CaseResult f;
  f.name = absl::StrCat("fixed-size, ", thread_count);
  f.metric = "samples/s";
  f.x_label = "threads";
  f.x = threads;
  const std::vector<std::string> memmap_argv = {
      *python,   *baselines + "/torch_memmap.py", "--workers", absl::StrCat(threads),
      "--batch", absl::StrCat(kBatchSize),        fixed_file};
  s = RunAlternating(config,
                     {{"sluice", [&] { return SluiceCounted(fixed_size, threads, expected); }},
                      {"sequential", [&] { return SluiceCounted(fixed_size_sequential, threads, expected); }},
                      {"pytorch", [&] { return TorchRun(memmap_argv, expected); }}},
                     &f);
  if (!s.ok()) return s;
  f.note =
      "785-byte records; PyTorch: map-style Dataset over a NumPy memmap, shuffle=True (a full permutation)";
  result.cases.push_back(std::move(f));
  return result;
}

}  // namespace

Scenario PipelineScenario() {
  Scenario s;
  s.name = "pipeline";
  s.description =
      "the quick start's pipeline (parse, decode, shuffle 10,000, batch 256) vs PyTorch DataLoader";
  s.size_unit = "examples generated";
  s.default_size = kDefaultExamples;
  s.run = RunPipeline;
  return s;
}

}  // namespace sluice::tools
