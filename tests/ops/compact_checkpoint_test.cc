// Compact checkpoints (Options::compact_checkpoints, docs/checkpoint.md): states of source positions and
// counters only, whatever the buffers hold, restoring exactly; pipelines that cannot are refused.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/xxhash64.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "tests/ops/checkpoint_helpers.h"
#include "tests/sanitized_build.h"
#include "tests/test_util.h"

namespace sluice::compact_checkpoint_test {
namespace {

using checkpoint_testing::Elements;
using checkpoint_testing::MaybeFail;
using checkpoint_testing::Pull;
using checkpoint_testing::Show;

constexpr size_t kAll = 100000;

Options Compact() {
  Options options;
  options.compact_checkpoints = true;
  return options;
}

// The bytes of the shards' names. A state names the files once (the source's params), and the names'
// length depends on where the data lies (CTest's SLUICE_SHARED_DIR is absolute): the 1 KiB the issue
// allows a compact file-pipeline state is counted besides them.
size_t NamesBytes() {
  size_t n = 0;
  for (const std::string& name : testing_util::TaxiEvalShards(3)) n += name.size();
  return n;
}

ParseSpec FareSpec() {
  ParseSpec spec;
  spec.var.push_back(VarLenFeature{"fare", DType::kFloat32});
  spec.var.push_back(VarLenFeature{"trip_seconds", DType::kInt64});
  return spec;
}

int64_t HashOf(const ParsedExample& parsed) {
  std::string bytes;
  ElementCodec<ParsedExample>::Encode(parsed, &bytes);
  return static_cast<int64_t>(XxHash64(bytes) % 1000000007);
}

int64_t HashOf(std::span<const int64_t> batch) {
  const std::string_view bytes(reinterpret_cast<const char*>(batch.data()), batch.size() * sizeof(int64_t));
  return static_cast<int64_t>(XxHash64(bytes) % 1000000007);
}
// A batch of int64 numbers: an int64[n] tensor (Batch) or a vector (BatchVectors).
int64_t HashOf(const Tensor& batch) { return HashOf(batch.span<int64_t>()); }
int64_t HashOf(const std::vector<int64_t>& batch) { return HashOf(std::span<const int64_t>(batch)); }

// The file pipeline: TFRecord -> ParseExample -> Map -> Batch -> Prefetch(64), and a last Map
// that turns each batch into one number for comparing.
Dataset<int64_t> FilePipeline() {
  return TFRecord(testing_util::TaxiEvalShards(3), Compression::kGzip)
      .ParseExample(FareSpec())
      .Map([](ParsedExample parsed) { return HashOf(parsed); }, "hash")
      .Batch(16)
      .Prefetch(64)
      .Map([](const Tensor& batch) { return HashOf(batch); }, "hash_batch");
}

// Saves after `cut` elements with `options`, restores, and checks prefix + rest == full. Returns the
// state's size.
size_t CheckCut(const Dataset<int64_t>& ds, const Elements& full, size_t cut, const Options& options,
                const std::string& what) {
  Iterator<int64_t> it = ds.MakeIterator(options);
  Elements prefix = Pull(it, cut);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  EXPECT_TRUE(state.ok()) << what << "\n" << state.status();
  if (!state.ok()) return 0;
  Elements live = Pull(it, kAll);
  { Iterator<int64_t> dropped = std::move(it); }
  absl::StatusOr<Iterator<int64_t>> restored = ds.RestoreIterator(*state, options);
  EXPECT_TRUE(restored.ok()) << what << "\n" << restored.status();
  if (!restored.ok()) return 0;
  Elements rest = Pull(*restored, kAll);
  Elements joined = prefix;
  joined.insert(joined.end(), rest.begin(), rest.end());
  EXPECT_EQ(joined.size(), full.size()) << what << " cut at " << cut;
  for (size_t i = 0; i < std::min(joined.size(), full.size()); ++i) {
    if (joined[i] != full[i]) {
      ADD_FAILURE() << what << " cut at " << cut << ", element " << i << ": " << Show(joined[i]) << " vs "
                    << Show(full[i]);
      break;
    }
  }
  EXPECT_EQ(live, rest) << what << ": the saving iterator went on differently after the save";
  return state->size();
}

// A file pipeline cut at its start, early, in the middle and at its end: each compact state restores
// exactly and stays under the 1 KiB beside the shards' names.
void CheckFilePipelineCuts(const Dataset<int64_t>& ds, size_t early, const std::string& what) {
  Iterator<int64_t> whole = ds.MakeIterator();
  const Elements full = Pull(whole, kAll);
  ASSERT_GT(full.size(), 40u);
  for (size_t cut : {size_t{0}, size_t{1}, early, full.size() / 2, full.size() - 1, full.size()}) {
    const size_t size = CheckCut(ds, full, cut, Compact(), what);
    EXPECT_GT(size, 0u);
    EXPECT_LT(size, 1024u + NamesBytes()) << what << " cut at " << cut;
  }
}

TEST(CompactCheckpointTest, FilePipelineStateStaysSmallAndRestoresExactly) {
  CheckFilePipelineCuts(FilePipeline(), /*early=*/7, "compact");
}

TEST(CompactCheckpointTest, NestedPrefetchesFiltersAndRepeatsRestoreExactly) {
  const Dataset<int64_t> ds = Range(0, 300)
                                  .Map(MaybeFail, "maybe_fail")
                                  .Prefetch(8)
                                  .Filter([](int64_t x) { return x % 3 != 0; }, "not_three")
                                  .Skip(5)
                                  .Take(150)
                                  .Repeat(2)
                                  .Prefetch(4)
                                  .Batch(7)
                                  .Prefetch(3)
                                  .Map([](const Tensor& batch) { return HashOf(batch); }, "hash_batch");
  Iterator<int64_t> whole = ds.MakeIterator();
  const Elements full = Pull(whole, kAll);
  ASSERT_GT(full.size(), 30u);
  for (size_t cut = 0; cut <= full.size(); cut += 5) {
    const size_t size = CheckCut(ds, full, cut, Compact(), "nested");
    EXPECT_LT(size, 1024u) << "cut at " << cut;
  }
}

TEST(CompactCheckpointTest, FullStateRestoresIntoACompactIteratorAndSavesAgain) {
  const Dataset<int64_t> ds = Range(0, 200).Map(MaybeFail, "maybe_fail").Prefetch(16);
  Iterator<int64_t> whole = ds.MakeIterator();
  const Elements full = Pull(whole, kAll);
  Iterator<int64_t> it = ds.MakeIterator();
  Elements seen = Pull(it, 10);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  absl::StatusOr<Iterator<int64_t>> compact = ds.RestoreIterator(*state, Compact());
  ASSERT_TRUE(compact.ok()) << compact.status();
  // Save again while the restored elements are still coming out, and after.
  for (size_t step : {size_t{3}, size_t{40}}) {
    Elements more = Pull(*compact, step);
    seen.insert(seen.end(), more.begin(), more.end());
    absl::StatusOr<std::string> again = compact->SaveBlocking();
    ASSERT_TRUE(again.ok()) << again.status();
    absl::StatusOr<Iterator<int64_t>> next = ds.RestoreIterator(*again, Compact());
    ASSERT_TRUE(next.ok()) << next.status();
    *compact = std::move(*next);
  }
  Elements rest = Pull(*compact, kAll);
  seen.insert(seen.end(), rest.begin(), rest.end());
  EXPECT_EQ(seen, full);
}

// Shuffle keeps the input's mark of its oldest buffered element; a restore replays the pass's draws and
// re-reads the window. States stay small whatever the buffer holds.
TEST(CompactCheckpointTest, ShuffleRestoresExactlyFromMarksAndReplayedDraws) {
  const Dataset<int64_t> seeded = Range(0, 240)
                                      .Map(MaybeFail, "maybe_fail")
                                      .Prefetch(4)
                                      .Filter([](int64_t x) { return x % 5 != 0; }, "not_five")
                                      .Shuffle(32, 7)
                                      .Repeat(2)
                                      .Prefetch(6);
  // Unseeded: the seed is the iterator's record, drawn once and restored with the state.
  const Dataset<int64_t> unseeded = Range(0, 90).Shuffle(1000).Batch(4).Prefetch(2).Map(
      [](const Tensor& batch) { return HashOf(batch); }, "hash_batch");
  for (const auto& [ds, name] : {std::pair(seeded, "seeded"), std::pair(unseeded, "unseeded")}) {
    Iterator<int64_t> whole = ds.MakeIterator(Compact());
    const Elements full = Pull(whole, kAll);
    ASSERT_GT(full.size(), 20u);
    if (std::string(name) == "unseeded") {
      // Each iterator draws its own seed: compare cuts with runs of one iterator each.
      Iterator<int64_t> it = ds.MakeIterator(Compact());
      Elements prefix = Pull(it, 7);
      absl::StatusOr<std::string> state = it.SaveBlocking();
      ASSERT_TRUE(state.ok()) << state.status();
      EXPECT_LT(state->size(), 1024u);
      Elements live = Pull(it, kAll);
      absl::StatusOr<Iterator<int64_t>> restored = ds.RestoreIterator(*state, Compact());
      ASSERT_TRUE(restored.ok()) << restored.status();
      EXPECT_EQ(Pull(*restored, kAll), live);
      continue;
    }
    for (size_t cut = 0; cut <= full.size(); cut += 3) {
      const size_t size = CheckCut(ds, full, cut, Compact(), name);
      EXPECT_LT(size, 1024u) << "cut at " << cut;
    }
  }
}

TEST(CompactCheckpointTest, ShuffledFilePipelineStateStaysSmall) {
  const Dataset<int64_t> ds =
      TFRecord(testing_util::TaxiEvalShards(3), Compression::kGzip)
          .Shuffle(256, 11)
          .Map([](std::string record) { return static_cast<int64_t>(XxHash64(record) % 1000003); }, "hash")
          .Prefetch(16);
  Iterator<int64_t> whole = ds.MakeIterator();
  const Elements full = Pull(whole, kAll);
  ASSERT_GT(full.size(), 300u);
  for (size_t cut : {size_t{0}, size_t{1}, size_t{100}, full.size() / 2, full.size() - 3, full.size()}) {
    const size_t compact = CheckCut(ds, full, cut, Compact(), "shuffled file");
    EXPECT_GT(compact, 0u);
    EXPECT_LT(compact, 1024u + NamesBytes()) << "cut at " << cut;
    // A full state holds up to 256 records.
    CheckCut(ds, full, cut, Options(), "full");
  }
}

// A hand-made compact Shuffle state (bits flipped behind a resealed checksum) fails cleanly, or restores
// something that runs: the replay checks its counts and that the draws end at the saved generator.
TEST(CompactCheckpointTest, CorruptShuffleStateNeverCrashes) {
  const Dataset<int64_t> ds = Range(0, 100).Shuffle(10, 7).Prefetch(2);
  Iterator<int64_t> it = ds.MakeIterator(Compact());
  Pull(it, 20);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  uint64_t draw = 5;
  const std::vector<std::string> failures = checkpoint_testing::RestoreCorruptedStates(
      ds, *state, 600, Compact(), 300,
      [&draw](std::string* bad) { checkpoint_testing::FlipOneBit(bad, &draw); });
  const auto replay_refused = std::count_if(failures.begin(), failures.end(), [](const std::string& m) {
    return m.find("Shuffle at /0") != std::string::npos;
  });
  EXPECT_GT(failures.size(), 50u);
  EXPECT_GT(replay_refused, 5);
}

// A Prefetch above a Repeat runs passes ahead of the consumer; a restored mark belongs to an older pass,
// and the passes after it must be shuffled as they were, not as the passes the prefetch had begun.
TEST(CompactCheckpointTest, ShuffledFileListRestoresItsPassesUnderRepeatAndPrefetch) {
  const Dataset<int64_t> ds =
      ListFiles(testing_util::TaxiEvalShards(3), /*shuffle=*/true, /*seed=*/5)
          .Map([](std::string name) { return static_cast<int64_t>(XxHash64(name) % 1000); }, "hash_name")
          .Repeat(6)
          .Prefetch(7);
  Iterator<int64_t> whole = ds.MakeIterator(Compact());
  const Elements full = Pull(whole, kAll);
  ASSERT_EQ(full.size(), 18u);
  for (size_t cut = 0; cut <= full.size(); ++cut) CheckCut(ds, full, cut, Compact(), "shuffled file list");
}

// What an Interleave's function makes of x in the tests below: a few elements of x's own, by `variant`
// with a seeded Shuffle under a Repeat, or Prefetches and a Concatenate (whose second input's stream is
// made later), or an Interleave of its own.
Dataset<int64_t> SubDataset(int64_t x, int64_t variant) {
  const int64_t base = (x % 1000 + 1000) % 1000 * 100;
  Dataset<int64_t> sub = Range(base, base + x % 5 + 1);
  switch (variant) {
    case 1:
      return sub.Shuffle(3, static_cast<uint64_t>(x), true).Repeat(2);
    case 2:
      return sub.Prefetch(2).Concatenate(Range(base + 50, base + 50 + x % 3).Shuffle(2, 5)).Prefetch(1);
    case 3:
      return sub.Interleave([](int64_t y) { return Range(y * 10, y * 10 + 2); }, 2, 1, "pair");
    default:
      return sub;
  }
}

// A random pipeline of the ops compact mode takes (sources with positions, Map, Filter, seeded Shuffle,
// Batch, Take, Skip, Repeat, Prefetch, Zip, Concatenate, Enumerate, Shard, deterministic parallel Map and
// Batch); `desc` says what it is.
Dataset<int64_t> RandomCompactPipeline(std::mt19937& rng, int depth, std::string* desc) {
  auto pick = [&rng](int n) { return static_cast<int64_t>(rng() % static_cast<uint32_t>(n)); };
  if (depth <= 0 || pick(4) == 0) {
    switch (pick(4)) {
      case 0: {
        const int64_t start = pick(10), stop = start + pick(80), step = 1 + pick(3);
        *desc += absl::StrCat("Range(", start, ",", stop, ",", step, ")");
        return Range(start, stop, step);
      }
      case 1: {
        std::vector<int64_t> values(static_cast<size_t>(pick(40)));
        for (auto& v : values) v = pick(1000);
        *desc += absl::StrCat("FromVector(", values.size(), ")");
        return FromVector(std::move(values));
      }
      case 2: {
        const uint64_t seed = static_cast<uint64_t>(pick(100));
        *desc += absl::StrCat("ListFiles(3 shards,shuffle,", seed, ").Map(hash)");
        return ListFiles(testing_util::TaxiEvalShards(3), /*shuffle=*/true, seed).Map([](std::string name) {
          return static_cast<int64_t>(XxHash64(name) % 1000);
        });
      }
      default: {
        const int64_t n = 20 + pick(100);
        *desc += absl::StrCat("Range(", n, ")");
        return Range(n);
      }
    }
  }
  std::string inner;
  Dataset<int64_t> in = RandomCompactPipeline(rng, depth - 1, &inner);
  auto wrap = [&](const std::string& name) { *desc += absl::StrCat(inner, ".", name); };
  switch (pick(19)) {
    case 0:
      wrap("Map(fail)");
      return in.Map(MaybeFail, "maybe_fail");
    case 1:
      wrap("Filter(x%3!=0)");
      return in.Filter([](int64_t x) { return x % 3 != 0; }, "not_three");
    case 2:
    case 3: {
      const int64_t buffer = 1 + pick(40);
      const uint64_t seed = static_cast<uint64_t>(pick(1000));
      const bool reshuffle = pick(3) != 0;
      wrap(absl::StrCat("Shuffle(", buffer, ",", seed, ",", reshuffle, ")"));
      return in.Shuffle(buffer, seed, reshuffle);
    }
    case 4: {
      const int64_t size = 1 + pick(5);
      const bool drop = pick(2) == 0;
      wrap(absl::StrCat("BatchVectors(", size, ",", drop, ").Map(hash)"));
      return in.BatchVectors(size, drop)
          .Map([](std::vector<int64_t> batch) { return HashOf(batch); }, "hash_batch");
    }
    case 5: {
      const int64_t n = pick(60);
      wrap(absl::StrCat("Take(", n, ")"));
      return in.Take(n);
    }
    case 6: {
      const int64_t n = pick(20);
      wrap(absl::StrCat("Skip(", n, ")"));
      return in.Skip(n);
    }
    case 7: {
      const int64_t n = 2 + pick(2);
      wrap(absl::StrCat("Repeat(", n, ")"));
      return in.Repeat(n);
    }
    case 8: {
      const int64_t start = pick(5);
      wrap(absl::StrCat("Enumerate(", start, ").Map(i*1000+x)"));
      return in.Enumerate(start).Map([](std::pair<int64_t, int64_t> p) { return p.first * 1000 + p.second; },
                                     "pack");
    }
    case 9: {
      const int64_t shards = 1 + pick(3);
      const int64_t index = pick(shards);
      wrap(absl::StrCat("Shard(", shards, ",", index, ")"));
      return in.Shard(shards, index);
    }
    case 10: {
      std::string other;
      Dataset<int64_t> second = RandomCompactPipeline(rng, depth - 2, &other);
      wrap(absl::StrCat("Zip(", other, ").Map(a*7+b)"));
      return Zip(in, second)
          .Map([](std::pair<int64_t, int64_t> p) { return p.first * 7 + p.second; }, "combine");
    }
    case 11: {
      std::string other;
      Dataset<int64_t> second = RandomCompactPipeline(rng, depth - 2, &other);
      wrap(absl::StrCat("Concatenate(", other, ")"));
      return in.Concatenate(second);
    }
    case 12:
    case 13: {
      const int64_t calls = pick(2) == 0 ? kAutotune : 2 + pick(3);
      wrap(absl::StrCat("Map(fail,", calls, ",deterministic)"));
      return in.Map(MaybeFail, calls, /*deterministic=*/true, "maybe_fail");
    }
    case 14: {
      const int64_t size = 1 + pick(5);
      const bool drop = pick(2) == 0;
      const int64_t calls = pick(2) == 0 ? kAutotune : 2;
      wrap(absl::StrCat("Batch(", size, ",", drop, ",", calls, ").Map(hash)"));
      return in.Batch(size, drop, calls).Map([](const Tensor& batch) { return HashOf(batch); }, "hash_batch");
    }
    case 15:
    case 16: {
      const int64_t cycle = 1 + pick(4), block = 1 + pick(3), variant = pick(4), form = pick(3);
      auto sub = [variant](int64_t x) { return SubDataset(x, variant); };
      if (form == 0) {
        wrap(absl::StrCat("Interleave(sub", variant, ",", cycle, ",", block, ")"));
        return in.Interleave(sub, cycle, block, "sub");
      }
      const int64_t calls = form == 1 ? kAutotune : 1 + pick(static_cast<int>(cycle));
      wrap(absl::StrCat("Interleave(sub", variant, ",", cycle, ",", block, ",", calls, ",deterministic)"));
      return in.Interleave(sub, cycle, block, calls, /*deterministic=*/true, "sub");
    }
    default: {
      const int64_t n = 1 + pick(8);
      wrap(absl::StrCat("Prefetch(", n, ")"));
      return in.Prefetch(n);
    }
  }
}

size_t NodeCount(const OpNode& node) {
  size_t n = 1;
  for (const std::shared_ptr<const OpNode>& input : node.inputs()) n += NodeCount(*input);
  return n;
}

// Room for an Interleave's open slots (up to 4): per slot an index, records and its dataset's mark (a
// nested Interleave's included), or a parallel one's error waiting for its turn.
size_t InterleaveRoom(const OpNode& node) {
  size_t n = node.op_name() == "Interleave" || node.op_name() == "ParallelInterleave" ? 4 * 192 : 0;
  for (const std::shared_ptr<const OpNode>& input : node.inputs()) n += InterleaveRoom(*input);
  return n;
}

// The property test of compact mode: random pipelines cut at random points restore exactly, and their
// states hold no elements (a few dozen bytes per op whatever the buffers hold). SLUICE_CHECKPOINT_PIPELINES
// and SLUICE_CHECKPOINT_SEED make a longer run; sanitizer builds run a quarter of the pipelines.
TEST(CompactCheckpointTest, RandomCompactPipelinesRestoreExactly) {
  const char* count_env = std::getenv("SLUICE_CHECKPOINT_PIPELINES");
  const char* seed_env = std::getenv("SLUICE_CHECKPOINT_SEED");
  const int pipelines = count_env != nullptr && *count_env != '\0' ? std::atoi(count_env) : 500;
  std::mt19937 rng(seed_env != nullptr && *seed_env != '\0' ? static_cast<uint32_t>(std::atoi(seed_env)) + 2
                                                            : 20261205u);
  for (int p = 0; p < pipelines; ++p) {
    std::string desc;
    const Dataset<int64_t> ds = RandomCompactPipeline(rng, 5, &desc);
    Elements full;
    {
      Iterator<int64_t> whole = ds.MakeIterator(Compact());
      full = Pull(whole, kAll);
    }
    ASSERT_LT(full.size(), kAll) << desc;
    for (int c = 0; c < 2; ++c) {
      const size_t cut = static_cast<size_t>(rng() % (full.size() + 1));
      const size_t size = CheckCut(ds, full, cut, Compact(), absl::StrCat("pipeline ", p, ": ", desc));
      // Each op's section (a Shuffle's, the largest, about 50 bytes), its record and path, and its params
      // (file names included), with no room for elements. (56 per op was 2 bytes short for five nested
      // Shuffles, seed 38 pipeline 1817.)
      EXPECT_LT(size, 128 + ds.DebugString().size() + 64 * NodeCount(*ds.node()) + InterleaveRoom(*ds.node()))
          << "pipeline " << p << ": " << desc << " cut at " << cut;
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// The file pipeline reading its shards through an Interleave: each slot's state is its reader's
// position, the input's the file list's.
TEST(CompactCheckpointTest, InterleavedFilePipelineStateStaysSmallAndRestoresExactly) {
  const Dataset<int64_t> ds =
      ListFiles(testing_util::TaxiEvalShards(3), /*shuffle=*/true, /*seed=*/3)
          .Interleave([](std::string file) { return TFRecord({file}, Compression::kGzip); }, 2, 5, "read")
          .ParseExample(FareSpec())
          .Map([](ParsedExample parsed) { return HashOf(parsed); }, "hash")
          .Batch(16)
          .Prefetch(64)
          .Map([](const Tensor& batch) { return HashOf(batch); }, "hash_batch");
  CheckFilePipelineCuts(ds, /*early=*/9, "interleaved files");
}

// The same with the parallel Interleave reading the shards (two workers run ahead of the consumer): the
// slots' marks are those of the records the consumer took, not of what the workers buffered.
TEST(CompactCheckpointTest, ParallelInterleavedFilePipelineStateStaysSmallAndRestoresExactly) {
  const Dataset<int64_t> ds =
      ListFiles(testing_util::TaxiEvalShards(3), /*shuffle=*/true, /*seed=*/3)
          .Interleave([](std::string file) { return TFRecord({file}, Compression::kGzip); }, 2, 5,
                      /*num_parallel_calls=*/2, /*deterministic=*/true, "read")
          .Map([](std::string record) { return static_cast<int64_t>(XxHash64(record) % 1000000007); }, "hash")
          .Batch(16)
          .Prefetch(64)
          .Map([](const Tensor& batch) { return HashOf(batch); }, "hash_batch");
  CheckFilePipelineCuts(ds, /*early=*/9, "parallel interleaved files");
}

// A parallel Interleave whose slots hold errors waiting for their turn: input error elements (MaybeFail)
// and f failing. Both are saved as the input index that made them and made again by the restore's
// re-read.
Dataset<int64_t> ParallelInterleaveWithErrors(std::optional<bool> deterministic) {
  return Range(0, 40)
      .Map(MaybeFail, "maybe_fail")
      .Interleave(
          [](int64_t x) -> absl::StatusOr<Dataset<int64_t>> {
            if (x % 5 == 2) return absl::InternalError(absl::StrCat("no dataset for ", x));
            return SubDataset(x, x % 4);
          },
          /*cycle_length=*/3, /*block_length=*/2, /*num_parallel_calls=*/3, deterministic, "sub_or_fail")
      .Prefetch(3);
}

TEST(CompactCheckpointTest, ParallelInterleaveWithErrorsInItsSlotsRestoresExactly) {
  const Dataset<int64_t> ds = ParallelInterleaveWithErrors(/*deterministic=*/true);
  Iterator<int64_t> whole = ds.MakeIterator(Compact());
  const Elements full = Pull(whole, kAll);
  size_t errors = 0;
  for (const auto& e : full) errors += e.ok() ? 0 : 1;
  ASSERT_GE(errors, 6u);
  for (size_t cut = 0; cut <= full.size(); ++cut) {
    const size_t size = CheckCut(ds, full, cut, Compact(), "parallel interleave with errors");
    EXPECT_LT(size, 1024u) << "cut at " << cut;
    if (::testing::Test::HasFailure()) return;
  }
}

// Sloppy order: a restore goes on with exactly the elements not yet returned, in an order of its own.
TEST(CompactCheckpointTest, SloppyParallelInterleaveRestoresTheSameMultiset) {
  const Dataset<int64_t> ds = ParallelInterleaveWithErrors(/*deterministic=*/false);
  std::vector<std::string> everything;
  {
    Iterator<int64_t> whole = ds.MakeIterator(Compact());
    for (const auto& e : Pull(whole, kAll)) everything.push_back(Show(e));
  }
  std::sort(everything.begin(), everything.end());
  for (size_t cut : {size_t{0}, size_t{3}, size_t{17}, everything.size() / 2, everything.size() - 1}) {
    Iterator<int64_t> it = ds.MakeIterator(Compact());
    std::vector<std::string> seen;
    for (const auto& e : Pull(it, cut)) seen.push_back(Show(e));
    absl::StatusOr<std::string> state = it.SaveBlocking();
    ASSERT_TRUE(state.ok()) << state.status();
    absl::StatusOr<Iterator<int64_t>> restored = ds.RestoreIterator(*state, Compact());
    ASSERT_TRUE(restored.ok()) << restored.status();
    for (const auto& e : Pull(*restored, kAll)) seen.push_back(Show(e));
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, everything) << "cut at " << cut;
  }
}

// Unseeded random ops inside the slots: their seeds are drawn per iterator, so a restore must give the
// slots' new datasets the seeds the saving iterator drew, the one under a Concatenate's second input
// (made after the slot opened) included. Compared with how the saving iterator went on.
TEST(CompactCheckpointTest, InterleaveSlotsKeepTheSeedsOfTheirUnseededShuffles) {
  const Dataset<int64_t> ds = Range(0, 12)
                                  .Interleave(
                                      [](int64_t x) {
                                        return Range(x * 100, x * 100 + 6)
                                            .Shuffle(4)
                                            .Concatenate(Range(x * 100 + 50, x * 100 + 56).Shuffle(3));
                                      },
                                      3, 2, "shuffled")
                                  .Prefetch(5);
  for (size_t cut : {size_t{0}, size_t{4}, size_t{13}, size_t{40}, size_t{90}}) {
    Iterator<int64_t> it = ds.MakeIterator(Compact());
    Pull(it, cut);
    absl::StatusOr<std::string> state = it.SaveBlocking();
    ASSERT_TRUE(state.ok()) << state.status();
    const Elements live = Pull(it, kAll);
    EXPECT_EQ(live.size(), 144 - cut);
    absl::StatusOr<Iterator<int64_t>> restored = ds.RestoreIterator(*state, Compact());
    ASSERT_TRUE(restored.ok()) << restored.status();
    EXPECT_EQ(Pull(*restored, kAll), live) << "cut at " << cut;
  }
}

// A full state restored into a compact iterator: the slots come back from their nested states, which hold
// no input mark, so compact saves fail naming the slot until those slots end, then work again. `ds` yields
// 30 elements.
void CheckFullInterleaveStateIntoACompactIterator(const Dataset<int64_t>& ds) {
  Iterator<int64_t> whole = ds.MakeIterator();
  const Elements full = Pull(whole, kAll);
  ASSERT_EQ(full.size(), 30u);
  Iterator<int64_t> it = ds.MakeIterator();
  const Elements prefix = Pull(it, 4);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  absl::StatusOr<Iterator<int64_t>> restored = ds.RestoreIterator(*state, Compact());
  ASSERT_TRUE(restored.ok()) << restored.status();
  absl::StatusOr<std::string> refused = restored->SaveBlocking();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("cycle slot"), std::string::npos) << refused.status();
  Elements joined = prefix;
  const Elements next = Pull(*restored, 10);
  joined.insert(joined.end(), next.begin(), next.end());
  absl::StatusOr<std::string> compact = restored->SaveBlocking();
  ASSERT_TRUE(compact.ok()) << compact.status();
  absl::StatusOr<Iterator<int64_t>> again = ds.RestoreIterator(*compact, Compact());
  ASSERT_TRUE(again.ok()) << again.status();
  const Elements rest = Pull(*again, kAll);
  joined.insert(joined.end(), rest.begin(), rest.end());
  EXPECT_EQ(joined, full);
}

TEST(CompactCheckpointTest, FullInterleaveStateRestoresIntoACompactIterator) {
  CheckFullInterleaveStateIntoACompactIterator(
      Range(0, 10).Interleave([](int64_t x) { return Range(x * 10, x * 10 + 3); }, 2, 1, "triple"));
}

TEST(CompactCheckpointTest, FullParallelInterleaveStateRestoresIntoACompactIterator) {
  CheckFullInterleaveStateIntoACompactIterator(
      Range(0, 10).Interleave([](int64_t x) { return Range(x * 10, x * 10 + 3); }, 2, 1,
                              /*num_parallel_calls=*/2, /*deterministic=*/true, "triple"));
}

// A dataset f makes that cannot keep a compact state is an error element in its slot's turn, naming
// the node; the other slots go on.
TEST(CompactCheckpointTest, AnInterleaveSlotThatCannotIsAnErrorNamingTheNode) {
  const Dataset<int64_t> ds = Range(0, 3).Interleave(
      [](int64_t x) { return x == 1 ? Range(0, 2).Cache() : Range(x * 10, x * 10 + 2); }, 3, 1, "mixed");
  Iterator<int64_t> it = ds.MakeIterator(Compact());
  const Elements all = Pull(it, kAll);
  ASSERT_EQ(all.size(), 5u);
  int errors = 0;
  for (const auto& e : all) {
    if (e.ok()) continue;
    ++errors;
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(e.status().message().find("Cache at /"), std::string::npos) << e.status();
    EXPECT_NE(e.status().message().find("input element 1"), std::string::npos) << e.status();
  }
  EXPECT_EQ(errors, 1);
}

// Hand-made compact Interleave states (bits flipped behind a resealed checksum) fail cleanly or restore
// something that runs.
TEST(CompactCheckpointTest, CorruptInterleaveStateNeverCrashes) {
  const Dataset<int64_t> ds =
      Range(0, 20).Interleave([](int64_t x) { return SubDataset(x, x % 4); }, 3, 2, "sub").Prefetch(2);
  Iterator<int64_t> it = ds.MakeIterator(Compact());
  Pull(it, 17);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  uint64_t draw = 11;
  const std::vector<std::string> failures = checkpoint_testing::RestoreCorruptedStates(
      ds, *state, 600, Compact(), 400,
      [&draw](std::string* bad) { checkpoint_testing::FlipOneBit(bad, &draw); });
  EXPECT_GT(failures.size(), 50u);
}

TEST(CompactCheckpointTest, CorruptParallelInterleaveStateNeverCrashes) {
  const Dataset<int64_t> ds = ParallelInterleaveWithErrors(/*deterministic=*/true);
  Iterator<int64_t> it = ds.MakeIterator(Compact());
  Pull(it, 23);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  uint64_t draw = 13;
  const std::vector<std::string> failures = checkpoint_testing::RestoreCorruptedStates(
      ds, *state, 600, Compact(), 400,
      [&draw](std::string* bad) { checkpoint_testing::FlipOneBit(bad, &draw); });
  EXPECT_GT(failures.size(), 50u);
}

TEST(CompactCheckpointTest, PipelineThatCannotIsRefusedNamingTheOp) {
  const Dataset<int64_t> ds = Range(0, 100).Cache().Map(MaybeFail, "maybe_fail").Prefetch(4);
  Iterator<int64_t> it = ds.MakeIterator(Compact());
  absl::StatusOr<std::optional<int64_t>> first = it.NextBlocking();
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(first.status().message().find("Cache at /0/0"), std::string::npos) << first.status();
  EXPECT_NE(first.status().message().find("compact"), std::string::npos) << first.status();

  Iterator<int64_t> plain = ds.MakeIterator();
  Pull(plain, 5);
  absl::StatusOr<std::string> state = plain.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  absl::StatusOr<Iterator<int64_t>> restored = ds.RestoreIterator(*state, Compact());
  ASSERT_FALSE(restored.ok());
  EXPECT_EQ(restored.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(restored.status().message().find("Cache at /0/0"), std::string::npos) << restored.status();
}

// Completion order cannot be re-read from a position: a nondeterministic ParallelMap or parallel Batch is
// refused, whether the op or Options::deterministic says so.
TEST(CompactCheckpointTest, NondeterministicParallelOpsAreRefused) {
  const Dataset<int64_t> by_op = Range(0, 100).Map(MaybeFail, 2, /*deterministic=*/false, "maybe_fail");
  Iterator<int64_t> it = by_op.MakeIterator(Compact());
  absl::StatusOr<std::optional<int64_t>> first = it.NextBlocking();
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(first.status().message().find("ParallelMap at /"), std::string::npos) << first.status();

  Options nondeterministic = Compact();
  nondeterministic.deterministic = false;
  const Dataset<Tensor> by_options = Range(0, 100).Batch(4, false, 2);
  absl::StatusOr<Iterator<Tensor>> restored = by_options.RestoreIterator("", nondeterministic);
  ASSERT_FALSE(restored.ok());
  EXPECT_NE(restored.status().message().find("Batch at /"), std::string::npos) << restored.status();
  // The same pipelines are compact when they keep order.
  Iterator<Tensor> ordered = by_options.MakeIterator(Compact());
  EXPECT_TRUE(ordered.NextBlocking().ok());
}

// The file pipeline with its parallel stages: TFRecord -> ParseExample -> parallel Map (tuned) ->
// parallel Batch -> Prefetch(64). Saves do not pause the workers; states stay under 1 KiB.
TEST(CompactCheckpointTest, ParallelFilePipelineStateStaysSmallAndRestoresExactly) {
  const Dataset<int64_t> ds =
      TFRecord(testing_util::TaxiEvalShards(3), Compression::kGzip)
          .ParseExample(FareSpec())
          .Map([](ParsedExample parsed) { return HashOf(parsed); }, kAutotune, std::nullopt, "hash")
          .Batch(16, /*drop_remainder=*/false, /*num_parallel_calls=*/2)
          .Prefetch(64)
          .Map([](const Tensor& batch) { return HashOf(batch); }, "hash_batch");
  Elements full;
  {
    Iterator<int64_t> whole = ds.MakeIterator(Compact());
    full = Pull(whole, kAll);
  }
  ASSERT_GT(full.size(), 10u);
  size_t largest = 0;
  for (size_t cut = 0; cut <= full.size(); cut += 1 + full.size() / 23) {
    largest = std::max(largest, CheckCut(ds, full, cut, Compact(), "parallel file pipeline"));
  }
  EXPECT_LT(largest, 1024u + NamesBytes());
}

// A compact save of a parallel Map while its workers run does not wait for them, and what it saves is
// the place after the last result returned, whatever the workers had computed ahead.
TEST(CompactCheckpointTest, ParallelMapSavesTheLastReturnedPlaceWhileWorkersRun) {
  // 16 calls keep up to 64 results ahead: a full state holds them (hundreds of bytes more).
  const Dataset<int64_t> ds = Range(0, 400).Map(MaybeFail, 16, /*deterministic=*/true, "maybe_fail");
  Elements full;
  {
    Iterator<int64_t> whole = ds.MakeIterator(Compact());
    full = Pull(whole, kAll);
  }
  for (size_t cut : {0u, 1u, 2u, 17u, 100u, 399u, 400u}) {
    const size_t size = CheckCut(ds, full, cut, Compact(), "parallel map");
    EXPECT_LT(size, 300u) << "cut at " << cut;
  }
}

// A full state (results buffered in the ParallelMap) restores into a compact iterator: the carried
// results come out first, and compact saves made while they do hold them with the input's mark.
TEST(CompactCheckpointTest, FullParallelMapStateRestoresIntoACompactIteratorAndSavesAgain) {
  const Dataset<int64_t> ds =
      Range(0, 200).Map(MaybeFail, 3, /*deterministic=*/true, "maybe_fail").Prefetch(2);
  Elements full;
  {
    Iterator<int64_t> whole = ds.MakeIterator();
    full = Pull(whole, kAll);
  }
  for (size_t cut : {0u, 5u, 50u, 199u}) {
    Iterator<int64_t> it = ds.MakeIterator();
    Elements prefix = Pull(it, cut);
    absl::StatusOr<std::string> state = it.SaveBlocking();
    ASSERT_TRUE(state.ok()) << state.status();
    for (size_t second_cut : {0u, 1u, 3u, 12u}) {
      absl::StatusOr<Iterator<int64_t>> compact = ds.RestoreIterator(*state, Compact());
      ASSERT_TRUE(compact.ok()) << compact.status();
      Elements middle = Pull(*compact, second_cut);
      absl::StatusOr<std::string> again = compact->SaveBlocking();
      ASSERT_TRUE(again.ok()) << again.status();
      absl::StatusOr<Iterator<int64_t>> resumed = ds.RestoreIterator(*again, Compact());
      ASSERT_TRUE(resumed.ok()) << resumed.status();
      Elements joined = prefix;
      joined.insert(joined.end(), middle.begin(), middle.end());
      Elements rest = Pull(*resumed, kAll);
      joined.insert(joined.end(), rest.begin(), rest.end());
      EXPECT_EQ(joined, full) << "cut at " << cut << ", then " << second_cut;
    }
  }
}

}  // namespace
}  // namespace sluice::compact_checkpoint_test
