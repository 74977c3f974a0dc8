#include "sluice/ops/cache.h"

#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "io/crc32c.h"
#include "sluice/io/tensor.h"
#include "sluice/ops/element_codec.h"
#include "tests/test_util.h"
#include "tests/ops/test_helpers.h"

namespace sluice {
namespace cache_test_file {
namespace {

using test_ops::Collect;
using test_ops::Values;

using testing_util::ReadWholeFile;
using testing_util::TempPath;
using testing_util::WriteFile;

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(i);
  return v;
}

// Range(n) that counts how many elements the input really produced.
Dataset<int64_t> Counted(int64_t n, std::shared_ptr<std::atomic<int64_t>> calls) {
  return Range(n).Map([calls](int64_t x) {
    calls->fetch_add(1);
    return x;
  });
}

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

template <class T>
size_t StreamHeaderSize() {
  std::string header;
  EncodeElementStreamHeader<T>(&header);
  return header.size();
}

// A valid cache index (the layout of ops/cache.cc) for a data file of `size` bytes.
std::string IndexFor(uint64_t records, uint64_t size) {
  char index[28];
  std::memcpy(index, "SLCIDX01", 8);
  for (int i = 0; i < 8; ++i) index[8 + i] = static_cast<char>(records >> (8 * i));
  for (int i = 0; i < 8; ++i) index[16 + i] = static_cast<char>(size >> (8 * i));
  uint32_t crc = io::MaskCrc(io::Crc32c(index, 24));
  for (int i = 0; i < 4; ++i) index[24 + i] = static_cast<char>(crc >> (8 * i));
  return std::string(index, sizeof(index));
}

// Types with a codec but no element type name: their cache files carry no type check.
struct UnnamedInt {
  int64_t v = 0;
};
struct UnnamedString {
  std::string v;
};

}  // namespace
}  // namespace cache_test_file

template <>
struct ElementCodec<cache_test_file::UnnamedInt> {
  static void Encode(const cache_test_file::UnnamedInt& x, std::string* out) {
    ElementCodec<int64_t>::Encode(x.v, out);
  }
  static absl::Status Decode(std::string_view* in, cache_test_file::UnnamedInt* x) {
    return ElementCodec<int64_t>::Decode(in, &x->v);
  }
};
template <>
struct ElementCodec<cache_test_file::UnnamedString> {
  static void Encode(const cache_test_file::UnnamedString& x, std::string* out) {
    ElementCodec<std::string>::Encode(x.v, out);
  }
  static absl::Status Decode(std::string_view* in, cache_test_file::UnnamedString* x) {
    return ElementCodec<std::string>::Decode(in, &x->v);
  }
};

