// Iterator checkpoints (docs/checkpoint.md): save mid-stream, destroy, restore, and get exactly the rest.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <iterator>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/xxhash64.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "tests/ops/checkpoint_helpers.h"
#include "tests/sanitized_build.h"
#include "tests/test_util.h"

namespace sluice {
namespace checkpoint_test_file {
namespace {

using checkpoint_testing::Elements;
using checkpoint_testing::GeneratedRange;
using checkpoint_testing::IntOf;
using checkpoint_testing::MaybeFail;
using checkpoint_testing::Pull;
using checkpoint_testing::Show;
using checkpoint_testing::Sorted;
using checkpoint_testing::SumOfBatch;

constexpr size_t kMaxElements = 3000;

// Checks prefix + restored suffix == uninterrupted, cutting after `cut` elements. Also checks that the
// saved iterator itself goes on unchanged after the save.
// `before_pass` runs before the saved and the restored iterator are made.
void CheckCut(
    const Dataset<int64_t>& ds, const Elements& full, size_t cut, const std::string& what,
    const std::function<void()>& before_pass = [] {}) {
  before_pass();
  Iterator<int64_t> it = ds.MakeIterator();
  Elements prefix = Pull(it, cut);
  ASSERT_EQ(prefix.size(), std::min(cut, full.size())) << what;
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << what << "\n" << state.status();
  Elements live = Pull(it, kMaxElements);
  { Iterator<int64_t> dropped = std::move(it); }
  before_pass();
  absl::StatusOr<Iterator<int64_t>> restored = ds.RestoreIterator(*state);
  ASSERT_TRUE(restored.ok()) << what << "\n" << restored.status();
  Elements suffix = Pull(*restored, kMaxElements);
  Elements joined = prefix;
  joined.insert(joined.end(), suffix.begin(), suffix.end());
  // Both sequences in full (the first 64 elements), for a failure that does not repeat.
  auto listing = [&] {
    std::string out;
    for (const Elements* seq : std::initializer_list<const Elements*>{&full, &joined}) {
      absl::StrAppend(&out, seq == &full ? "\n  uninterrupted:" : "\n  prefix+restored:");
      for (size_t i = 0; i < seq->size() && i < 64; ++i) absl::StrAppend(&out, " ", Show((*seq)[i]));
    }
    return out;
  };
  ASSERT_EQ(joined.size(), full.size()) << what << " cut at " << cut << listing();
  for (size_t i = 0; i < full.size(); ++i) {
    ASSERT_EQ(joined[i], full[i]) << what << " cut at " << cut << ", element " << i << ": " << Show(joined[i])
                                  << " vs " << Show(full[i]) << listing();
  }
  ASSERT_EQ(live.size(), suffix.size()) << what;
  for (size_t i = 0; i < live.size(); ++i) ASSERT_EQ(live[i], suffix[i]) << what << " live element " << i;
}

std::vector<std::string> SmallTFRecords() {
  return {testing_util::SharedTFRecord("torchdata_example.tfrecord"),
          testing_util::SharedTFRecord("beam_foo_bar.tfrecord")};
}

ParseSpec TaxiSpec() {
  ParseSpec spec;
  spec.var.push_back(VarLenFeature{"fare", DType::kFloat32});
  spec.var.push_back(VarLenFeature{"trip_seconds", DType::kInt64});
  return spec;
}

// A parsed example (or batch of them) as one number: a hash of its encoding.
int64_t HashParsed(ParsedExample parsed) {
  std::string bytes;
  ElementCodec<ParsedExample>::Encode(parsed, &bytes);
  return static_cast<int64_t>(XxHash64(bytes) % 1000000007);  // small: later ops multiply it
}

// A Tensor of int64 as one number (as HashParsed).
int64_t CkptHashTensor(const Tensor& t) {
  std::string bytes;
  ElementCodec<Tensor>::Encode(t, &bytes);
  return static_cast<int64_t>(XxHash64(bytes) % 1000000007);
}

// x as a sequence of 1 + x % 5 copies of itself: padded and bucketed by length below.
Tensor CkptSequenceOf(int64_t x) {
  return Tensor::FromVector<int64_t>(std::vector<int64_t>(static_cast<size_t>(1 + (x % 5 + 5) % 5), x));
}

constexpr const char* kCacheFileSuffixes[] = {"", ".index", ".lockfile", ".index.tmp"};

// The file Caches of the random pipeline being built.
std::vector<std::string>& CkptCachePaths() {
  static std::vector<std::string> paths;
  return paths;
}

// A fresh path for a file Cache in a random pipeline, leftovers of an earlier run removed.
std::string CkptCachePath() {
  static int next = 0;
  std::string path = testing_util::TempPath(absl::StrCat("checkpoint_cache_", next++));
  for (const char* suffix : kCacheFileSuffixes) std::remove((path + suffix).c_str());
  CkptCachePaths().push_back(path);
  return path;
}

// Taxi examples, then records that are not examples (ParseExample error elements naming their index).
Dataset<std::string> ExampleRecords(int64_t taxi_records) {
  return TFRecord({testing_util::TaxiEvalShard(0)}, Compression::kGzip)
      .Take(taxi_records)
      .Concatenate(TFRecord(SmallTFRecords()));
}

// A random pipeline of covered ops over int64 elements; `desc` says what it is. Every op keeps the
// pipeline deterministic (nondeterministic ParallelMap has a test of its own).
Dataset<int64_t> RandomPipeline(std::mt19937& rng, int depth, std::string* desc) {
  auto pick = [&rng](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  if (depth <= 0 || pick(5) == 0) {
    switch (pick(8)) {
      case 0: {
        int64_t start = pick(10), stop = start + pick(60), step = 1 + pick(3);
        *desc += absl::StrCat("Range(", start, ",", stop, ",", step, ")");
        return Range(start, stop, step);
      }
      case 1: {
        std::vector<int64_t> values(static_cast<size_t>(pick(30)));
        for (auto& v : values) v = pick(1000);
        *desc += absl::StrCat("FromVector(", values.size(), ")");
        return FromVector(std::move(values));
      }
      case 2:
        *desc += "TFRecord.Map(size)";
        return TFRecord(SmallTFRecords()).Map([](std::string s) { return static_cast<int64_t>(s.size()); });
      case 3:
        *desc += "Range(5).Concatenate(Error)";
        return Range(5).Concatenate(Dataset<int64_t>(
            ops::MakeErrorSource<int64_t>("Test", absl::DataLossError("an error element from a source"))));
      case 4: {
        int64_t n = 5 + pick(40);
        *desc += absl::StrCat("ExampleRecords(", n, ").ParseExample.Map(hash)");
        return ExampleRecords(n).ParseExample(TaxiSpec()).Map(HashParsed);
      }
      case 5: {
        int64_t n = 5 + pick(40), size = 1 + pick(6);
        *desc += absl::StrCat("ExampleRecords(", n, ").Batch(", size, ").ParseExample.Map(hash)");
        return ExampleRecords(n).Batch(size).ParseExample(TaxiSpec()).Map(HashParsed);
      }
      case 6: {
        int64_t cycle = 1 + pick(3), block = 1 + pick(3);
        *desc += absl::StrCat("FromVector(files).Interleave(TFRecord,", cycle, ",", block, ").Map(size)");
        std::vector<std::string> files = SmallTFRecords();
        files.push_back(files[0]);
        files.push_back(testing_util::SharedTFRecord("missing.tfrecord"));  // an error element
        return FromVector(std::move(files))
            .Interleave([](std::string file) { return TFRecord({file}); }, cycle, block)
            .Map([](std::string s) { return static_cast<int64_t>(s.size()); });
      }
      default: {
        int64_t n = 20 + pick(80);
        *desc += absl::StrCat("Range(", n, ")");
        return Range(n);
      }
    }
  }
  const int op = pick(33);
  std::string inner;
  Dataset<int64_t> in = RandomPipeline(rng, depth - 1, &inner);
  auto wrap = [&](std::string name) { *desc += absl::StrCat(inner, ".", name); };
  switch (op) {
    case 0:
      wrap("Map(fail)");
      return in.Map(MaybeFail);
    case 1:
      wrap("Map(+1)");
      return in.Map([](int64_t x) { return x + 1; });
    case 2:
      wrap("Filter");
      return in.Filter([](const int64_t& x) { return x % 3 != 0; });
    case 3: {
      int64_t n = pick(40);
      wrap(absl::StrCat("Take(", n, ")"));
      return in.Take(n);
    }
    case 4: {
      int64_t n = pick(10);
      wrap(absl::StrCat("Skip(", n, ")"));
      return in.Skip(n);
    }
    case 5: {
      int64_t n = 1 + pick(3);
      wrap(absl::StrCat("Repeat(", n, ")"));
      return in.Repeat(n);
    }
    case 6: {
      int64_t size = 1 + pick(20);
      uint64_t seed = rng();
      bool reshuffle = pick(2) == 0;
      wrap(absl::StrCat("Shuffle(", size, ",", reshuffle, ")"));
      return in.Shuffle(size, seed, reshuffle);
    }
    case 7: {
      int64_t size = 1 + pick(5);
      bool drop = pick(2) == 0;
      wrap(absl::StrCat("Batch(", size, ",", drop, ").Unbatch"));
      return in.Batch(size, drop).Unbatch().Map(IntOf);
    }
    case 8: {
      int64_t size = 1 + pick(5);
      wrap(absl::StrCat("BatchVectors(", size, ").Map(sum)"));
      return in.BatchVectors(size).Map([](std::vector<int64_t> batch) {
        int64_t sum = 0;
        for (int64_t x : batch) sum = sum * 7 + x;
        return sum;
      });
    }
    case 9:
      wrap("Enumerate.Map");
      return in.Enumerate(pick(5)).Map(
          [](std::pair<int64_t, int64_t> p) { return p.first * 1000 + p.second; });
    case 10: {
      std::string other;
      Dataset<int64_t> b = RandomPipeline(rng, depth - 1, &other);
      *desc += absl::StrCat("Zip(", inner, ", ", other, ").Map");
      return Zip(in, b).Map([](std::pair<int64_t, int64_t> p) { return p.first * 10000 + p.second; });
    }
    case 11: {
      std::string other;
      Dataset<int64_t> b = RandomPipeline(rng, depth - 1, &other);
      *desc += absl::StrCat(inner, ".Concatenate(", other, ")");
      return in.Concatenate(b);
    }
    case 12: {
      int64_t limit = 10 + pick(500);
      wrap(absl::StrCat("TakeWhile(<", limit, ")"));
      return in.TakeWhile([limit](const int64_t& x) { return x < limit; });
    }
    case 13:
      wrap("Scan");
      return in.Scan(int64_t{0},
                     [](const int64_t& sum, int64_t x) { return std::make_pair(sum + x, sum * 2 + x); });
    case 14:
      wrap("IgnoreErrors");
      return in.IgnoreErrors();
    case 15: {
      int64_t size = 1 + pick(8);
      wrap(absl::StrCat("Prefetch(", size, ")"));
      return in.Prefetch(size);
    }
    case 16:
      wrap("Prefetch(kAutotune)");
      return in.Prefetch(kAutotune);
    case 17: {
      int64_t shards = 1 + pick(3);
      int64_t index = pick(static_cast<int>(shards));
      wrap(absl::StrCat("Shard(", shards, ",", index, ")"));
      return in.Shard(shards, index);
    }
    case 18: {
      int64_t calls = pick(4) == 0 ? kAutotune : 2 + pick(3);
      wrap(absl::StrCat("ParallelMap(fail,", calls, ")"));
      return in.Map(MaybeFail, calls, /*deterministic=*/true);
    }
    case 19: {
      int64_t size = 1 + pick(5);
      int64_t calls = pick(4) == 0 ? kAutotune : 2 + pick(2);
      bool drop = pick(2) == 0;
      wrap(absl::StrCat("Batch(", size, ",", drop, ",", calls, ").Unbatch"));
      return in.Batch(size, drop, calls, /*deterministic=*/true).Unbatch().Map(IntOf);
    }
    case 20: {
      int64_t size = 1 + pick(4);
      wrap(absl::StrCat("Batch(", size, ",parallel).Map(sum)"));
      return in.Batch(size, false, 2, true).Map(SumOfBatch);
    }
    case 21: {
      int64_t cycle = 1 + pick(4), block = 1 + pick(3);
      wrap(absl::StrCat("Interleave(Range(x%6).Map,", cycle, ",", block, ")"));
      return in.Interleave([](int64_t x) { return Range(x % 6).Map([x](int64_t y) { return x * 100 + y; }); },
                           cycle, block);
    }
    case 22: {
      int64_t cycle = 1 + pick(3);
      wrap(absl::StrCat("Interleave(Range.Shuffle.Prefetch,", cycle, ",2)"));
      return in.Interleave(
          [](int64_t x) {
            return Range(x % 9).Shuffle(4, static_cast<uint64_t>(x)).Map(MaybeFail).Prefetch(2);
          },
          cycle, 2);
    }
    case 24: {
      int64_t cycle = 1 + pick(4), block = 1 + pick(3);
      int64_t calls = pick(3) == 0 ? kAutotune : 1 + pick(static_cast<int>(cycle));
      wrap(absl::StrCat("ParallelInterleave(Range(x%7).Map,", cycle, ",", block, ",", calls, ")"));
      return in.Interleave([](int64_t x) { return Range(x % 7).Map([x](int64_t y) { return x * 100 + y; }); },
                           cycle, block, calls, /*deterministic=*/true);
    }
    case 23:
      wrap("FlatMap(Range(x%4).Batch.Unbatch)");
      return in.FlatMap([](int64_t x) { return Range(x % 4).Batch(2, false, 2).Unbatch().Map(IntOf); });
    case 25: {
      std::string other;
      Dataset<int64_t> b = RandomPipeline(rng, depth - 1, &other);
      const double weight = 0.2 + 0.2 * pick(5);
      const bool stop = pick(3) == 0, rerandomize = pick(3) == 0;
      const uint64_t seed = rng();
      *desc += absl::StrCat("SampleFromDatasets(", inner, ", ", other, ",", weight, ",", stop, ",",
                            rerandomize, ")");
      return SampleFromDatasets<int64_t>({in, b}, {weight, 1.0}, seed, stop, rerandomize);
    }
    case 26: {
      std::string other;
      Dataset<int64_t> b = RandomPipeline(rng, depth - 1, &other);
      const bool stop = pick(2) == 0;
      const int64_t n = 5 + pick(80);
      // Index 2 is out of range: an error element.
      *desc += absl::StrCat("ChooseFromDatasets(", inner, ", ", other, ",Range(", n, ")%7%3,", stop, ")");
      return ChooseFromDatasets<int64_t>({in, b}, Range(n).Map([](int64_t x) { return x * x % 7 % 3; }),
                                         stop);
    }
    case 27: {
      const int64_t size = 1 + pick(5);
      const bool fixed = pick(2) == 0, drop = pick(3) == 0;
      wrap(absl::StrCat("Map(sequence).PaddedBatch(", size, ",", fixed, ",", drop, ").Map(hash)"));
      std::vector<ops::PaddedShape> shapes;
      std::vector<Tensor> values;
      if (fixed) {
        shapes = {{6}};
        values = {Tensor::Scalar<int64_t>(-1)};
      }
      return in.Map(CkptSequenceOf).PaddedBatch(size, shapes, values, drop).Map(CkptHashTensor);
    }
    case 28: {
      const bool pad = pick(2) == 0, drop = pick(3) == 0;
      wrap(
          absl::StrCat("Map(sequence).BucketBySequenceLength({2,4},{3,2,2},", pad, ",", drop, ").Map(hash)"));
      return in.Map(CkptSequenceOf)
          .BucketBySequenceLength([](const Tensor& t) { return t.shape().dim(0); }, {2, 4}, {3, 2, 2}, {}, {},
                                  pad, /*no_padding=*/false, drop)
          .Map(CkptHashTensor);
    }
    case 29: {
      const int64_t size = 1 + pick(4);
      std::vector<int64_t> sizes = {1 + pick(3)};
      if (pick(2) == 0) sizes.push_back(pick(3));
      const bool drop = pick(3) == 0;
      wrap(absl::StrCat("Batch(", size, ").Rebatch({", absl::StrJoin(sizes, ","), "},", drop, ").Map(sum)"));
      return in.Batch(size).Rebatch(sizes, drop).Map(SumOfBatch);
    }
    case 30:
    case 31:
      wrap("Cache()");
      return in.Cache();
    case 32: {
      wrap("Cache(file)");
      return in.Cache(CkptCachePath());
    }
    default:
      wrap("Map(fail)");
      return in.Map(MaybeFail);
  }
}

// 200 pipelines in CI; a longer run sets SLUICE_CHECKPOINT_PIPELINES (and SLUICE_CHECKPOINT_SEED;
// SLUICE_CHECKPOINT_VERBOSE=1 names each pipeline as it goes; SLUICE_CHECKPOINT_FIRST=k runs from
// pipeline k on, to repeat one that failed).
int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoi(value) : fallback;
}

// Names the pipeline being checked on stderr when one runs for more than `patience` (under a sanitizer
// on a loaded machine a whole run takes a minute): a hang then says which pipeline it was before CTest's
// timeout kills the test. It reports only; it asserts nothing about time.
class HangReporter {
 public:
  explicit HangReporter(std::chrono::seconds patience) : patience_(patience), thread_([this] { Watch(); }) {}
  ~HangReporter() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  void Checking(std::string what) {
    std::lock_guard<std::mutex> lock(mutex_);
    what_ = std::move(what);
    ++generation_;
  }

