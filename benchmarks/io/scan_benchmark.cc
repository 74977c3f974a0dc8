// scan_benchmark: TFRecord scan throughput through ReadTFRecords (CRCs verified), as a command-line tool
// that scripts/bench-scan runs beside fio and dd on the same files.
//
//   scan_benchmark --write --dir=/tmp/sluice-bench --mib=2048   # writes rec100.tfrecord, rec1k..., rec100k...,
//                                                                # and rec1k.tfrecord.gz (1/8 of the size)
//   scan_benchmark --files=/tmp/sluice-bench/rec100k.tfrecord [--block_size=1048576] [--depth=4] [--direct]
//                  [--backend=uring|threads] [--repeat=3] [--gzip]
//                  [--mode=auto|read|mmap] [--window=33554432] [--prefault=populate|willneed|none]
//                  [--min_zero_copy=N]   # records >= N bytes are views (default 64 KiB; 0 never: all copied)
//   scan_benchmark --sweep --files=...                          # block sizes 256 KiB..8 MiB x depths 1..8
//
// Output, one line per file and run:
//   scan FILE block=B depth=D direct=0|1 mode=M window=W prefault=P bytes=N records=R seconds=S GB/s=X records/s=Y
// GB/s counts the bytes of the file (the decompressed bytes with --gzip, for comparison with zcat).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sluice/engine/reactor.h"
#include "sluice/io/record_readers.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/io/tfrecord.h"
#include "sluice/engine/thread_pool.h"

namespace {

struct Flags {
  bool write = false;
  bool sweep = false;
  bool direct = false;
  bool gzip = false;
  std::string dir = "/tmp/sluice-bench";
  uint64_t mib = 2048;
  std::vector<std::string> files;
  size_t block_size = sluice::kDefaultBlockSize;
  int depth = sluice::kDefaultBlocksInFlight;
  std::string backend = "uring";
  int repeat = 1;
  std::string mode = "auto";
  size_t window = sluice::kDefaultMmapWindow;
  std::string prefault = "populate";
  size_t min_zero_copy = sluice::kDefaultMinZeroCopyBytes;
};

bool ParseFlag(const char* arg, const char* name, std::string* value) {
  const size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) != 0 || arg[n] != '=') return false;
  *value = arg + n + 1;
  return true;
}

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    std::string v;
    const char* a = argv[i];
    if (std::strcmp(a, "--write") == 0) flags.write = true;
    else if (std::strcmp(a, "--sweep") == 0) flags.sweep = true;
    else if (std::strcmp(a, "--direct") == 0) flags.direct = true;
    else if (std::strcmp(a, "--gzip") == 0) flags.gzip = true;
    else if (ParseFlag(a, "--dir", &v)) flags.dir = v;
    else if (ParseFlag(a, "--mib", &v)) flags.mib = std::strtoull(v.c_str(), nullptr, 10);
    else if (ParseFlag(a, "--files", &v)) flags.files = absl::StrSplit(v, ',', absl::SkipEmpty());
    else if (ParseFlag(a, "--block_size", &v)) flags.block_size = std::strtoull(v.c_str(), nullptr, 10);
    else if (ParseFlag(a, "--depth", &v)) flags.depth = std::atoi(v.c_str());
    else if (ParseFlag(a, "--backend", &v)) flags.backend = v;
    else if (ParseFlag(a, "--repeat", &v)) flags.repeat = std::atoi(v.c_str());
    else if (ParseFlag(a, "--mode", &v)) flags.mode = v;
    else if (ParseFlag(a, "--window", &v)) flags.window = std::strtoull(v.c_str(), nullptr, 10);
    else if (ParseFlag(a, "--prefault", &v)) flags.prefault = v;
    else if (ParseFlag(a, "--min_zero_copy", &v)) {
      const size_t n = std::strtoull(v.c_str(), nullptr, 10);
      flags.min_zero_copy = n == 0 ? SIZE_MAX : n;
    }
    else {
      std::fprintf(stderr, "unknown flag %s (see the header of scan_benchmark.cc)\n", a);
      std::exit(2);
    }
  }
  return flags;
}

absl::Status WriteFile(const std::string& path, size_t record_bytes, uint64_t total_bytes,
                       sluice::Compression compression) {
  sluice::TFRecordWriterOptions options;
  options.compression = compression;
  absl::StatusOr<sluice::TFRecordWriter> writer = sluice::TFRecordWriter::Open(path, options);
  if (!writer.ok()) return writer.status();
  // Mildly compressible payloads (text-like), so the GZIP file is realistic rather than all zeros.
  std::string payload(record_bytes, '\0');
  uint64_t state = 88172645463325252ull;
  uint64_t written = 0;
  for (uint64_t i = 0; written < total_bytes; ++i) {
    for (size_t j = 0; j < payload.size(); ++j) {
      if (j % 8 == 0) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
      }
      payload[j] = static_cast<char>('a' + ((state >> (j % 8 * 8)) & 0xff) % 16);
    }
    if (absl::Status s = writer->Write(payload); !s.ok()) return s;
    written += record_bytes + 16;
  }
  return writer->Close();
}