namespace cache_test_file {
namespace {

// A fresh cache path for each test, with any leftovers of an earlier run removed.
std::string CachePath(const std::string& name) {
  std::string path = TempPath(name);
  for (const char* suffix : {"", ".index", ".lockfile", ".index.tmp"}) std::filesystem::remove(path + suffix);
  return path;
}

TEST(MemoryCacheTest, SecondPassReplaysWithoutRunningTheInput) {
  auto calls = std::make_shared<std::atomic<int64_t>>(0);
  auto cached = Counted(10, calls).Cache();
  // Both passes in one iterator: the second replays the cache.
  EXPECT_EQ(Values(cached.Concatenate(cached)), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9,  //
                                                                       0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(calls->load(), 10);
  EXPECT_EQ(cached.Cardinality(), 10);
  EXPECT_EQ(Range(3).Repeat().Cache().Cardinality(), kInfiniteCardinality);
  EXPECT_NE(cached.DebugString().find("Cache(filename=\"\")"), std::string::npos) << cached.DebugString();
}

TEST(MemoryCacheTest, RepeatAfterCacheRunsTheInputOnce) {
  auto calls = std::make_shared<std::atomic<int64_t>>(0);
  auto ds = Counted(5, calls).Cache().Repeat(3);
  std::vector<int64_t> got = Values(ds);
  ASSERT_EQ(got.size(), 15u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], static_cast<int64_t>(i % 5));
  EXPECT_EQ(calls->load(), 5);
}

// The cache is the iterator's (issue #12): a second iterator runs the input again, and neither sees
// the other's cache.
TEST(MemoryCacheTest, EachIteratorHasItsOwnCache) {
  auto calls = std::make_shared<std::atomic<int64_t>>(0);
  auto ds = Counted(10, calls).Cache().Repeat(2);
  EXPECT_EQ(Values(ds).size(), 20u);
  EXPECT_EQ(calls->load(), 10);
  EXPECT_EQ(Values(ds).size(), 20u);
  EXPECT_EQ(calls->load(), 20);
  // Two iterators interleaved: each fills its own cache in its first epoch and replays it in the second.
  Iterator<int64_t> a = ds.MakeIterator();
  Iterator<int64_t> b = ds.MakeIterator();
  std::vector<int64_t> got_a, got_b;
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<std::optional<int64_t>> x = a.NextBlocking();
    absl::StatusOr<std::optional<int64_t>> y = b.NextBlocking();
    ASSERT_TRUE(x.ok() && x->has_value() && y.ok() && y->has_value());
    got_a.push_back(**x);
    got_b.push_back(**y);
  }
  EXPECT_EQ(got_a, got_b);
  EXPECT_EQ(calls->load(), 40);
}

TEST(MemoryCacheTest, AbandonedPassPublishesNothing) {
  auto calls = std::make_shared<std::atomic<int64_t>>(0);
  auto cached = Counted(10, calls).Cache();
  // One iterator: a pass cut short by Take (its cache stream dropped before the end), then two full
  // passes: the first of them runs the input again, in full, and the second replays it.
  std::vector<int64_t> got = Values(cached.Take(3).Concatenate(cached).Concatenate(cached));
  ASSERT_EQ(got.size(), 23u);
  EXPECT_EQ(std::vector<int64_t>(got.begin(), got.begin() + 3), Iota(3));
  EXPECT_EQ(std::vector<int64_t>(got.begin() + 3, got.begin() + 13), Iota(10));
  EXPECT_EQ(std::vector<int64_t>(got.begin() + 13, got.end()), Iota(10));
  EXPECT_EQ(calls->load(), 3 + 10);
}

TEST(MemoryCacheTest, ErrorsPassThroughAndAreNotCached) {
  auto ds = Range(5)
                .Map([](int64_t x) -> absl::StatusOr<int64_t> {
                  if (x == 2) return absl::DataLossError("bad");
                  return x;
                })
                .Cache()
                .Repeat(2);
  auto got = Collect(ds);
  ASSERT_EQ(got.size(), 9u);
  EXPECT_EQ(got[2].status().code(), absl::StatusCode::kDataLoss);
  std::vector<int64_t> replay;
  for (size_t i = 5; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].status();
    replay.push_back(*got[i]);
  }
  EXPECT_EQ(replay, (std::vector<int64_t>{0, 1, 3, 4}));
}

TEST(MemoryCacheTest, ConcurrentIteratorsAndMidStreamDestruction) {
  auto calls = std::make_shared<std::atomic<int64_t>>(0);
  auto ds = Counted(500, calls).Prefetch(4).Cache().Repeat(2).Prefetch(2);
  std::vector<std::thread> threads;
  std::vector<std::vector<int64_t>> results(3);
  for (int t = 0; t < 3; ++t) threads.emplace_back([&ds, &results, t] { results[t] = Values(ds); });
  for (auto& t : threads) t.join();
  std::vector<int64_t> twice = Iota(500);
  twice.insert(twice.end(), twice.begin(), twice.end());
  for (auto& r : results) EXPECT_EQ(r, twice);
  EXPECT_EQ(calls->load(), 3 * 500);  // each iterator ran the input once, for its own cache
  for (int round = 0; round < 10; ++round) {
    auto big = Range(0, 1000000).Prefetch(8).Cache().Prefetch(2);
    Iterator<int64_t> it = big.MakeIterator();
    for (int i = 0; i < round; ++i) ASSERT_TRUE(it.NextBlocking().ok());
  }
}

struct Opaque {  // no ElementCodec: memory caching still works
  int64_t v;
};
static_assert(!HasElementCodec<Opaque>);

