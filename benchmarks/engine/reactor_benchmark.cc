// Reactor throughput from a page-cached file, against blocking pread of the same sizes.
//
// One 256 MiB file is written to $TMPDIR (or /tmp) once per run, read once to warm the page cache, and
// deleted at exit. Each reactor benchmark reports `GB/s` (wall clock, all in-flight reads together) and
// `vs_pread`: that rate over a single thread's blocking pread loop of the same read size, measured first.
//
//   build/bin/reactor_benchmark                       # everything, well under a minute
//   build/bin/reactor_benchmark --benchmark_filter=Uring
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "benchmark/benchmark.h"
#include "sluice/engine/reactor.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "sluice/engine/when_all.h"

namespace sluice {
namespace {

constexpr size_t kFileSize = size_t{256} << 20;
constexpr size_t kSmall = 4096;
constexpr size_t kLarge = size_t{1} << 20;
constexpr int kSmallReadsPerIteration = 512;
constexpr int kLargeReadsPerIteration = 64;
constexpr int kLargeInFlight = 8;

struct BenchFile {
  std::string path;
  int fd = -1;
};

BenchFile* g_file = nullptr;  // set once created, so main() knows whether to delete it

BenchFile& File() {
  static BenchFile* file = [] {
    auto* f = new BenchFile;
    const char* dir = std::getenv("TMPDIR");
    f->path = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/sluice_reactor_bench_XXXXXX";
    const int fd = ::mkstemp(f->path.data());
    if (fd < 0) {
      std::perror("mkstemp");
      std::exit(1);
    }
    std::vector<char> block(kLarge);
    std::mt19937_64 rng(7);
    for (size_t off = 0; off < kFileSize; off += block.size()) {
      for (char& c : block) c = static_cast<char>(rng());
      if (::pwrite(fd, block.data(), block.size(), static_cast<off_t>(off)) != static_cast<ssize_t>(block.size())) {
        std::perror("pwrite");
        std::exit(1);
      }
    }
    // Warm the page cache so that every benchmark measures the I/O path, not the disk.
    for (size_t off = 0; off < kFileSize; off += block.size()) {
      if (::pread(fd, block.data(), block.size(), static_cast<off_t>(off)) < 0) std::perror("pread");
    }
    f->fd = fd;
    g_file = f;
    return f;
  }();
  return *file;
}

std::vector<uint64_t> RandomOffsets(size_t count, size_t size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> offsets(count);
  for (uint64_t& o : offsets) o = (rng() % ((kFileSize - size) / size)) * size;
  return offsets;
}

// Bytes/s of one thread's blocking pread loop per read size: set by BM_Pread (registered, hence run,
// first) so that `vs_pread` divides by the figure printed above it; measured here when filtered out.
double g_pread_rate[2] = {0, 0};

double PreadRate(size_t size) {
  double& rate = g_pread_rate[size == kSmall ? 0 : 1];
  if (rate > 0) return rate;
  const int fd = File().fd;
  std::vector<char> buf(size, 1);
  std::vector<uint64_t> offsets = RandomOffsets(4096, size, 3);
  size_t bytes = 0;
  const auto start = std::chrono::steady_clock::now();
  // About 0.3 s of reads, bounded in count as well.
  for (int round = 0; round < 100000; ++round) {
    for (int k = 0; k < 64; ++k) {
      if (::pread(fd, buf.data(), size, static_cast<off_t>(offsets[(round * 64 + k) % offsets.size()])) > 0) {
        bytes += size;
      }
    }
    if (std::chrono::steady_clock::now() - start > std::chrono::milliseconds(300)) break;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rate = static_cast<double>(bytes) / secs;
  return rate;
}

std::unique_ptr<Reactor> MakeReactor(IoBackend backend) {
  ReactorOptions options;
  options.backend = backend;
  absl::StatusOr<std::unique_ptr<Reactor>> io = Reactor::Create(options);
  if (!io.ok()) return nullptr;
  return std::move(*io);
}

// One in-flight stream: reads `count` blocks of `size` at offsets[first + k * stride] into `buf`.
// `buf` is preallocated (and pre-faulted) by the caller, who keeps it alive until the task completes:
// fresh buffers would make the benchmark measure page faults.
Task<absl::Status> Stream(Reactor* io, int fd, const std::vector<uint64_t>* offsets, size_t first, size_t stride,
                          int count, std::span<std::byte> buf) {
  for (int k = 0; k < count; ++k) {
    const uint64_t off = (*offsets)[(first + k * stride) % offsets->size()];
    absl::StatusOr<size_t> n = co_await io->Read(fd, buf, off);
    if (!n.ok()) co_return n.status();
  }
  co_return absl::OkStatus();
}

Task<absl::Status> Batch(Reactor* io, int fd, const std::vector<uint64_t>* offsets, size_t start,
                         std::vector<std::vector<std::byte>>* buffers, int total) {
  const int in_flight = static_cast<int>(buffers->size());
  std::vector<Task<absl::Status>> streams;
  for (int s = 0; s < in_flight; ++s) {
    std::span<std::byte> buf((*buffers)[s]);
    streams.push_back(Stream(io, fd, offsets, start + s, in_flight, total / in_flight, buf));
  }
  std::vector<absl::Status> results = co_await WhenAll(std::move(streams));
  for (const absl::Status& r : results) {
    if (!r.ok()) co_return r;
  }
  co_return absl::OkStatus();
}

void RunReactor(benchmark::State& state, IoBackend backend, size_t size, bool random) {
  const int in_flight = static_cast<int>(state.range(0));
  std::unique_ptr<Reactor> io = MakeReactor(backend);
  if (io == nullptr) {
    state.SkipWithError("backend unavailable");
    return;
  }
  const int per_iteration = size == kSmall ? kSmallReadsPerIteration : kLargeReadsPerIteration;
  std::vector<uint64_t> offsets;
  if (random) {
    offsets = RandomOffsets(1 << 16, size, 11);
  } else {
    for (uint64_t off = 0; off + size <= kFileSize; off += size) offsets.push_back(off);
  }
  std::vector<std::vector<std::byte>> buffers(in_flight, std::vector<std::byte>(size, std::byte{1}));
  const double pread_rate = PreadRate(size);
  size_t start = 0;
  size_t bytes = 0;
  const auto begin = std::chrono::steady_clock::now();
  for (auto _ : state) {
    absl::Status s = SyncWait(Batch(io.get(), File().fd, &offsets, start, &buffers, per_iteration));
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      break;
    }
    start += per_iteration;
    bytes += static_cast<size_t>(per_iteration) * size;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  const double rate = static_cast<double>(bytes) / secs;
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["GB/s"] = rate / 1e9;
  state.counters["vs_pread"] = rate / pread_rate;
}

void BM_Pread(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  std::vector<char> buf(size, 1);
  std::vector<uint64_t> offsets = RandomOffsets(1 << 16, size, 11);
  const int fd = File().fd;
  size_t i = 0;
  const auto begin = std::chrono::steady_clock::now();
  for (auto _ : state) {
    benchmark::DoNotOptimize(::pread(fd, buf.data(), size, static_cast<off_t>(offsets[i++ % offsets.size()])));
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
  const double rate = static_cast<double>(state.iterations() * size) / secs;
  state.counters["GB/s"] = rate / 1e9;
  g_pread_rate[size == kSmall ? 0 : 1] = rate;
}
BENCHMARK(BM_Pread)->Arg(kSmall)->Arg(kLarge)->MinTime(0.3)->UseRealTime();

void BM_RandomRead4K_Uring(benchmark::State& state) { RunReactor(state, IoBackend::kUring, kSmall, true); }
void BM_RandomRead4K_Threads(benchmark::State& state) { RunReactor(state, IoBackend::kThreads, kSmall, true); }
void BM_SeqRead1M_Uring(benchmark::State& state) { RunReactor(state, IoBackend::kUring, kLarge, false); }
void BM_SeqRead1M_Threads(benchmark::State& state) { RunReactor(state, IoBackend::kThreads, kLarge, false); }
BENCHMARK(BM_RandomRead4K_Uring)->ArgName("qd")->Arg(1)->Arg(32)->MinTime(0.5)->UseRealTime();
BENCHMARK(BM_RandomRead4K_Threads)->ArgName("qd")->Arg(1)->Arg(32)->MinTime(0.5)->UseRealTime();
BENCHMARK(BM_SeqRead1M_Uring)->ArgName("qd")->Arg(kLargeInFlight)->MinTime(0.5)->UseRealTime();
BENCHMARK(BM_SeqRead1M_Threads)->ArgName("qd")->Arg(kLargeInFlight)->MinTime(0.5)->UseRealTime();

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (sluice::g_file != nullptr) {
    ::close(sluice::g_file->fd);
    ::unlink(sluice::g_file->path.c_str());
  }
  return 0;
}