 private:
  void Watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!done_) {
      const uint64_t seen = generation_;
      if (!wake_.wait_for(lock, patience_, [&] { return done_ || generation_ != seen; }) && !what_.empty()) {
        std::cerr << "still checking after " << patience_.count() << " s: " << what_ << std::endl;
      }
    }
  }

  const std::chrono::seconds patience_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string what_;
  uint64_t generation_ = 0;
  bool done_ = false;
  std::thread thread_;  // last: starts after the members it reads
};

// Pipelines [first, first + count) of `seed`'s sequence, each cut at a random point; the ones before
// `first` are only built (building draws from the generator, running does not). Returns how many were
// cut in the middle.
int CheckRandomPipelines(uint32_t seed, int first, int count) {
  std::mt19937 rng(seed);
  const bool verbose = EnvInt("SLUICE_CHECKPOINT_VERBOSE", 0) != 0;  // names each pipeline before its cut
  HangReporter hangs(std::chrono::seconds(60));
  int cut_mid = 0;
  for (int p = 0; p < first + count; ++p) {
    std::string desc;
    CkptCachePaths().clear();
    Dataset<int64_t> ds = RandomPipeline(rng, 4, &desc);
    const uint32_t cut_draw = rng();
    if (p < first) continue;
    hangs.Checking(absl::StrCat("seed ", seed, ", pipeline ", p, ": ", desc));
    // A file Cache's first pass writes the file and yields its input's errors; later iterators read the
    // file. So one run first, and the iterators are gone before the next starts: a file Cache one left
    // unfinished (under a Zip) would hold its lock.
    {
      Iterator<int64_t> first_run = ds.MakeIterator();
      Pull(first_run, kMaxElements);
    }
    // A pass publishes its cache only when it reads the input to the end, which under a Take depends on
    // how far a parallel op read ahead; a pass begun after another published reads the file, without the
    // input's errors. So a cache the first run left unpublished is removed before every later iterator:
    // they all write it, and see the same elements.
    std::vector<std::string> unpublished;
    for (const std::string& path : CkptCachePaths()) {
      if (!std::filesystem::exists(path + ".index")) unpublished.push_back(path);
    }
    auto before_pass = [&unpublished] {
      for (const std::string& path : unpublished) {
        for (const char* suffix : kCacheFileSuffixes) std::remove((path + suffix).c_str());
      }
    };
    Elements full;
    before_pass();
    {
      Iterator<int64_t> full_it = ds.MakeIterator();
      full = Pull(full_it, kMaxElements);
    }
    // Too long for this test (nested Interleaves of Repeats can multiply past the cap): skipped.
    if (full.size() >= kMaxElements) continue;
    const size_t cut = static_cast<size_t>(cut_draw % (full.size() + 1));
    if (cut > 0 && cut < full.size()) ++cut_mid;
    if (verbose) std::cerr << "pipeline " << p << " cut at " << cut << ": " << desc << std::endl;
    CheckCut(ds, full, cut, absl::StrCat("seed ", seed, ", pipeline ", p, ": ", desc), before_pass);
    if (::testing::Test::HasFatalFailure()) return cut_mid;
  }
  return cut_mid;
}

TEST(CheckpointTest, RandomPipelinesRestoreExactly) {
  const int pipelines = EnvInt("SLUICE_CHECKPOINT_PIPELINES", 200 / testing_util::kSanitizerSlowdown);
  const int first = std::clamp(EnvInt("SLUICE_CHECKPOINT_FIRST", 0), 0, pipelines);
  const int cut_mid = CheckRandomPipelines(static_cast<uint32_t>(EnvInt("SLUICE_CHECKPOINT_SEED", 20261204)),
                                           first, pipelines - first);
  // Most cuts fall in the middle; a handful of pipelines (one repeated) may not.
  if (pipelines - first >= 20) {
    EXPECT_GT(cut_mid, (pipelines - first) / 2);
  }
}

// Pipelines longer runs found broken, kept in CI. Seed 7, pipeline 1394 (ChooseFromDatasets ending a Zip
// whose Prefetch was still reading, on the io_uring thread that had resumed the restored iterator after
// a file read): the Prefetch's teardown joined its producer there, and the producer waited for that
// thread's next completion. The test hung until async teardowns handed off on I/O threads too.
// Seed 10, pipeline 1327 (ListFiles(shuffle).Map.Repeat(3).Map(parallel 4).Take(4).Repeat(2).Map): the
// parallel Map ran ahead of the Take through the inner Repeat and began more ListFiles passes, so the
// outer Repeat's second epoch got another pass number and two fresh iterators differed. Fixed by pass
// numbers per Repeat epoch (IteratorState::ForEpoch).
TEST(CheckpointTest, RandomPipelinesThatFoundBugs) {
  CheckRandomPipelines(7, 1394, 1);
  CheckRandomPipelines(10, 1327, 1);
}

// What `got` has that `want` lacks and the reverse (both sorted), for failure messages.
std::string Difference(const Elements& got, const Elements& want) {
  std::vector<std::string> a, b, extra, missing;
  for (const auto& e : got) a.push_back(Show(e));
  for (const auto& e : want) b.push_back(Show(e));
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(extra));
  std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::back_inserter(missing));
  return absl::StrCat(got.size(), " elements, ", want.size(), " expected; extra {",
                      absl::StrJoin(extra, ", "), "}, missing {", absl::StrJoin(missing, ", "), "}");
}

