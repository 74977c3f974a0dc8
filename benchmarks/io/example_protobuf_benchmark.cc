// sluice's own tf.train.Example decoder against libprotobuf, side by side in one run.
//
// Records: every record of the real TFX Chicago-taxi train split ($SLUICE_SHARED_DIR/data/tfrecord/
// tfx_chicago_taxi_csv_example_gen/Split-train/*.gz, default ../shared), read once with ReadTFRecords; the
// synthetic taxi records of example_parser_benchmark.cc when that dir is missing (the label says which).
// Second workload: Fashion-MNIST-shaped records (784-byte image + int64 label).
// Spec: every feature of the data as FixedLenFeature shape {1} with its dtype (a default, 0 / 0.0 / "",
// when some record lacks it), except features some record holds with an empty list (CsvExampleGen's
// missing cell, which FixedLenFeature rejects): those are VarLenFeatures, as TFX parses them.
// Cases (records/s and bytes/s of serialized input):
//   Protobuf_Parse / Protobuf_ParseArena: Example::ParseFromArray alone (message reused; or arena reset);
//   Protobuf_Extract / Protobuf_ExtractBatch256: parse + copy into the same Tensors sluice returns;
//   Sluice_ParseExample / Sluice_ParseExampleBatch256 / Sluice_DecodeExample.
// At start, protobuf extraction and sluice must give identical tensors for every record, or it aborts.
// At the end it prints sluice/protobuf ratios of the best records/s of each case over the repetitions.
//
//   build/example_protobuf_benchmark --benchmark_repetitions=3
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "benchmark/benchmark.h"
#include "benchmarks/io/synthetic_taxi_records.h"
#include "benchmarks/io/tf_example.pb.h"
#include "sluice/io/example.h"
#include "sluice/engine/reactor.h"
#include "sluice/io/record_readers.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "sluice/io/tensor.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;
constexpr size_t kBatch = 256;

struct Workload {
  std::string label;
  std::vector<std::string> records;  // distinct records so the branch predictor sees varied values
  ParseSpec spec;
};

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "example_protobuf_benchmark: %s\n", message.c_str());
  std::abort();
}

Task<absl::Status> AppendRecords(AsyncGenerator<absl::StatusOr<Record>> records, std::vector<std::string>* out) {
  for (;;) {
    std::optional<absl::StatusOr<Record>> r = co_await records.Next();
    if (!r.has_value()) break;
    if (!r->ok()) co_return r->status();
    out->emplace_back((*r)->str());
  }
  co_return absl::OkStatus();
}

std::vector<std::string> RealTaxiRecords() {
  const char* env = std::getenv("SLUICE_SHARED_DIR");
  const fs::path shared = env != nullptr && *env != '\0' ? fs::path(env) : fs::path("../shared");
  const fs::path dir = shared / "data" / "tfrecord" / "tfx_chicago_taxi_csv_example_gen" / "Split-train";
  std::vector<std::string> records;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return records;
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".gz") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  absl::StatusOr<std::unique_ptr<Reactor>> reactor = Reactor::Create();
  if (!reactor.ok()) Die(std::string(reactor.status().message()));
  TFRecordReaderOptions options;
  options.compression = Compression::kGzip;
  for (const fs::path& f : files) {
    absl::Status s = SyncWait(AppendRecords(ReadTFRecords(**reactor, f.string(), options), &records));
    if (!s.ok()) Die(s.ToString());
  }
  return records;
}

DType DTypeOfKind(FeatureKind kind) {
  switch (kind) {
    case FeatureKind::kBytes:
      return DType::kString;
    case FeatureKind::kInt64:
      return DType::kInt64;
    default:
      return DType::kFloat32;
  }
}

Tensor DefaultFor(DType dtype) {
  switch (dtype) {
    case DType::kString:
      return Tensor::FromVector<std::string>({std::string()});
    case DType::kInt64:
      return Tensor::FromVector<int64_t>({0});
    default:
      return Tensor::FromVector<float>({0.f});
  }
}