struct ScanResult {
  uint64_t bytes = 0;
  uint64_t records = 0;
  absl::Status status;
};

sluice::Task<ScanResult> Scan(sluice::AsyncGenerator<absl::StatusOr<sluice::Record>> records) {
  ScanResult result;
  for (;;) {
    std::optional<absl::StatusOr<sluice::Record>> r = co_await records.Next();
    if (!r.has_value()) break;
    if (!r->ok()) {
      result.status = r->status();
      break;
    }
    result.bytes += (*r)->size() + 16;  // framing included: compare with the file size
    ++result.records;
  }
  co_return result;
}

double RunScan(sluice::Reactor& reactor, const std::string& file, const Flags& flags, size_t block_size,
               int depth, bool print) {
  sluice::TFRecordReaderOptions options;
  options.compression = flags.gzip ? sluice::Compression::kGzip : sluice::Compression::kNone;
  sluice::ReadOptions io;
  io.block_size = block_size;
  io.blocks_in_flight = depth;
  io.direct = flags.direct;
  io.mode = flags.mode == "read" ? sluice::ReadMode::kRead
            : flags.mode == "mmap" ? sluice::ReadMode::kMmap
                                   : sluice::ReadMode::kAuto;
  io.mmap_window = flags.window;
  io.min_zero_copy_bytes = flags.min_zero_copy;
  io.prefault = flags.prefault == "none"       ? sluice::Prefault::kNone
                : flags.prefault == "willneed" ? sluice::Prefault::kWillNeed
                                               : sluice::Prefault::kPopulate;
  const auto start = std::chrono::steady_clock::now();
  ScanResult result = sluice::SyncWait(Scan(sluice::ReadTFRecords(reactor, file, options, io)));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!result.status.ok()) {
    std::fprintf(stderr, "scan %s failed: %s\n", file.c_str(), result.status.ToString().c_str());
    std::exit(1);
  }
  const double gbps = static_cast<double>(result.bytes) / seconds / 1e9;
  if (print) {
    std::printf("scan %s block=%zu depth=%d direct=%d mode=%s window=%zu prefault=%s zero_copy=%s bytes=%llu "
                "records=%llu seconds=%.3f GB/s=%.3f records/s=%.0f\n",
                file.c_str(), block_size, depth, flags.direct ? 1 : 0, flags.mode.c_str(), flags.window,
                flags.prefault.c_str(),
                flags.min_zero_copy == SIZE_MAX ? "never" : std::to_string(flags.min_zero_copy).c_str(),
                static_cast<unsigned long long>(result.bytes), static_cast<unsigned long long>(result.records),
                seconds, gbps, static_cast<double>(result.records) / seconds);
    std::fflush(stdout);
  }
  return gbps;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  if (flags.write) {
    const uint64_t total = flags.mib << 20;
    for (const auto& [name, size] : {std::pair{"rec100.tfrecord", size_t{100}}, std::pair{"rec1k.tfrecord", size_t{1024}},
                                     std::pair{"rec100k.tfrecord", size_t{100} << 10}}) {
      const std::string path = absl::StrCat(flags.dir, "/", name);
      if (absl::Status s = WriteFile(path, size, total, sluice::Compression::kNone); !s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
        return 1;
      }
      std::printf("wrote %s\n", path.c_str());
    }
    const std::string gz = absl::StrCat(flags.dir, "/rec1k.tfrecord.gz");
    if (absl::Status s = WriteFile(gz, 1024, total / 8, sluice::Compression::kGzip); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("wrote %s\n", gz.c_str());
    return 0;
  }
  sluice::ReactorOptions reactor_options;
  reactor_options.backend = flags.backend == "threads" ? sluice::IoBackend::kThreads : sluice::IoBackend::kUring;
  absl::StatusOr<std::unique_ptr<sluice::Reactor>> reactor = sluice::Reactor::Create(reactor_options);
  if (!reactor.ok()) {
    std::fprintf(stderr, "%s\n", reactor.status().ToString().c_str());
    return 1;
  }
  if (flags.files.empty()) {
    std::fprintf(stderr, "--files=... or --write needed\n");
    return 2;
  }
  for (const std::string& file : flags.files) {
    if (flags.sweep) {
      for (size_t block : {size_t{256} << 10, size_t{1} << 20, size_t{2} << 20, size_t{4} << 20, size_t{8} << 20}) {
        for (int depth : {1, 2, 4, 8}) {
          double best = 0;
          for (int r = 0; r < flags.repeat; ++r) best = std::max(best, RunScan(**reactor, file, flags, block, depth, false));
          std::printf("sweep %s block=%zu depth=%d best_GB/s=%.3f\n", file.c_str(), block, depth, best);
          std::fflush(stdout);
        }
      }
      continue;
    }
    for (int r = 0; r < flags.repeat; ++r) RunScan(**reactor, file, flags, flags.block_size, flags.depth, true);
  }
  return 0;
}