// Nondeterministic ParallelMap (and parallel Batch) on top of a random pipeline: prefix plus restored
// suffix, and prefix plus the live continuation, hold the same elements as an uninterrupted run.
TEST(CheckpointTest, RandomNondeterministicPipelinesRestoreTheSameMultiset) {
  const int pipelines = EnvInt("SLUICE_CHECKPOINT_PIPELINES", 200) / 4;
  std::mt19937 rng(static_cast<uint32_t>(EnvInt("SLUICE_CHECKPOINT_SEED", 20261204)) + 1);
  for (int p = 0; p < pipelines; ++p) {
    std::string desc;
    Dataset<int64_t> ds = RandomPipeline(rng, 3, &desc);
    const int64_t calls = 2 + static_cast<int64_t>(rng() % 3);
    const uint32_t kind = rng() % 5;
    if (kind == 4) {
      // Unseeded: another seed per iterator; never stopping early, so every element comes out.
      desc += ".SampleFromDatasets(unseeded, Range(100,130))";
      ds = SampleFromDatasets<int64_t>({ds, Range(100, 130)}, {}, std::nullopt, false);
    } else if (kind == 0) {
      desc += ".Batch(3,nondeterministic).Unbatch";
      ds = ds.Batch(3, false, calls, /*deterministic=*/false).Unbatch().Map(IntOf);
    } else if (kind == 1) {
      desc += ".ParallelInterleave(Range(x%5),3,2,nondeterministic)";
      ds = ds.Interleave([](int64_t x) { return Range(x % 5).Map([x](int64_t y) { return x * 100 + y; }); },
                         3, 2, std::min<int64_t>(calls, 3), /*deterministic=*/false);
    } else {
      desc += ".ParallelMap(fail,nondeterministic)";
      ds = ds.Map(MaybeFail, calls, /*deterministic=*/false);
    }
    if (rng() % 2 == 0) {
      desc += ".Prefetch(2)";
      ds = ds.Prefetch(2);
    }
    const std::string what = absl::StrCat("pipeline ", p, ": ", desc);
    Elements full;
    {
      Iterator<int64_t> first = ds.MakeIterator();  // as above: a file Cache written first
      Pull(first, kMaxElements);
    }
    {
      Iterator<int64_t> full_it = ds.MakeIterator();
      full = Sorted(Pull(full_it, kMaxElements));
    }
    const size_t cut = static_cast<size_t>(rng() % (full.size() + 1));
    Iterator<int64_t> it = ds.MakeIterator();
    Elements prefix = Pull(it, cut);
    absl::StatusOr<std::string> state = it.SaveBlocking();
    ASSERT_TRUE(state.ok()) << what << "\n" << state.status();
    Elements live = prefix;
    for (auto& e : Pull(it, kMaxElements)) live.push_back(std::move(e));
    { Iterator<int64_t> dropped = std::move(it); }
    auto restored = ds.RestoreIterator(*state);
    ASSERT_TRUE(restored.ok()) << what << "\n" << restored.status();
    Elements joined = prefix;
    for (auto& e : Pull(*restored, kMaxElements)) joined.push_back(std::move(e));
    ASSERT_EQ(Sorted(joined), full) << what << " cut at " << cut << ": " << Difference(Sorted(joined), full);
    ASSERT_EQ(Sorted(live), full) << what << " live, cut at " << cut << ": "
                                  << Difference(Sorted(live), full);
  }
}