// Every key of the records, typed by its kind: a FixedLenFeature of shape {1} when every record holds
// one value (a default when some record lacks the key); a VarLenFeature when some record has it empty,
// as CsvExampleGen writes a missing CSV cell (TF's FixedLenFeature rejects an empty list even with a
// default, so TFX parses those as VarLen and densifies later).
ParseSpec SpecOf(const std::vector<std::string>& records) {
  std::map<std::string, FeatureKind> kinds;
  std::map<std::string, size_t> present;
  std::map<std::string, bool> ragged;
  for (size_t i = 0; i < records.size(); ++i) {
    absl::StatusOr<DecodedExample> d = DecodeExample(records[i]);
    if (!d.ok()) Die(d.status().ToString());
    for (const auto& [key, feature] : d->features) {
      if (feature.kind != FeatureKind::kNone) kinds[key] = feature.kind;
      ++present[key];
      if (feature.size() != 1) ragged[key] = true;
    }
  }
  ParseSpec spec;
  for (const auto& [key, count] : present) {
    const DType dtype = DTypeOfKind(kinds.count(key) != 0 ? kinds[key] : FeatureKind::kFloat);
    if (ragged.count(key) != 0) {
      spec.var.push_back({key, dtype});
      continue;
    }
    std::optional<Tensor> def;
    if (count < records.size()) def = DefaultFor(dtype);
    spec.fixed.push_back({key, dtype, Shape({1}), def});
  }
  return spec;
}

Workload TaxiWorkload() {
  Workload w;
  w.records = RealTaxiRecords();
  if (w.records.empty()) {
    w.label = "SYNTHETIC taxi (shared dir missing)";
    w.records = bench::SyntheticTaxiRecords(static_cast<int>(kBatch));
  } else {
    w.label = "real taxi train";
  }
  w.spec = SpecOf(w.records);
  return w;
}

Workload MnistWorkload() {
  Workload w;
  w.label = "fashion-mnist-shaped";
  for (size_t r = 0; r < kBatch; ++r) {
    std::string image(784, '\0');
    for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<char>((i * 7 + r) & 0xff);
    w.records.push_back(
        ExampleBuilder().AddBytes("image", {image}).AddInt64s("label", {static_cast<int64_t>(r % 10)}).Serialize());
  }
  w.spec = SpecOf(w.records);
  return w;
}

// ---------------------------------------------------------------------------------------------------------
// libprotobuf extraction with tf.io semantics (the ones sluice implements): absent -> default; a set kind
// that differs from the dtype is an error; the value count must be the shape's.