TEST(MemoryCacheTest, TypesWithoutCodec) {
  auto calls = std::make_shared<std::atomic<int64_t>>(0);
  auto ds = Counted(4, calls).Map([](int64_t x) { return Opaque{x * 2}; }).Cache().Repeat(2);
  std::vector<Opaque> got = Values(ds);
  ASSERT_EQ(got.size(), 8u);
  EXPECT_EQ(got[3].v, 6);
  EXPECT_EQ(got[7].v, 6);
  EXPECT_EQ(calls->load(), 4);
}

TEST(FileCacheTest, FirstPassWritesLaterPassesAndRunsReadTheFile) {
  std::string path = CachePath("cache_basic");
  auto calls = std::make_shared<std::atomic<int64_t>>(0);
  auto ds = Counted(1000, calls).Cache(path);
  EXPECT_EQ(Values(ds), Iota(1000));
  EXPECT_EQ(calls->load(), 1000);
  EXPECT_TRUE(Exists(path));
  EXPECT_TRUE(Exists(path + ".index"));
  EXPECT_FALSE(Exists(path + ".lockfile"));
  EXPECT_EQ(Values(ds), Iota(1000));
  EXPECT_EQ(calls->load(), 1000);
  // Another definition (as a later run of the program would make) reads the same file.
  auto other_calls = std::make_shared<std::atomic<int64_t>>(0);
  EXPECT_EQ(Values(Counted(1000, other_calls).Cache(path)), Iota(1000));
  EXPECT_EQ(other_calls->load(), 0);
  EXPECT_EQ(Values(ds.Repeat(2)).size(), 2000u);
  EXPECT_EQ(calls->load(), 1000);
  EXPECT_NE(ds.DebugString().find(path), std::string::npos);
}

TEST(FileCacheTest, StructuredAndLargeElements) {
  std::string path = CachePath("cache_structured");
  auto ds = Range(4)
                .Map([](int64_t x) {
                  std::string big(x == 2 ? (size_t{3} << 20) : static_cast<size_t>(x), 'a' + static_cast<char>(x));
                  return std::make_pair(Tensor::FromVector<float>({static_cast<float>(x), 0.5f}), big);
                })
                .Cache(path);
  auto first = Values(ds);
  auto second = Values(ds);
  ASSERT_EQ(first.size(), 4u);
  ASSERT_EQ(second.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(first[i].first, second[i].first);
    EXPECT_EQ(first[i].second, second[i].second);
  }
  EXPECT_EQ(second[2].second.size(), size_t{3} << 20);
}

TEST(FileCacheTest, AbandonedPassLeavesNoPartialCache) {
  std::string path = CachePath("cache_abandoned");
  auto calls = std::make_shared<std::atomic<int64_t>>(0);
  auto ds = Counted(100000, calls).Cache(path);
  {
    Iterator<int64_t> it = ds.MakeIterator();
    for (int i = 0; i < 5000; ++i) ASSERT_TRUE(it.NextBlocking().ok());
    EXPECT_TRUE(Exists(path + ".lockfile"));
  }
  EXPECT_FALSE(Exists(path));
  EXPECT_FALSE(Exists(path + ".index"));
  EXPECT_FALSE(Exists(path + ".lockfile"));
  EXPECT_EQ(Values(ds.Take(10)), Iota(10));  // also abandoned
  EXPECT_FALSE(Exists(path + ".index"));
  calls->store(0);
  EXPECT_EQ(Values(ds).size(), 100000u);
  EXPECT_EQ(calls->load(), 100000);
  EXPECT_TRUE(Exists(path + ".index"));
}

TEST(FileCacheTest, SecondWriterIsRefusedWhileTheFirstWrites) {
  std::string path = CachePath("cache_concurrent");
  auto ds = Range(100).Cache(path);
  Iterator<int64_t> writer = ds.MakeIterator();
  ASSERT_EQ(**writer.NextBlocking(), 0);
  auto refused = Collect(ds);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(refused[0].status().message().find("already in use"), std::string::npos) << refused[0].status();
  EXPECT_NE(refused[0].status().message().find(path + ".lockfile"), std::string::npos) << refused[0].status();
  int64_t n = 1;
  for (;;) {
    absl::StatusOr<std::optional<int64_t>> next = writer.NextBlocking();
    ASSERT_TRUE(next.ok());
    if (!next->has_value()) break;
    EXPECT_EQ(**next, n++);
  }
  EXPECT_EQ(n, 100);
  EXPECT_EQ(Values(ds), Iota(100));  // now a reader
}