TEST(CheckpointTest, SaveAtStartAndAtEnd) {
  auto ds = Range(30).Shuffle(7, 3).Map(MaybeFail).BatchVectors(4).Unbatch().Prefetch(3);
  Iterator<int64_t> it = ds.MakeIterator();
  Elements full = Pull(it, kMaxElements);
  CheckCut(ds, full, 0, "at 0");
  CheckCut(ds, full, full.size(), "at the end");
  // Saved after the end was seen: the restored iterator is at the end too.
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  auto restored = ds.RestoreIterator(*state);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_TRUE(Pull(*restored, 10).empty());
}

TEST(CheckpointTest, SaveTwiceFromOneIterator) {
  auto ds = Range(200).Shuffle(50, 9).Prefetch(4).BatchVectors(3).Unbatch();
  Iterator<int64_t> it = ds.MakeIterator();
  Elements first = Pull(it, 17);
  absl::StatusOr<std::string> state1 = it.SaveBlocking();
  Elements second = Pull(it, 40);
  absl::StatusOr<std::string> state2 = it.SaveBlocking();
  Elements rest = Pull(it, kMaxElements);
  ASSERT_TRUE(state1.ok() && state2.ok());

  auto from1 = ds.RestoreIterator(*state1);
  ASSERT_TRUE(from1.ok()) << from1.status();
  Elements after1 = Pull(*from1, kMaxElements);
  Elements expected1 = second;
  expected1.insert(expected1.end(), rest.begin(), rest.end());
  EXPECT_EQ(after1, expected1);

  auto from2 = ds.RestoreIterator(*state2);
  ASSERT_TRUE(from2.ok()) << from2.status();
  EXPECT_EQ(Pull(*from2, kMaxElements), rest);
}

