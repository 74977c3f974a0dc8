// Parse throughput of the hand-written tf.train.Example decoder.
//
// Records: a Chicago-taxi-shaped Example (18 one-value features: int64, float and short bytes, as TFX's
// CsvExampleGen writes them, ~500 bytes) and a Fashion-MNIST-shaped Example (784-byte image + int64 label).
// Reports records/s (items_per_second) and MB/s (bytes_per_second) of serialized input.
//
//   build/bin/example_parser_benchmark
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "benchmark/benchmark.h"
#include "benchmarks/io/synthetic_taxi_records.h"
#include "sluice/io/example.h"

namespace sluice {
namespace {

constexpr int kBatch = 256;

struct Workload {
  std::vector<std::string> records;  // distinct records so the branch predictor sees varied values
  ParseSpec spec;
  size_t total_bytes = 0;
};

Workload TaxiWorkload() {
  Workload w;
  const char* int_keys[] = {"dropoff_census_tract", "dropoff_community_area", "pickup_census_tract",
                            "pickup_community_area", "trip_seconds", "trip_start_day", "trip_start_hour",
                            "trip_start_month", "trip_start_timestamp"};
  const char* float_keys[] = {"dropoff_latitude", "dropoff_longitude", "fare",       "pickup_latitude",
                              "pickup_longitude", "tips",              "trip_miles"};
  const char* bytes_keys[] = {"company", "payment_type"};
  w.records = bench::SyntheticTaxiRecords(kBatch);
  for (const std::string& r : w.records) w.total_bytes += r.size();
  for (const char* k : int_keys) w.spec.fixed.push_back({k, DType::kInt64, Shape({}), std::nullopt});
  for (const char* k : float_keys) w.spec.fixed.push_back({k, DType::kFloat32, Shape({}), std::nullopt});
  for (const char* k : bytes_keys) w.spec.fixed.push_back({k, DType::kString, Shape({}), std::nullopt});
  return w;
}

Workload MnistWorkload() {
  Workload w;
  for (int r = 0; r < kBatch; ++r) {
    std::string image(784, '\0');
    for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<char>((i * 7 + static_cast<size_t>(r)) & 0xff);
    w.records.push_back(ExampleBuilder().AddBytes("image", {image}).AddInt64s("label", {r % 10}).Serialize());
    w.total_bytes += w.records.back().size();
  }
  w.spec.fixed.push_back({"image", DType::kString, Shape({}), std::nullopt});
  w.spec.fixed.push_back({"label", DType::kInt64, Shape({}), std::nullopt});
  return w;
}

const Workload& Taxi() {
  static const Workload* w = new Workload(TaxiWorkload());
  return *w;
}

const Workload& Mnist() {
  static const Workload* w = new Workload(MnistWorkload());
  return *w;
}

void ParseSingle(benchmark::State& state, const Workload& w) {
  size_t i = 0;
  for (auto _ : state) {
    absl::StatusOr<ParsedExample> parsed = ParseExample(w.records[i], w.spec);
    if (!parsed.ok()) {
      state.SkipWithError(std::string(parsed.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(parsed);
    i = i + 1 == w.records.size() ? 0 : i + 1;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * w.total_bytes / w.records.size()));
}

void ParseBatch(benchmark::State& state, const Workload& w) {
  std::vector<std::string_view> views(w.records.begin(), w.records.end());
  for (auto _ : state) {
    absl::StatusOr<ParsedExample> parsed = ParseExampleBatch(views, w.spec);
    if (!parsed.ok()) {
      state.SkipWithError(std::string(parsed.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(parsed);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * views.size()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * w.total_bytes));
}

void Decode(benchmark::State& state, const Workload& w) {
  size_t i = 0;
  for (auto _ : state) {
    absl::StatusOr<DecodedExample> decoded = DecodeExample(w.records[i]);
    if (!decoded.ok()) {
      state.SkipWithError(std::string(decoded.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(decoded);
    i = i + 1 == w.records.size() ? 0 : i + 1;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * w.total_bytes / w.records.size()));
}

void BM_ParseExample_Taxi(benchmark::State& state) { ParseSingle(state, Taxi()); }
void BM_ParseExampleBatch256_Taxi(benchmark::State& state) { ParseBatch(state, Taxi()); }
void BM_DecodeExample_Taxi(benchmark::State& state) { Decode(state, Taxi()); }
void BM_ParseExample_Mnist(benchmark::State& state) { ParseSingle(state, Mnist()); }
void BM_ParseExampleBatch256_Mnist(benchmark::State& state) { ParseBatch(state, Mnist()); }
void BM_DecodeExample_Mnist(benchmark::State& state) { Decode(state, Mnist()); }

BENCHMARK(BM_ParseExample_Taxi);
BENCHMARK(BM_ParseExampleBatch256_Taxi);
BENCHMARK(BM_DecodeExample_Taxi);
BENCHMARK(BM_ParseExample_Mnist);
BENCHMARK(BM_ParseExampleBatch256_Mnist);
BENCHMARK(BM_DecodeExample_Mnist);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
