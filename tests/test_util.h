// Helpers shared by the test binaries: where the shared data lives, temporary files, and a fixture
// parameterised over the two I/O backends.
#ifndef SLUICE_TESTS_TEST_UTIL_H_
#define SLUICE_TESTS_TEST_UTIL_H_

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <system_error>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "io/tfrecord_format.h"
#include "io/zlib_stream.h"
#include "sluice/engine/reactor.h"
#include "sluice/io/sequential_reader.h"

namespace sluice::testing_util {

// ../shared/data/tfrecord, or $SLUICE_SHARED_DIR/data/tfrecord (CTest sets it to <repo>/../shared).
inline std::filesystem::path SharedTFRecordDir() {
  const char* env = std::getenv("SLUICE_SHARED_DIR");
  const std::filesystem::path shared =
      env != nullptr && *env != '\0' ? std::filesystem::path(env) : std::filesystem::path("../shared");
  return shared / "data" / "tfrecord";
}
inline std::string SharedTFRecord(const std::string& relative) { return (SharedTFRecordDir() / relative).string(); }
// Shard i (0-9) of the Chicago taxi eval split: gzip TFRecords of tf.train.Example written by TFX.
inline std::string TaxiEvalShard(int i) {
  return SharedTFRecord(
      absl::StrCat("tfx_chicago_taxi_csv_example_gen/Split-eval/data_tfrecord-0000", i, "-of-00012.gz"));
}
// Shards 0 .. n-1 of it.
inline std::vector<std::string> TaxiEvalShards(int n) {
  std::vector<std::string> files;
  for (int i = 0; i < n; ++i) files.push_back(TaxiEvalShard(i));
  return files;
}

// Every TempPath of this process starts with this prefix; at exit (each test runs in a process of its own)
// everything in the temp folder under it is removed, files the code under test put beside them (a
// cache's .index) included, so the suite leaves nothing behind.
inline std::string TempPathPrefix() { return absl::StrCat("sluice_readers_", ::getpid(), "_"); }

struct TempPathCleanup {
  ~TempPathCleanup() {
    std::error_code ignored;
    const std::string prefix = TempPathPrefix();
    std::vector<std::filesystem::path> ours;
    for (const auto& entry : std::filesystem::directory_iterator(::testing::TempDir(), ignored)) {
      if (entry.path().filename().string().rfind(prefix, 0) == 0) ours.push_back(entry.path());
    }
    for (const std::filesystem::path& path : ours) std::filesystem::remove_all(path, ignored);
  }
};

// The virtual memory this process has mapped for data (VmData in /proc/self/status), in bytes; 0 if unknown.
inline uint64_t VmDataBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmData:", 0) == 0) return std::strtoull(line.c_str() + 7, nullptr, 10) * 1024;
  }
  return 0;
}

// A per-process path under the test temp folder.
inline std::string TempPath(const std::string& name) {
  static TempPathCleanup cleanup;
  return absl::StrCat(::testing::TempDir(), "/", TempPathPrefix(), name);
}

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline std::string BackendName(const ::testing::TestParamInfo<IoBackend>& info) {
  return info.param == IoBackend::kUring ? "Uring" : "Threads";
}

// A reactor of the parameter's backend; skips the test where io_uring is refused.
class BackendTest : public ::testing::TestWithParam<IoBackend> {
 protected:
  void SetUp() override {
    ReactorOptions options;
    options.backend = GetParam();
    absl::StatusOr<std::unique_ptr<Reactor>> reactor = Reactor::Create(options);
    if (!reactor.ok()) GTEST_SKIP() << "backend unavailable: " << reactor.status();
    reactor_ = std::move(*reactor);
  }
  Reactor& reactor() { return *reactor_; }
  std::unique_ptr<Reactor> reactor_;
};

// The same for reader tests run over both block sources: GetParam() is (backend, ReadMode).
class BackendModeTest : public ::testing::TestWithParam<std::tuple<IoBackend, ReadMode>> {
 protected:
  void SetUp() override {
    ReactorOptions options;
    options.backend = std::get<0>(GetParam());
    absl::StatusOr<std::unique_ptr<Reactor>> reactor = Reactor::Create(options);
    if (!reactor.ok()) GTEST_SKIP() << "backend unavailable: " << reactor.status();
    reactor_ = std::move(*reactor);
  }
  Reactor& reactor() { return *reactor_; }
  ReadMode mode() const { return std::get<1>(GetParam()); }
  std::unique_ptr<Reactor> reactor_;
};

inline std::string BackendModeName(const ::testing::TestParamInfo<std::tuple<IoBackend, ReadMode>>& info) {
  return std::string(std::get<0>(info.param) == IoBackend::kUring ? "Uring" : "Threads") +
         (std::get<1>(info.param) == ReadMode::kMmap ? "Mmap" : "Read");
}

// `size` bytes from a generator seeded with `seed`: incompressible and the same on every run.
inline std::string RandomBytes(size_t size, uint32_t seed) {
  std::string s(size, '\0');
  std::mt19937 rng(seed);
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// Every backend with every read mode; under sanitizers, each backend and each mode once (they look for
// thread and lifetime bugs, which the same bytes through all four pairs would not add).
inline auto BackendModeValues() {
#if defined(SLUICE_SANITIZED_BUILD)
  return ::testing::Values(std::make_tuple(IoBackend::kUring, ReadMode::kRead),
                           std::make_tuple(IoBackend::kThreads, ReadMode::kMmap));
#else
  return ::testing::Combine(::testing::Values(IoBackend::kUring, IoBackend::kThreads),
                            ::testing::Values(ReadMode::kRead, ReadMode::kMmap));
#endif
}

// `data` as a GZIP or ZLIB stream (unchanged for kNone), for writing compressed test files.
inline std::string Compress(const std::string& data, Compression compression) {
  if (compression == Compression::kNone) return data;
  absl::StatusOr<io::Deflater> deflater =
      io::Deflater::Create(compression == Compression::kGzip ? io::ZlibFormat::kGzip : io::ZlibFormat::kZlib);
  EXPECT_TRUE(deflater.ok());
  std::string out;
  EXPECT_TRUE(deflater->Compress(io::AsBytes(data), &out).ok());
  EXPECT_TRUE(deflater->Finish(&out).ok());
  return out;
}

}  // namespace sluice::testing_util

#endif  // SLUICE_TESTS_TEST_UTIL_H_