TEST(CheckpointTest, UnseededShuffleKeepsItsSeedAndPassesAcrossRepeat) {
  auto ds = Range(40).Shuffle(10).Repeat(3);
  Iterator<int64_t> it = ds.MakeIterator();
  Pull(it, 45);  // inside the second epoch
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  Elements live = Pull(it, kMaxElements);
  auto restored = ds.RestoreIterator(*state);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(Pull(*restored, kMaxElements), live);
  EXPECT_EQ(live.size(), 75u);
}

TEST(CheckpointTest, SaveToFileAndRestoreFromFile) {
  auto ds = TFRecord(SmallTFRecords()).Repeat(4).Enumerate().Map([](std::pair<int64_t, std::string> p) {
    return p.first * 100 + static_cast<int64_t>(p.second.size());
  });
  Iterator<int64_t> it = ds.MakeIterator();
  Pull(it, 9);
  const std::string path = testing_util::TempPath("checkpoint_state");
  ASSERT_TRUE(it.SaveToFileBlocking(path).ok());
  ASSERT_TRUE(it.SaveToFileBlocking(path).ok());  // over an existing file
  Elements live = Pull(it, kMaxElements);
  auto restored = ds.RestoreIteratorFromFile(path);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(Pull(*restored, kMaxElements), live);
  EXPECT_EQ(live.size(), 24u - 9u);
  EXPECT_EQ(ds.RestoreIteratorFromFile(path + ".missing").status().code(), absl::StatusCode::kNotFound);
}