TEST(FileCacheTest, ErrorsPassThroughAndAreNotCached) {
  std::string path = CachePath("cache_errors");
  auto ds = Range(5)
                .Map([](int64_t x) -> absl::StatusOr<std::string> {
                  if (x == 1) return absl::NotFoundError("gone");
                  return std::to_string(x);
                })
                .Cache(path);
  auto first = Collect(ds);
  ASSERT_EQ(first.size(), 5u);
  EXPECT_EQ(first[1].status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Values(ds), (std::vector<std::string>{"0", "2", "3", "4"}));
}

TEST(FileCacheTest, DamagedFilesAreDataLossNamingFileAndOffset) {
  std::string path = CachePath("cache_damaged");
  auto ds = Range(100).Cache(path);
  ASSERT_EQ(Values(ds).size(), 100u);
  std::string bytes = ReadWholeFile(path);
  // Flip one payload byte of record 10 (8-byte magic, the element stream header, then records of
  // 8 + 8 + 4 bytes).
  std::string corrupt = bytes;
  size_t record10 = 8 + StreamHeaderSize<int64_t>() + 10 * 20;
  corrupt[record10 + 8] ^= 0x5a;
  WriteFile(path, corrupt);
  auto got = Collect(ds);
  ASSERT_EQ(got.size(), 11u);
  EXPECT_EQ(*got[9], 9);
  EXPECT_EQ(got[10].status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(got[10].status().message().find(path), std::string::npos) << got[10].status();
  EXPECT_NE(got[10].status().message().find(absl::StrCat("offset ", record10)), std::string::npos) << got[10].status();
  // Truncated: the index no longer matches the file.
  WriteFile(path, bytes.substr(0, bytes.size() - 7));
  auto truncated = Collect(ds);
  ASSERT_EQ(truncated.size(), 1u);
  EXPECT_EQ(truncated[0].status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(truncated[0].status().message().find(path), std::string::npos);
  // A damaged index.
  WriteFile(path, bytes);
  std::string index = ReadWholeFile(path + ".index");
  WriteFile(path + ".index", "garbage");
  auto bad_index = Collect(ds);
  ASSERT_EQ(bad_index.size(), 1u);
  EXPECT_EQ(bad_index[0].status().code(), absl::StatusCode::kDataLoss);
  // A damaged element stream header (its magic) is DataLoss at the header's offset.
  std::string bad_header = bytes;
  bad_header[8] ^= 0x20;
  WriteFile(path + ".index", index);
  WriteFile(path, bad_header);
  auto header_lost = Collect(ds);
  ASSERT_EQ(header_lost.size(), 1u);
  EXPECT_EQ(header_lost[0].status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(header_lost[0].status().message().find("offset 8"), std::string::npos) << header_lost[0].status();
  // Elements that do not decode, in a type without a name (so the header cannot tell): DataLoss.
  std::string mismatch = CachePath("cache_unnamed_mismatch");
  ASSERT_EQ(Values(Range(3).Map([](int64_t x) { return UnnamedInt{x + 1000}; }).Cache(mismatch)).size(), 3u);
  auto wrong_type = Collect(Range(3).Map([](int64_t x) { return UnnamedString{std::to_string(x)}; }).Cache(mismatch));
  ASSERT_EQ(wrong_type.size(), 1u);
  EXPECT_EQ(wrong_type[0].status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(wrong_type[0].status().message().find("element 0"), std::string::npos) << wrong_type[0].status();
}

TEST(FileCacheTest, CacheOfAnotherElementTypeIsANamedError) {
  std::string path = CachePath("cache_type_mismatch");
  ASSERT_EQ(Values(Range(3).BatchVectors(2).Cache(path)), (std::vector<std::vector<int64_t>>{{0, 1}, {2}}));
  auto calls = std::make_shared<std::atomic<int64_t>>(0);
  auto as_tensors = Counted(3, calls).Map([](int64_t x) { return Tensor::Scalar<int64_t>(x); }).Cache(path);
  auto got = Collect(as_tensors);
  ASSERT_EQ(got.size(), 1u);
  const absl::Status& status = got[0].status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find(path), std::string::npos) << status;
  EXPECT_NE(status.message().find("element stream holds vector<int64>, reader expects Tensor"), std::string::npos)
      << status;
  EXPECT_EQ(calls->load(), 0);  // the input does not run over a cache it cannot use
  // The cache is left alone: its own type still reads it.
  EXPECT_EQ(Values(Range(3).BatchVectors(2).Cache(path)).size(), 2u);
}

TEST(FileCacheTest, CacheFromAnOlderFileFormatIsANamedError) {
  // Format 1 had no element stream header: rebuild such a file (and a matching index) from a new one.
  std::string path = CachePath("cache_old_format");
  ASSERT_EQ(Values(Range(5).Cache(path)).size(), 5u);
  std::string bytes = ReadWholeFile(path);
  std::string old_format = "SLCACHE1" + bytes.substr(8 + StreamHeaderSize<int64_t>());
  WriteFile(path, old_format);
  WriteFile(path + ".index", IndexFor(5, old_format.size()));
  auto got = Collect(Range(5).Cache(path));
  ASSERT_EQ(got.size(), 1u);
  const absl::Status& status = got[0].status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find(path), std::string::npos) << status;
  EXPECT_NE(status.message().find("older"), std::string::npos) << status;
  // A file from a newer sluice says so too.
  bytes[7] = '7';
  WriteFile(path, bytes);
  WriteFile(path + ".index", IndexFor(5, bytes.size()));
  auto newer = Collect(Range(5).Cache(path));
  ASSERT_EQ(newer.size(), 1u);
  EXPECT_EQ(newer[0].status().code(), absl::StatusCode::kFailedPrecondition) << newer[0].status();
  EXPECT_NE(newer[0].status().message().find("newer"), std::string::npos) << newer[0].status();
}

TEST(FileCacheTest, WriteErrorIsYieldedOnceAndThePassGoesOnUncached) {
  std::string path = CachePath("cache_write_error");
  // A file size limit makes write(2) fail with EFBIG (SIGXFSZ ignored) once the first 1 MiB flush runs.
  struct rlimit saved;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit limited = saved;
  limited.rlim_cur = 64 << 10;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  auto ds = Range(200000).Cache(path);  // 20 bytes per record: 4 MB
  auto got = Collect(ds);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
  std::signal(SIGXFSZ, old_handler);
  ASSERT_EQ(got.size(), 200001u);
  int64_t next = 0;
  int errors = 0;
  for (auto& x : got) {
    if (!x.ok()) {
      ++errors;
      EXPECT_NE(x.status().message().find(path), std::string::npos) << x.status();
      continue;
    }
    EXPECT_EQ(*x, next++);
  }
  EXPECT_EQ(errors, 1);
  EXPECT_EQ(next, 200000);
  EXPECT_FALSE(Exists(path));
  EXPECT_FALSE(Exists(path + ".index"));
  EXPECT_FALSE(Exists(path + ".lockfile"));
  EXPECT_EQ(Values(ds).size(), 200000u);  // without the limit the next pass writes the cache
  EXPECT_TRUE(Exists(path + ".index"));
}

TEST(FileCacheTest, UnwritablePathIsAnErrorNamingIt) {
  std::string path = TempPath("no_such_dir/sub/cache");
  auto got = Collect(Range(3).Cache(path));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(got[0].status().message().find(path), std::string::npos) << got[0].status();
}

TEST(FileCacheTest, DestroyedMidStreamWithWorkInFlight) {
  std::string path = CachePath("cache_midstream");
  for (int round = 0; round < 8; ++round) {
    auto ds = Range(0, 1000000).Prefetch(8).Cache(path).Prefetch(2);
    Iterator<int64_t> it = ds.MakeIterator();
    for (int i = 0; i < round * 10; ++i) ASSERT_TRUE(it.NextBlocking().ok());
  }
  EXPECT_FALSE(Exists(path + ".lockfile"));
  EXPECT_FALSE(Exists(path + ".index"));
}

}  // namespace
}  // namespace cache_test_file
}  // namespace sluice
