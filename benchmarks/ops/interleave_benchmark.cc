// Interleave of 12 TFRecord shards (12 x 8 MiB of 1 KiB records, written once with TFRecordWriter into
// $TMPDIR/sluice_interleave_bench) against raw scans of the same bytes, in the same run:
//   BM_RawRead          read(2) of the 12 files in 1 MiB chunks (the storage/page-cache ceiling)
//   BM_TFRecordScan     sluice::TFRecord over the 12 files one after the other (framing + CRCs, no interleave)
//   BM_Interleave       ListFiles-like list -> Interleave(TFRecord, cycle, block 16, num_parallel_calls)
// on a private 2-thread pool. Compare the MB/s counters ("bytes_per_second"):
//
//   build/bin/interleave_benchmark
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
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

constexpr int kShards = 12;
constexpr int64_t kRecordBytes = 1024;
constexpr int64_t kShardBytes = int64_t{8} << 20;
constexpr int64_t kRecordsPerShard = kShardBytes / kRecordBytes;
// Bytes on disk per record: 8 length + 4 length CRC + payload + 4 payload CRC.
constexpr int64_t kFileBytes = kShards * kRecordsPerShard * (kRecordBytes + 16);

const std::vector<std::string>& Shards() {
  static const std::vector<std::string> files = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::filesystem::path dir = std::filesystem::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") /
                                "sluice_interleave_bench";
    std::filesystem::create_directories(dir);
    std::vector<std::string> out;
    std::string payload(kRecordBytes, 'x');
    for (int s = 0; s < kShards; ++s) {
      std::string path = (dir / ("shard-" + std::to_string(s) + ".tfrecord")).string();
      std::error_code ec;
      if (std::filesystem::file_size(path, ec) != static_cast<uintmax_t>(kFileBytes / kShards) || ec) {
        absl::StatusOr<TFRecordWriter> writer = TFRecordWriter::Open(path);
        if (!writer.ok()) {
          std::fprintf(stderr, "%s\n", writer.status().ToString().c_str());
          std::abort();
        }
        for (int64_t r = 0; r < kRecordsPerShard; ++r) {
          payload[0] = static_cast<char>(r);
          absl::Status st = writer->Write(payload);
          if (!st.ok()) std::abort();
        }
        if (!writer->Close().ok()) std::abort();
      }
      out.push_back(path);
    }
    return out;
  }();
  return files;
}

void BM_RawRead(benchmark::State& state) {
  const std::vector<std::string>& files = Shards();
  std::vector<char> buffer(size_t{1} << 20);
  for (auto _ : state) {
    int64_t total = 0;
    for (const std::string& file : files) {
      int fd = ::open(file.c_str(), O_RDONLY);
      if (fd < 0) std::abort();
      for (;;) {
        ssize_t n = ::read(fd, buffer.data(), buffer.size());
        if (n <= 0) break;
        total += n;
      }
      ::close(fd);
    }
    benchmark::DoNotOptimize(total);
  }
  state.SetBytesProcessed(state.iterations() * kFileBytes);
}
BENCHMARK(BM_RawRead)->Unit(benchmark::kMillisecond)->UseRealTime();

template <class T>
int64_t DrainBytes(const Dataset<T>& ds) {
  Options options;
  options.thread_pool_size = 2;
  Iterator<T> it = ds.MakeIterator(options);
  int64_t bytes = 0;
  for (;;) {
    absl::StatusOr<std::optional<std::string>> x = it.NextBlocking();
    if (!x.ok()) std::abort();
    if (!x->has_value()) break;
    bytes += static_cast<int64_t>((*x)->size());
  }
  return bytes;
}

void BM_TFRecordScan(benchmark::State& state) {
  Dataset<std::string> ds = TFRecord(Shards());
  for (auto _ : state) {
    if (DrainBytes(ds) != kShards * kShardBytes) state.SkipWithError("wrong byte count");
  }
  state.SetBytesProcessed(state.iterations() * kFileBytes);
}
BENCHMARK(BM_TFRecordScan)->Unit(benchmark::kMillisecond)->UseRealTime();

Dataset<std::string> OpenShard(std::string file) { return TFRecord({std::move(file)}); }

void BM_Interleave(benchmark::State& state) {
  Dataset<std::string> ds =
      FromVector(Shards()).Interleave(OpenShard, state.range(0), 16, state.range(1), state.range(2) != 0);
  for (auto _ : state) {
    if (DrainBytes(ds) != kShards * kShardBytes) state.SkipWithError("wrong byte count");
  }
  state.SetBytesProcessed(state.iterations() * kFileBytes);
}
BENCHMARK(BM_Interleave)
    ->ArgNames({"cycle", "calls", "det"})
    ->Args({12, 0, 1})
    ->Args({12, 2, 1})
    ->Args({12, 2, 0})
    ->Args({4, 2, 1})
    ->Args({4, 4, 1})
    ->Args({12, kAutotune, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