// A saver killed between create and rename leaves "<path>.tmp.<pid>.<n>"; the next save removes it once
// its process is gone and it is old, and leaves the temporaries of live processes and recent ones.
TEST(CheckpointTest, SaveToFileRemovesStaleTemporariesOfDeadProcesses) {
  const std::string path = testing_util::TempPath("checkpoint_stale");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // reaped: `child` names no process now
  const std::string dead_old = absl::StrCat(path, ".tmp.", child, ".1");
  const std::string dead_recent = absl::StrCat(path, ".tmp.", child, ".2");
  const std::string live_old = absl::StrCat(path, ".tmp.", ::getppid(), ".3");
  const std::string other_name = absl::StrCat(path, "x.tmp.", child, ".4");
  for (const std::string& file : {dead_old, dead_recent, live_old, other_name})
    testing_util::WriteFile(file, "torn");
  const timespec old_times[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
  for (const std::string& file : {dead_old, live_old, other_name}) {
    ASSERT_EQ(::utimensat(AT_FDCWD, file.c_str(), old_times, 0), 0) << file;
  }
  Iterator<int64_t> it = Range(0, 10).MakeIterator();
  ASSERT_TRUE(it.SaveToFileBlocking(path).ok());
  const auto exists = [](const std::string& file) { return ::access(file.c_str(), F_OK) == 0; };
  EXPECT_FALSE(exists(dead_old));
  EXPECT_TRUE(exists(dead_recent));
  EXPECT_TRUE(exists(live_old));
  EXPECT_TRUE(exists(other_name));
  EXPECT_TRUE(exists(path));
  for (const std::string& file : {dead_recent, live_old, other_name}) std::remove(file.c_str());
}

TEST(CheckpointTest, GzipTFRecordShardsRestoreExactly) {
  std::vector<std::string> files = testing_util::TaxiEvalShards(3);
  auto ds = TFRecord(files, Compression::kGzip)
                .Map([](std::string s) { return static_cast<int64_t>(XxHash64(s) >> 1); })
                .Prefetch(16);
  Iterator<int64_t> it = ds.MakeIterator();
  Elements full = Pull(it, 100000);
  ASSERT_GT(full.size(), 300u);
  for (const auto& e : full) ASSERT_TRUE(e.ok()) << e.status();
  std::mt19937 rng(7);
  for (int i = 0; i < 5; ++i) {
    CheckCut(ds, full, rng() % full.size(), "gzip shards");
    if (HasFatalFailure()) return;
  }
}

int64_t Hash(std::string s) { return static_cast<int64_t>(XxHash64(s) >> 1); }

TEST(CheckpointTest, ListFilesTextLinesAndFixedLengthRecordsRestoreExactly) {
  const std::string lines = testing_util::TempPath("checkpoint_lines.txt");
  const std::string fixed = testing_util::TempPath("checkpoint_fixed.bin");
  std::string text, bytes;
  for (int i = 0; i < 40; ++i) absl::StrAppend(&text, "line ", i, "\n");
  for (int i = 0; i < 50; ++i) absl::StrAppend(&bytes, absl::StrFormat("%08d", i * 7));
  testing_util::WriteFile(lines, text);
  testing_util::WriteFile(fixed, "HEADER" + bytes + "FOOT");
  std::vector<Dataset<int64_t>> sources = {
      ListFiles({testing_util::SharedTFRecord("tfx_chicago_taxi_csv_example_gen/Split-eval/*.gz")}, true, 3)
          .Repeat(2)
          .Map(Hash),
      TextLines({lines, lines}).Map(Hash).Shuffle(5, 1),
      FixedLengthRecords({fixed}, 8, 6, 4).Map(Hash).BatchVectors(3).Unbatch(),
  };
  for (size_t s = 0; s < sources.size(); ++s) {
    Iterator<int64_t> it = sources[s].MakeIterator();
    Elements full = Pull(it, kMaxElements);
    ASSERT_GT(full.size(), 20u) << s;
    for (size_t cut :
         {size_t{0}, size_t{1}, full.size() / 3, full.size() / 2 + 1, full.size() - 1, full.size()}) {
      CheckCut(sources[s], full, cut, absl::StrCat("source ", s));
      if (HasFatalFailure()) return;
    }
  }
}

TEST(CheckpointTest, ChangedPipelineIsFailedPreconditionNamingTheOp) {
  auto saved_from = Range(100).Shuffle(1000, 5).Map([](int64_t x) { return x; });
  auto changed = Range(100).Shuffle(100, 5).Map([](int64_t x) { return x; });
  Iterator<int64_t> it = saved_from.MakeIterator();
  Pull(it, 3);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok());
  auto restored = changed.RestoreIterator(*state);
  ASSERT_EQ(restored.status().code(), absl::StatusCode::kFailedPrecondition) << restored.status();
  const std::string message(restored.status().message());
  EXPECT_NE(
      message.find("saved from Shuffle(buffer_size=1000, reshuffle_each_iteration=true, seed=5) at /0, this "
                   "pipeline has Shuffle(buffer_size=100, reshuffle_each_iteration=true, seed=5) at /0"),
      std::string::npos)
      << message;

  auto longer = Range(100).Shuffle(1000, 5).Map([](int64_t x) { return x; }).Take(5);
  EXPECT_EQ(longer.RestoreIterator(*state).status().code(), absl::StatusCode::kFailedPrecondition);
  auto other_type = Range(100).Shuffle(1000, 5).Map([](int64_t x) { return static_cast<double>(x); });
  EXPECT_EQ(other_type.RestoreIterator(*state).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(CheckpointTest, TruncatedOrFlippedStateIsDataLossNeverACrash) {
  auto ds = Range(60).Map(MaybeFail).Shuffle(8, 1).BatchVectors(3).Unbatch().Prefetch(4);
  Iterator<int64_t> it = ds.MakeIterator();
  Pull(it, 11);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok());
  for (size_t length = 0; length < state->size(); ++length) {
    auto restored = ds.RestoreIterator(state->substr(0, length));
    ASSERT_FALSE(restored.ok()) << length;
    EXPECT_EQ(restored.status().code(), absl::StatusCode::kDataLoss) << length << " " << restored.status();
  }
  for (size_t at = 0; at < state->size(); ++at) {
    std::string flipped = *state;
    flipped[at] = static_cast<char>(flipped[at] ^ (1 << (at % 8)));
    auto restored = ds.RestoreIterator(flipped);
    ASSERT_FALSE(restored.ok()) << at;
    EXPECT_TRUE(restored.status().code() == absl::StatusCode::kDataLoss ||
                restored.status().code() == absl::StatusCode::kFailedPrecondition)
        << at << " " << restored.status();
  }
}

// Corruption behind a valid checksum (what a hand-made state could hold) reaches the decoders: it must
// fail cleanly or restore something, never crash.
TEST(CheckpointTest, CorruptBodyWithValidChecksumNeverCrashes) {
  auto ds = Zip(Range(50).Shuffle(6, 2), Range(50).BatchVectors(4).Unbatch())
                .Map([](std::pair<int64_t, int64_t> p) { return p.first + p.second; })
                .Prefetch(3);
  Iterator<int64_t> it = ds.MakeIterator();
  Pull(it, 13);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok());
  constexpr size_t kHeader = 13;
  std::mt19937 rng(11);
  const std::vector<std::string> failures =
      checkpoint_testing::RestoreCorruptedStates(ds, *state, 1000, Options(), 200, [&rng](std::string* bad) {
        for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips) {
          const size_t at = kHeader + rng() % (bad->size() - kHeader);
          (*bad)[at] = static_cast<char>((*bad)[at] ^ (1 << (rng() % 8)));
        }
        if (rng() % 4 == 0) bad->resize(kHeader + rng() % (bad->size() - kHeader));
      });
  EXPECT_GT(failures.size(), 50u);
}