absl::Status ExtractOne(const sluice_bench::Example& example, const FixedLenFeature& f, size_t row, Tensor& out) {
  const auto& map = example.features().feature();
  auto it = map.find(f.key);
  const size_t n = static_cast<size_t>(f.shape.num_elements());
  if (it == map.end()) {
    if (!f.default_value.has_value()) return absl::InvalidArgumentError("missing " + f.key);
    switch (f.dtype) {
      case DType::kString:
        std::copy_n(f.default_value->data<std::string>(), n, out.data<std::string>() + row * n);
        break;
      case DType::kInt64:
        std::copy_n(f.default_value->data<int64_t>(), n, out.data<int64_t>() + row * n);
        break;
      default:
        std::copy_n(f.default_value->data<float>(), n, out.data<float>() + row * n);
        break;
    }
    return absl::OkStatus();
  }
  const sluice_bench::Feature& feature = it->second;
  const auto kind = feature.kind_case();
  switch (f.dtype) {
    case DType::kString: {
      if (kind != sluice_bench::Feature::kBytesList && kind != sluice_bench::Feature::KIND_NOT_SET) break;
      const auto& v = feature.bytes_list().value();
      if (static_cast<size_t>(v.size()) != n) return absl::InvalidArgumentError("count " + f.key);
      std::copy(v.begin(), v.end(), out.data<std::string>() + row * n);
      return absl::OkStatus();
    }
    case DType::kInt64: {
      if (kind != sluice_bench::Feature::kInt64List && kind != sluice_bench::Feature::KIND_NOT_SET) break;
      const auto& v = feature.int64_list().value();
      if (static_cast<size_t>(v.size()) != n) return absl::InvalidArgumentError("count " + f.key);
      std::copy(v.begin(), v.end(), out.data<int64_t>() + row * n);
      return absl::OkStatus();
    }
    default: {
      if (kind != sluice_bench::Feature::kFloatList && kind != sluice_bench::Feature::KIND_NOT_SET) break;
      const auto& v = feature.float_list().value();
      if (static_cast<size_t>(v.size()) != n) return absl::InvalidArgumentError("count " + f.key);
      std::copy(v.begin(), v.end(), out.data<float>() + row * n);
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError("type " + f.key);
}

// A VarLenFeature's values over one or more records; Finish() makes the tensors sluice returns.
struct VarAccumulator {
  std::vector<std::string> strings;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<int64_t> row_lengths;

  VarLenValues Finish(DType dtype) const {
    VarLenValues out;
    out.values = dtype == DType::kString  ? Tensor::FromVector(strings)
                 : dtype == DType::kInt64 ? Tensor::FromVector(ints)
                                          : Tensor::FromVector(floats);
    out.row_lengths = Tensor::FromVector(row_lengths);
    return out;
  }
};

absl::Status AppendVar(const sluice_bench::Example& example, const VarLenFeature& f, VarAccumulator& acc) {
  const auto& map = example.features().feature();
  auto it = map.find(f.key);
  if (it == map.end()) {
    acc.row_lengths.push_back(0);
    return absl::OkStatus();
  }
  const sluice_bench::Feature& feature = it->second;
  const auto kind = feature.kind_case();
  const bool none = kind == sluice_bench::Feature::KIND_NOT_SET;
  switch (f.dtype) {
    case DType::kString: {
      if (kind != sluice_bench::Feature::kBytesList && !none) break;
      const auto& v = feature.bytes_list().value();
      acc.strings.insert(acc.strings.end(), v.begin(), v.end());
      acc.row_lengths.push_back(v.size());
      return absl::OkStatus();
    }
    case DType::kInt64: {
      if (kind != sluice_bench::Feature::kInt64List && !none) break;
      const auto& v = feature.int64_list().value();
      acc.ints.insert(acc.ints.end(), v.begin(), v.end());
      acc.row_lengths.push_back(v.size());
      return absl::OkStatus();
    }
    default: {
      if (kind != sluice_bench::Feature::kFloatList && !none) break;
      const auto& v = feature.float_list().value();
      acc.floats.insert(acc.floats.end(), v.begin(), v.end());
      acc.row_lengths.push_back(v.size());
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError("type " + f.key);
}

// One record into shape-{1} tensors, `message` reused across calls.
absl::StatusOr<ParsedExample> ProtoParseSingle(std::string_view record, const ParseSpec& spec,
                                               sluice_bench::Example& message) {
  if (!message.ParseFromArray(record.data(), static_cast<int>(record.size()))) {
    return absl::DataLossError("ParseFromArray failed");
  }
  ParsedExample out;
  out.fixed.reserve(spec.fixed.size());
  for (const FixedLenFeature& f : spec.fixed) {
    out.fixed.push_back(Tensor::Empty(f.dtype, f.shape));
    absl::Status s = ExtractOne(message, f, 0, out.fixed.back());
    if (!s.ok()) return s;
  }
  out.var.reserve(spec.var.size());
  for (const VarLenFeature& f : spec.var) {
    VarAccumulator acc;
    absl::Status s = AppendVar(message, f, acc);
    if (!s.ok()) return s;
    out.var.push_back(acc.Finish(f.dtype));
  }
  return out;
}

// A batch into [batch, *shape] tensors, like ParseExampleBatch.
absl::StatusOr<ParsedExample> ProtoParseBatch(std::span<const std::string_view> records, const ParseSpec& spec,
                                              sluice_bench::Example& message) {
  ParsedExample out;
  out.fixed.reserve(spec.fixed.size());
  for (const FixedLenFeature& f : spec.fixed) {
    out.fixed.push_back(Tensor::Empty(f.dtype, f.shape.Prepend(static_cast<int64_t>(records.size()))));
  }
  std::vector<VarAccumulator> vars(spec.var.size());
  for (size_t r = 0; r < records.size(); ++r) {
    if (!message.ParseFromArray(records[r].data(), static_cast<int>(records[r].size()))) {
      return absl::DataLossError("ParseFromArray failed");
    }
    for (size_t i = 0; i < spec.fixed.size(); ++i) {
      absl::Status s = ExtractOne(message, spec.fixed[i], r, out.fixed[i]);
      if (!s.ok()) return s;
    }
    for (size_t i = 0; i < spec.var.size(); ++i) {
      absl::Status s = AppendVar(message, spec.var[i], vars[i]);
      if (!s.ok()) return s;
    }
  }
  out.var.reserve(spec.var.size());
  for (size_t i = 0; i < spec.var.size(); ++i) out.var.push_back(vars[i].Finish(spec.var[i].dtype));
  return out;
}

void Verify(const Workload& w) {
  sluice_bench::Example message;
  for (size_t i = 0; i < w.records.size(); ++i) {
    absl::StatusOr<ParsedExample> a = ProtoParseSingle(w.records[i], w.spec, message);
    absl::StatusOr<ParsedExample> b = ParseExample(w.records[i], w.spec);
    if (!a.ok() || !b.ok()) {
      Die(w.label + " record " + std::to_string(i) + ": protobuf " + a.status().ToString() + ", sluice " +
          b.status().ToString());
    }
    for (size_t f = 0; f < w.spec.fixed.size(); ++f) {
      if (!(a->fixed[f] == b->fixed[f])) {
        Die(w.label + " record " + std::to_string(i) + " feature " + w.spec.fixed[f].key + ": protobuf " +
            a->fixed[f].DebugString() + " != sluice " + b->fixed[f].DebugString());
      }
    }
    for (size_t f = 0; f < w.spec.var.size(); ++f) {
      if (!(a->var[f].values == b->var[f].values) || !(a->var[f].row_lengths == b->var[f].row_lengths)) {
        Die(w.label + " record " + std::to_string(i) + " var feature " + w.spec.var[f].key + ": protobuf " +
            a->var[f].values.DebugString() + " != sluice " + b->var[f].values.DebugString());
      }
    }
  }
  std::vector<std::string_view> views(w.records.begin(), w.records.end());
  for (size_t start = 0; start + kBatch <= views.size(); start += kBatch) {
    std::span<const std::string_view> batch(views.data() + start, kBatch);
    absl::StatusOr<ParsedExample> a = ProtoParseBatch(batch, w.spec, message);
    absl::StatusOr<ParsedExample> b = ParseExampleBatch(batch, w.spec);
    if (!a.ok() || !b.ok()) Die(w.label + " batch at " + std::to_string(start) + " failed");
    for (size_t f = 0; f < w.spec.fixed.size(); ++f) {
      if (!(a->fixed[f] == b->fixed[f])) {
        Die(w.label + " batch at " + std::to_string(start) + " feature " + w.spec.fixed[f].key + " differs");
      }
    }
    for (size_t f = 0; f < w.spec.var.size(); ++f) {
      if (!(a->var[f].values == b->var[f].values) || !(a->var[f].row_lengths == b->var[f].row_lengths)) {
        Die(w.label + " batch at " + std::to_string(start) + " var feature " + w.spec.var[f].key + " differs");
      }
    }
  }
}

const Workload& Taxi() {
  static const Workload* w = new Workload(TaxiWorkload());
  return *w;
}

const Workload& Mnist() {
  static const Workload* w = new Workload(MnistWorkload());
  return *w;
}

// ---------------------------------------------------------------------------------------------------------
// Cases. Single-record cases cycle over all records; batch cases over the whole batches of 256.

template <class ParseOne>
void RunSingle(benchmark::State& state, const Workload& w, ParseOne parse_one) {
  size_t i = 0;
  int64_t bytes = 0;
  for (auto _ : state) {
    if (!parse_one(w.records[i])) {
      state.SkipWithError("parse failed");
      break;
    }
    bytes += static_cast<int64_t>(w.records[i].size());
    i = i + 1 == w.records.size() ? 0 : i + 1;
  }
  state.SetLabel(w.label);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(bytes);
}

template <class ParseBatch>
void RunBatch(benchmark::State& state, const Workload& w, ParseBatch parse_batch) {
  std::vector<std::string_view> views(w.records.begin(), w.records.end());
  const size_t batches = views.size() / kBatch;
  std::vector<int64_t> batch_bytes(batches, 0);
  for (size_t b = 0; b < batches; ++b) {
    for (size_t r = 0; r < kBatch; ++r) batch_bytes[b] += static_cast<int64_t>(views[b * kBatch + r].size());
  }
  size_t b = 0;
  int64_t bytes = 0;
  for (auto _ : state) {
    if (!parse_batch(std::span<const std::string_view>(views.data() + b * kBatch, kBatch))) {
      state.SkipWithError("parse failed");
      break;
    }
    bytes += batch_bytes[b];
    b = b + 1 == batches ? 0 : b + 1;
  }
  state.SetLabel(w.label);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBatch));
  state.SetBytesProcessed(bytes);
}

void ProtobufParse(benchmark::State& state, const Workload& w) {
  sluice_bench::Example message;
  RunSingle(state, w, [&](const std::string& r) {
    message.Clear();
    const bool ok = message.ParseFromArray(r.data(), static_cast<int>(r.size()));
    benchmark::DoNotOptimize(message);
    return ok;
  });
}

void ProtobufParseArena(benchmark::State& state, const Workload& w) {
  // The first block is ours, so Reset() keeps it and a record costs no malloc once warmed up.
  std::vector<char> block(size_t{256} << 10);
  google::protobuf::ArenaOptions options;
  options.initial_block = block.data();
  options.initial_block_size = block.size();
  google::protobuf::Arena arena(options);
  RunSingle(state, w, [&](const std::string& r) {
    auto* message = google::protobuf::Arena::CreateMessage<sluice_bench::Example>(&arena);
    const bool ok = message->ParseFromArray(r.data(), static_cast<int>(r.size()));
    benchmark::DoNotOptimize(message);
    arena.Reset();
    return ok;
  });
}

void ProtobufExtract(benchmark::State& state, const Workload& w) {
  sluice_bench::Example message;
  RunSingle(state, w, [&](const std::string& r) {
    absl::StatusOr<ParsedExample> parsed = ProtoParseSingle(r, w.spec, message);
    benchmark::DoNotOptimize(parsed);
    return parsed.ok();
  });
}

void ProtobufExtractBatch(benchmark::State& state, const Workload& w) {
  sluice_bench::Example message;
  RunBatch(state, w, [&](std::span<const std::string_view> batch) {
    absl::StatusOr<ParsedExample> parsed = ProtoParseBatch(batch, w.spec, message);
    benchmark::DoNotOptimize(parsed);
    return parsed.ok();
  });
}

void SluiceParse(benchmark::State& state, const Workload& w) {
  RunSingle(state, w, [&](const std::string& r) {
    absl::StatusOr<ParsedExample> parsed = ParseExample(r, w.spec);
    benchmark::DoNotOptimize(parsed);
    return parsed.ok();
  });
}

void SluiceParseBatch(benchmark::State& state, const Workload& w) {
  RunBatch(state, w, [&](std::span<const std::string_view> batch) {
    absl::StatusOr<ParsedExample> parsed = ParseExampleBatch(batch, w.spec);
    benchmark::DoNotOptimize(parsed);
    return parsed.ok();
  });
}

void SluiceDecode(benchmark::State& state, const Workload& w) {
  RunSingle(state, w, [&](const std::string& r) {
    absl::StatusOr<DecodedExample> decoded = DecodeExample(r);
    benchmark::DoNotOptimize(decoded);
    return decoded.ok();
  });
}

void BM_Protobuf_Parse_Taxi(benchmark::State& s) { ProtobufParse(s, Taxi()); }
void BM_Protobuf_ParseArena_Taxi(benchmark::State& s) { ProtobufParseArena(s, Taxi()); }
void BM_Sluice_DecodeExample_Taxi(benchmark::State& s) { SluiceDecode(s, Taxi()); }
void BM_Protobuf_Extract_Taxi(benchmark::State& s) { ProtobufExtract(s, Taxi()); }
void BM_Sluice_ParseExample_Taxi(benchmark::State& s) { SluiceParse(s, Taxi()); }
void BM_Protobuf_ExtractBatch256_Taxi(benchmark::State& s) { ProtobufExtractBatch(s, Taxi()); }
void BM_Sluice_ParseExampleBatch256_Taxi(benchmark::State& s) { SluiceParseBatch(s, Taxi()); }
void BM_Protobuf_Parse_Mnist(benchmark::State& s) { ProtobufParse(s, Mnist()); }
void BM_Protobuf_ParseArena_Mnist(benchmark::State& s) { ProtobufParseArena(s, Mnist()); }
void BM_Sluice_DecodeExample_Mnist(benchmark::State& s) { SluiceDecode(s, Mnist()); }
void BM_Protobuf_Extract_Mnist(benchmark::State& s) { ProtobufExtract(s, Mnist()); }
void BM_Sluice_ParseExample_Mnist(benchmark::State& s) { SluiceParse(s, Mnist()); }
void BM_Protobuf_ExtractBatch256_Mnist(benchmark::State& s) { ProtobufExtractBatch(s, Mnist()); }
void BM_Sluice_ParseExampleBatch256_Mnist(benchmark::State& s) { SluiceParseBatch(s, Mnist()); }

BENCHMARK(BM_Protobuf_Parse_Taxi);
BENCHMARK(BM_Protobuf_ParseArena_Taxi);
BENCHMARK(BM_Sluice_DecodeExample_Taxi);
BENCHMARK(BM_Protobuf_Extract_Taxi);
BENCHMARK(BM_Sluice_ParseExample_Taxi);
BENCHMARK(BM_Protobuf_ExtractBatch256_Taxi);
BENCHMARK(BM_Sluice_ParseExampleBatch256_Taxi);
BENCHMARK(BM_Protobuf_Parse_Mnist);
BENCHMARK(BM_Protobuf_ParseArena_Mnist);
BENCHMARK(BM_Sluice_DecodeExample_Mnist);
BENCHMARK(BM_Protobuf_Extract_Mnist);
BENCHMARK(BM_Sluice_ParseExample_Mnist);
BENCHMARK(BM_Protobuf_ExtractBatch256_Mnist);
BENCHMARK(BM_Sluice_ParseExampleBatch256_Mnist);

// Console output as usual, plus the best records/s of every case (over the repetitions) for the ratios.
class BestReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
      auto it = run.counters.find("items_per_second");
      if (it == run.counters.end()) continue;
      double& best = best_[run.run_name.function_name];
      best = std::max(best, it->second.value);
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void PrintRatios() const {
    const char* pairs[][2] = {
        {"Sluice_DecodeExample", "Protobuf_Parse"},          {"Sluice_DecodeExample", "Protobuf_ParseArena"},
        {"Sluice_ParseExample", "Protobuf_Extract"},         {"Sluice_ParseExample", "Protobuf_Parse"},
        {"Sluice_ParseExampleBatch256", "Protobuf_ExtractBatch256"},
    };
    std::printf("\nsluice/protobuf, best records/s of the repetitions:\n");
    for (const char* workload : {"Taxi", "Mnist"}) {
      for (const auto& p : pairs) {
        auto a = best_.find(std::string("BM_") + p[0] + "_" + workload);
        auto b = best_.find(std::string("BM_") + p[1] + "_" + workload);
        if (a == best_.end() || b == best_.end() || b->second <= 0) continue;
        std::printf("  %-5s %-28s %10.0f rec/s / %-24s %10.0f rec/s = %.2fx\n", workload, p[0], a->second, p[1],
                    b->second, a->second / b->second);
      }
    }
  }

 private:
  std::map<std::string, double> best_;
};

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  GOOGLE_PROTOBUF_VERIFY_VERSION;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  sluice::Verify(sluice::Taxi());
  sluice::Verify(sluice::Mnist());
  std::printf("verified: protobuf extraction == sluice for %zu %s records (%zu fixed + %zu var features) and %zu %s "
              "records\n",
              sluice::Taxi().records.size(), sluice::Taxi().label.c_str(), sluice::Taxi().spec.fixed.size(),
              sluice::Taxi().spec.var.size(), sluice::Mnist().records.size(), sluice::Mnist().label.c_str());
  for (const sluice::VarLenFeature& f : sluice::Taxi().spec.var) std::printf("  var: %s\n", f.key.c_str());
  sluice::BestReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}
