// CRC32C throughput (hardware and portable), TFRecord parse rate from memory in 1 MiB chunks, and GZIP
// inflate rate (zlib and ISA-L). Run: build/bin/crc32c_benchmark (about 30 s on 2 loaded cores).
#include <benchmark/benchmark.h>

#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "io/crc32c.h"
#include "io/tfrecord_format.h"
#include "io/tfrecord_writer.h"
#include "io/zlib_stream.h"

namespace sluice::io {
namespace {

constexpr size_t kChunk = size_t{1} << 20;
constexpr size_t kParseBufferBytes = size_t{64} << 20;

std::vector<unsigned char> RandomBytes(size_t n) {
  std::mt19937_64 rng(1);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

void BM_Crc32cHardware(benchmark::State& state) {
  if (!Crc32cHardwareAvailable()) {
    state.SkipWithError("no SSE4.2/PCLMUL");
    return;
  }
  const std::vector<unsigned char> data = RandomBytes(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(Crc32cHardware(0, data.data(), data.size()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Crc32cHardware)->Arg(4 << 10)->Arg(64 << 10)->Arg(1 << 20);

// A small record's body as TFRecord puts it: 12 header bytes after an 8-aligned record start.
void BM_Crc32cHardwareRecordBody(benchmark::State& state) {
  if (!Crc32cHardwareAvailable()) {
    state.SkipWithError("no SSE4.2/PCLMUL");
    return;
  }
  const size_t n = static_cast<size_t>(state.range(0));
  const std::vector<unsigned char> data = RandomBytes(n + 16);
  for (auto _ : state) benchmark::DoNotOptimize(Crc32cHardware(0, data.data() + 12, n));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Crc32cHardwareRecordBody)->Arg(8)->Arg(100)->Arg(1 << 10);

void BM_Crc32cPortable(benchmark::State& state) {
  const std::vector<unsigned char> data = RandomBytes(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(Crc32cPortable(0, data.data(), data.size()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Crc32cPortable)->Arg(4 << 10)->Arg(64 << 10)->Arg(1 << 20);

// A TFRecord stream of ~64 MiB made of records of `record_bytes` each.
std::string MakeStream(size_t record_bytes, size_t total_bytes) {
  std::mt19937 rng(2);
  std::string payload(record_bytes, '\0');
  for (auto& c : payload) c = static_cast<char>(rng());
  std::string out;
  out.reserve(total_bytes + record_bytes + 16);
  while (out.size() < total_bytes) AppendTFRecord(absl::string_view(payload), &out);
  return out;
}

// The parser driven as the async reader will drive it: 1 MiB blocks, CRCs verified, records borrowed.
void BM_ParseTFRecords(benchmark::State& state) {
  const std::string stream = MakeStream(static_cast<size_t>(state.range(0)), kParseBufferBytes);
  int64_t records = 0;
  for (auto _ : state) {
    TFRecordParser parser;
    for (size_t pos = 0; pos < stream.size(); pos += kChunk) {
      parser.Feed(AsBytes(stream).subspan(pos, std::min(kChunk, stream.size() - pos)));
      for (;;) {
        absl::StatusOr<std::optional<TFRecordView>> r = parser.Next();
        if (!r.ok()) {
          state.SkipWithError("parse error");
          return;
        }
        if (!*r) break;
        benchmark::DoNotOptimize((*r)->data.data());
        ++records;
      }
    }
    if (!parser.Finish().ok()) state.SkipWithError("finish error");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * stream.size()));
  state.SetItemsProcessed(records);
}
BENCHMARK(BM_ParseTFRecords)->Arg(100)->Arg(1 << 10)->Arg(100 << 10)->Unit(benchmark::kMillisecond);

// GZIP inflate of a TFRecord stream of text-like records (compresses ~3x), 1 MiB compressed chunks;
// throughput is decompressed bytes. Arg: 0 zlib, 1 ISA-L (skipped when built without it); compare the
// two rows of one run.
void BM_GzipInflate(benchmark::State& state) {
  const InflateLibrary library = state.range(0) == 0 ? InflateLibrary::kZlib : InflateLibrary::kIsal;
  if (library == InflateLibrary::kIsal && !IsalInflateAvailable()) {
    state.SkipWithError("built without ISA-L");
    return;
  }
  std::mt19937 rng(3);
  std::vector<std::string> records;
  size_t total = 0;
  while (total < (size_t{32} << 20)) {
    std::string r(200 + rng() % 400, ' ');
    for (auto& c : r) c = static_cast<char>('a' + rng() % 8);
    total += r.size() + 16;
    records.push_back(std::move(r));
  }
  absl::StatusOr<std::string> gz = EncodeTFRecords(records, Compression::kGzip);
  if (!gz.ok()) {
    state.SkipWithError("encode failed");
    return;
  }
  uint64_t produced = 0;
  for (auto _ : state) {
    Inflater inflater(ZlibFormat::kGzip, "bench.gz", kDefaultInflateChunkBytes, library);
    for (size_t pos = 0; pos < gz->size(); pos += kChunk) {
      inflater.Feed(AsBytes(*gz).subspan(pos, std::min(kChunk, gz->size() - pos)));
      for (;;) {
        absl::StatusOr<std::span<const std::byte>> out = inflater.Next();
        if (!out.ok()) {
          state.SkipWithError("inflate error");
          return;
        }
        if (out->empty()) break;
        produced += out->size();
      }
    }
    if (!inflater.Finish().ok()) state.SkipWithError("finish error");
  }
  state.SetBytesProcessed(static_cast<int64_t>(produced));
  state.counters["ratio"] = static_cast<double>(total) / static_cast<double>(gz->size());
}
BENCHMARK(BM_GzipInflate)->ArgName("isal")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice::io
BENCHMARK_MAIN();