TEST(CheckpointTest, UncoveredOpsFailNamingOpAndPath) {
  auto expect_unsupported = [](auto ds, const std::string& expected) {
    auto it = ds.MakeIterator();
    (void)it.NextBlocking();
    auto state = it.SaveBlocking();
    ASSERT_EQ(state.status().code(), absl::StatusCode::kFailedPrecondition) << expected;
    EXPECT_NE(state.status().message().find(expected), std::string::npos) << state.status();
  };
  // Results of a parallel map without an ElementCodec cannot be saved.
  struct Opaque {
    int64_t x;
  };
  expect_unsupported(Range(10).Map([](int64_t x) { return Opaque{x}; }, 2).Map([](Opaque o) { return o.x; }),
                     "checkpointing ParallelMap at /0 is not supported yet");
  // An inner dataset holding an uncovered op: the slot's error names it, and the Interleave.
  expect_unsupported(
      Range(3).Interleave([](int64_t x) { return GeneratedRange(x + 1).Map(MaybeFail); }, 2, 1),
      "Interleave at /, cycle slot 0: checkpointing FromGenerator at /0 is not supported yet");
  expect_unsupported(GeneratedRange(10), "checkpointing FromGenerator at / is not supported yet");
  int64_t n = 0;
  expect_unsupported(FromGenerator([&n] {
                       return [&n]() -> std::optional<int64_t> {
                         if (n >= 5) return std::nullopt;
                         return n++;
                       };
                     }).Prefetch(2),
                     "checkpointing FromGenerator at /0 is not supported yet");
  struct NoCodec {
    int64_t x;
  };
  expect_unsupported(Range(10).Map([](int64_t x) { return NoCodec{x}; }).Shuffle(4, 1),
                     "checkpointing Shuffle at / is not supported yet");
  // A failed save leaves the iterator usable.
  auto ds = GeneratedRange(10);
  auto it = ds.MakeIterator();
  EXPECT_FALSE(it.SaveBlocking().ok());
  EXPECT_EQ(Pull(it, 100).size(), 10u);
}

TEST(CheckpointTest, PrefetchSavedWithAFullBufferRestoresExactly) {
  auto produced = std::make_shared<std::atomic<int64_t>>(0);
  auto ds = Range(100)
                .Map([produced](int64_t x) {
                  produced->fetch_add(1);
                  return MaybeFail(x);
                })
                .Prefetch(8);
  Iterator<int64_t> it = ds.MakeIterator();
  Elements prefix = Pull(it, 5);
  // Buffer full: 8 buffered and one more in the producer's hands, waiting to be pushed (bounded wait;
  // the checks below hold whether or not it filled).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (produced->load() < 5 + 8 + 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(produced->load(), 14);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  Elements live = Pull(it, kMaxElements);
  ASSERT_EQ(live.size(), 95u);
  it = ds.MakeIterator();  // drop the saved one
  auto restored = ds.RestoreIterator(*state);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(Pull(*restored, kMaxElements), live);
}

TEST(CheckpointTest, SaveFromACoroutine) {
  auto ds = Range(50).Prefetch(4).Map(MaybeFail);
  Iterator<int64_t> it = ds.MakeIterator();
  auto run = [](Iterator<int64_t>* it) -> Task<absl::StatusOr<std::string>> {
    for (int i = 0; i < 10; ++i) (void)co_await it->Next();
    co_return co_await it->Save();
  };
  absl::StatusOr<std::string> state = SyncWait(run(&it));
  ASSERT_TRUE(state.ok()) << state.status();
  Elements live = Pull(it, kMaxElements);
  auto restored = ds.RestoreIterator(*state);
  ASSERT_TRUE(restored.ok());
  EXPECT_EQ(Pull(*restored, kMaxElements), live);
}

// Figures for the report: the state of a full Shuffle(1000) of int64, and save/restore time.
TEST(CheckpointTest, FiguresShuffleStateSizeAndTime) {
  auto ds = Range(100000).Shuffle(1000, 1);
  Iterator<int64_t> it = ds.MakeIterator();
  Pull(it, 10);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok());
  constexpr int kRounds = 200;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRounds; ++i) state = it.SaveBlocking();
  const auto saved = std::chrono::steady_clock::now();
  for (int i = 0; i < kRounds; ++i) ASSERT_TRUE(ds.RestoreIterator(*state).ok());
  const auto restored = std::chrono::steady_clock::now();
  auto us = [](auto d) { return std::chrono::duration_cast<std::chrono::microseconds>(d).count() / kRounds; };
  std::cout << "Shuffle(1000) of int64: state " << state->size() << " bytes, save " << us(saved - start)
            << " us, restore " << us(restored - saved) << " us\n";
  EXPECT_LT(state->size(), 20000u);

  // A file pipeline with a full Prefetch(64) of batches: the buffered batches dominate the state.
  std::vector<std::string> files = testing_util::TaxiEvalShards(3);
  auto batches = TFRecord(files, Compression::kGzip).Batch(8).Prefetch(64);
  Iterator<std::vector<std::string>> file_it = batches.MakeIterator();
  (void)file_it.NextBlocking();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // lets the buffer fill; not asserted
  absl::StatusOr<std::string> file_state = file_it.SaveBlocking();
  ASSERT_TRUE(file_state.ok()) << file_state.status();
  std::cout << "TFRecord(3 GZIP shards).Batch(8).Prefetch(64), buffer full: state " << file_state->size()
            << " bytes\n";
}

}  // namespace
}  // namespace checkpoint_test_file
}  // namespace sluice
