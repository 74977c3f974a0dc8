// Checkpoints of SampleFromDatasets, ChooseFromDatasets, PaddedBatch, BucketBySequenceLength, Rebatch,
// Cache and RegisteredDataset (docs/checkpoint.md): saved where they hold state of their own, restored
// exactly.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/xxhash64.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "sluice/ops/registration.h"
#include "tests/ops/checkpoint_helpers.h"
#include "tests/test_util.h"

namespace checkpoint_more_ops_registrations {

// A registered dataset with state of its own inside: a Shuffle (unseeded without a "seed" arg: its
// seed is then a record of an inner node), a Prefetch and errors. `inner_buffer` changes what the factory
// builds, as another build of the user's code would.
inline std::atomic<int64_t> inner_buffer{5};
inline constexpr sluice::Function<sluice::Dataset<int64_t>()> kShuffledRange{"checkpoint_more_ops.shuffled"};
SLUICE_REGISTER_DATASET(kShuffledRange, [](const sluice::FunctionArgs& args) {
  const int64_t n = args.GetOr<int64_t>("n", 10).value_or(10);
  const int64_t seed = args.GetOr<int64_t>("seed", -1).value_or(-1);
  return sluice::Range(n)
      .Map(sluice::checkpoint_testing::MaybeFail, "maybe_fail")
      .Shuffle(inner_buffer.load(), seed < 0 ? std::nullopt : std::optional<uint64_t>(seed))
      .Prefetch(3);
});

}  // namespace checkpoint_more_ops_registrations

namespace sluice {
namespace checkpoint_more_ops_test {
namespace {

using checkpoint_testing::Elements;
using checkpoint_testing::MaybeFail;
using checkpoint_testing::Pull;
using checkpoint_testing::SumOfBatch;

constexpr size_t kAll = 100000;

Elements Joined(Elements a, const Elements& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Elements All(const Dataset<int64_t>& ds) {
  Iterator<int64_t> it = ds.MakeIterator();
  return Pull(it, kAll);
}

// Every cut: prefix + restored suffix == an uninterrupted run, and the saving iterator goes on with
// exactly the restored suffix. Returns the states, for the tests that look inside them.
std::vector<std::string> CheckEveryCut(const Dataset<int64_t>& ds, const std::string& what) {
  const Elements full = All(ds);
  std::vector<std::string> states;
  for (size_t cut = 0; cut <= full.size(); ++cut) {
    Iterator<int64_t> it = ds.MakeIterator();
    Elements prefix = Pull(it, cut);
    absl::StatusOr<std::string> state = it.SaveBlocking();
    EXPECT_TRUE(state.ok()) << what << " cut " << cut << ": " << state.status();
    if (!state.ok()) return states;
    Elements live = Pull(it, kAll);
    { Iterator<int64_t> dropped = std::move(it); }
    absl::StatusOr<Iterator<int64_t>> restored = ds.RestoreIterator(*state);
    EXPECT_TRUE(restored.ok()) << what << " cut " << cut << ": " << restored.status();
    if (!restored.ok()) return states;
    Elements suffix = Pull(*restored, kAll);
    EXPECT_EQ(Joined(prefix, suffix), full) << what << " cut " << cut;
    EXPECT_EQ(live, suffix) << what << " live, cut " << cut;
    states.push_back(*std::move(state));
  }
  return states;
}

// The op state a node saved (the first node named `op`), for looking inside it.
std::optional<std::string> SectionOf(const std::string& state, const Dataset<int64_t>& ds,
                                     std::string_view op) {
  absl::StatusOr<CheckpointReader> reader = CheckpointReader::Parse(state, ds.node());
  if (!reader.ok()) return std::nullopt;
  for (const CheckpointReader::Node& node : reader->nodes()) {
    if (node.op == op) return node.state;
  }
  return std::nullopt;
}

int64_t TensorHash(const Tensor& t) {
  std::string bytes;
  ElementCodec<Tensor>::Encode(t, &bytes);
  return static_cast<int64_t>(XxHash64(bytes) % 1000000007);
}

// x as 1 + x % 5 copies of itself; x % 13 == 12 is an error element.
absl::StatusOr<Tensor> SequenceOrError(int64_t x) {
  if (x % 13 == 12) return absl::InvalidArgumentError(absl::StrCat("twelve mod thirteen: ", x));
  return Tensor::FromVector<int64_t>(std::vector<int64_t>(static_cast<size_t>(1 + x % 5), x));
}

int64_t Length(const Tensor& t) { return t.shape().dim(0); }

std::string FreshCachePath(const std::string& name) {
  std::string path = testing_util::TempPath(absl::StrCat("checkpoint_more_ops_", name));
  for (const char* suffix : {"", ".index", ".lockfile", ".index.tmp"}) std::remove((path + suffix).c_str());
  return path;
}

TEST(CheckpointMoreOpsTest, PaddedBatchRestoresAtEveryCut) {
  CheckEveryCut(Range(40).Map(SequenceOrError).PaddedBatch(4).Map(TensorHash), "PaddedBatch(4)");
  CheckEveryCut(Range(30)
                    .Map(SequenceOrError)
                    .PaddedBatch(3, {{6}}, {Tensor::Scalar<int64_t>(-1)}, true)
                    .Map(TensorHash),
                "PaddedBatch(3, [6], drop)");
}

// Calls for one value wait in the function until Release(); every wait is bounded.
class ValueGate {
 public:
  explicit ValueGate(int64_t blocked) : blocked_(blocked) {}
  void Pass(int64_t x) {
    if (x != blocked_) return;
    std::unique_lock<std::mutex> lock(mu_);
    released_changed_.wait_for(lock, std::chrono::seconds(60), [this] { return released_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    released_changed_.notify_all();
  }

 private:
  const int64_t blocked_;
  std::mutex mu_;
  std::condition_variable released_changed_;
  bool released_ = false;
};

// A PaddedBatch holds a partial batch between two Polls only when its input was pending: here under a
// Prefetch whose producer waits on a call that blocks (element 6), with elements 4 and 5 taken. The save
// pauses the producer there, so the state holds the partial batch, and both the live and the restored
// iterator give exactly the rest. Whether the save stops the producer before the release lets it go on
// depends on timing, so the partial batch is required of one attempt out of several, with longer waits.
TEST(CheckpointMoreOpsTest, PaddedBatchSavedMidPartialBatch) {
  auto make = [](std::shared_ptr<ValueGate> gate, std::shared_ptr<std::atomic<int64_t>> seen) {
    return Range(40)
        .Map(
            [gate](int64_t x) {
              gate->Pass(x);
              return x;
            },
            2, /*deterministic=*/true)
        .Map([seen](int64_t x) {
          seen->fetch_add(1);
          return SequenceOrError(x);
        })
        .PaddedBatch(4)
        .Map(TensorHash)
        .Prefetch(1);
  };
  const Elements expected = All(Range(40).Map(SequenceOrError).PaddedBatch(4).Map(TensorHash));
  bool partial_seen = false;
  for (int attempt = 0; attempt < 6 && !partial_seen; ++attempt) {
    auto gate = std::make_shared<ValueGate>(6);
    auto seen = std::make_shared<std::atomic<int64_t>>(0);
    Dataset<int64_t> ds = make(gate, seen);
    Options options;
    options.thread_pool_size = 4;
    Iterator<int64_t> it = ds.MakeIterator(options);
    struct ReleaseAtExit {
      ValueGate* gate;
      ~ReleaseAtExit() { gate->Release(); }
    } release_at_exit{gate.get()};
    Elements prefix = Pull(it, 1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (seen->load() < 6 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(seen->load(), 6);  // elements 0 to 5 went into batches; the call for 6 blocks
    absl::StatusOr<std::string> state;
    std::thread saver([&] { state = it.SaveBlocking(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20 << attempt));
    gate->Release();
    saver.join();
    ASSERT_TRUE(state.ok()) << state.status();
    Elements live = Pull(it, kAll);
    { Iterator<int64_t> dropped = std::move(it); }
    absl::StatusOr<Iterator<int64_t>> restored = ds.RestoreIterator(*state, options);
    ASSERT_TRUE(restored.ok()) << restored.status();
    EXPECT_EQ(Joined(prefix, Pull(*restored, kAll)), expected);
    EXPECT_EQ(Joined(prefix, live), expected);

    std::optional<std::string> section = SectionOf(*state, ds, "PaddedBatch");
    ASSERT_TRUE(section.has_value());
    std::string_view in = *section;
    int64_t index = 0;
    std::vector<Tensor> partial;
    ASSERT_TRUE(ElementCodec<int64_t>::Decode(&in, &index).ok());
    ASSERT_TRUE(ElementCodec<std::vector<Tensor>>::Decode(&in, &partial).ok());
    partial_seen = partial.size() == 2;
  }
  EXPECT_TRUE(partial_seen);
}

TEST(CheckpointMoreOpsTest, BucketBySequenceLengthSavedMidBucket) {
  auto bucketed = [](bool pad_to_boundary, bool drop) {
    return Range(60)
        .Map(SequenceOrError)
        .BucketBySequenceLength(Length, {2, 4}, {3, 2, 4}, {}, {}, pad_to_boundary, false, drop)
        .Map(TensorHash);
  };
  for (bool pad : {false, true}) {
    for (bool drop : {false, true}) {
      Dataset<int64_t> ds = bucketed(pad, drop);
      std::vector<std::string> states = CheckEveryCut(ds, absl::StrCat("Bucket pad ", pad, " drop ", drop));
      // Some cut has elements waiting in two buckets at once.
      int two_buckets = 0;
      for (const std::string& state : states) {
        std::optional<std::string> section = SectionOf(state, ds, "BucketBySequenceLength");
        ASSERT_TRUE(section.has_value());
        std::string_view in = *section;
        int64_t element_index = 0, batch_index = 0;
        bool ended = false;
        uint64_t flush = 0;
        std::vector<std::vector<Tensor>> buckets;
        ASSERT_TRUE(ElementCodec<int64_t>::Decode(&in, &element_index).ok());
        ASSERT_TRUE(ElementCodec<int64_t>::Decode(&in, &batch_index).ok());
        ASSERT_TRUE(ElementCodec<bool>::Decode(&in, &ended).ok());
        ASSERT_TRUE(ElementCodec<uint64_t>::Decode(&in, &flush).ok());
        ASSERT_TRUE(ElementCodec<std::vector<std::vector<Tensor>>>::Decode(&in, &buckets).ok());
        int nonempty = 0;
        for (const auto& bucket : buckets) nonempty += bucket.empty() ? 0 : 1;
        if (nonempty >= 2) ++two_buckets;
      }
      EXPECT_GT(two_buckets, 0);
    }
  }
}

TEST(CheckpointMoreOpsTest, RebatchRestoresAtEveryCut) {
  CheckEveryCut(Range(37).Map(MaybeFail).Batch(5).Rebatch({3, 0, 2}).Map(SumOfBatch), "Rebatch({3,0,2})");
  CheckEveryCut(Range(37).Batch(4).Rebatch(3, /*drop_remainder=*/true).Map(SumOfBatch), "Rebatch(3, drop)");
  // Under a Prefetch the producer reaches the end, where the dropped remainder was once still counted.
  CheckEveryCut(Range(37).Batch(4).Rebatch(3, /*drop_remainder=*/true).Map(SumOfBatch).Prefetch(3),
                "Rebatch(3, drop).Prefetch(3)");
  CheckEveryCut(
      Range(29).Map([](int64_t x) { return Tensor::Scalar<int64_t>(x); }).Batch(6).Rebatch(4).Map(TensorHash),
      "tensors Rebatch(4)");
}

// The state of a SampleFromDatasets: ended, exhausted inputs, a pending choice, the generator.
std::vector<int64_t> ExhaustedInputs(const std::string& state, const Dataset<int64_t>& ds) {
  std::optional<std::string> section = SectionOf(state, ds, "SampleFromDatasets");
  if (!section.has_value()) return {};
  std::string_view in = *section;
  bool ended = false;
  std::vector<int64_t> exhausted;
  if (!ElementCodec<bool>::Decode(&in, &ended).ok()) return {};
  if (!ElementCodec<std::vector<int64_t>>::Decode(&in, &exhausted).ok()) return {};
  return exhausted;
}

TEST(CheckpointMoreOpsTest, SampleSavedAfterOneInputIsExhausted) {
  for (bool stop : {false, true}) {
    Dataset<int64_t> ds = SampleFromDatasets<int64_t>(
        {Range(4), Range(100, 140).Map(MaybeFail), Range(200, 210)}, {1.0, 2.0, 0.5}, /*seed=*/7, stop);
    std::vector<std::string> states = CheckEveryCut(ds, absl::StrCat("Sample stop ", stop));
    if (!stop) {
      int after_exhausted = 0;
      for (const std::string& state : states) after_exhausted += ExhaustedInputs(state, ds).empty() ? 0 : 1;
      EXPECT_GT(after_exhausted, 0);
    }
  }
  CheckEveryCut(
      SampleFromDatasets<int64_t>({Range(10), Range(100, 110)}, {}, 3, false, /*rerandomize=*/true).Repeat(3),
      "Sample rerandomized, Repeat(3)");
}

// An unseeded Sample draws its seed per iterator; a restored one keeps the saving iterator's seed, for the
// rest of this pass and for later ones (Repeat), rerandomized or not.
TEST(CheckpointMoreOpsTest, UnseededSampleKeepsItsSeedAcrossARestore) {
  for (bool rerandomize : {false, true}) {
    Dataset<int64_t> ds =
        SampleFromDatasets<int64_t>({Range(30), Range(100, 130)}, {}, std::nullopt, false, rerandomize)
            .Repeat(3);
    for (size_t cut : {size_t{17}, size_t{75}}) {
      Iterator<int64_t> it = ds.MakeIterator();
      Elements prefix = Pull(it, cut);
      absl::StatusOr<std::string> state = it.SaveBlocking();
      ASSERT_TRUE(state.ok()) << state.status();
      Elements live = Pull(it, kAll);
      ASSERT_EQ(prefix.size() + live.size(), 180u);
      auto restored = ds.RestoreIterator(*state);
      ASSERT_TRUE(restored.ok()) << restored.status();
      EXPECT_EQ(Pull(*restored, kAll), live) << "rerandomize " << rerandomize << " cut " << cut;
    }
  }
}

TEST(CheckpointMoreOpsTest, ChooseRestoresAtEveryCut) {
  // Index 2 is out of range (an error element); input 0 runs out after 3 choices.
  auto choices = FromVector<int64_t>({0, 1, 1, 2, 0, 1, 0, 0, 1, 0, 1, 1, 1, 0, 1});
  for (bool stop : {false, true}) {
    CheckEveryCut(ChooseFromDatasets<int64_t>({Range(3), Range(10, 30).Map(MaybeFail)}, choices, stop),
                  absl::StrCat("Choose stop ", stop));
  }
  // The choices from a Shuffle and a Prefetch: their states are restored with the Choose's.
  CheckEveryCut(
      ChooseFromDatasets<int64_t>({Range(20), Range(50, 70)},
                                  Range(40).Map([](int64_t x) { return x % 2; }).Shuffle(6, 1).Prefetch(2)),
      "Choose(shuffled choices)");
}

// A memory Cache over an unseeded reshuffling Shuffle: a rerun of the input would give another order, so
// only the saved cache makes later passes exact. Cut in the first pass, in replays, and where the cache
// has no stream at all (the Concatenate is past it). Not at 0: an unseeded op draws its seed when its
// first stream is made, which the Repeat does at the first element.
TEST(CheckpointMoreOpsTest, MemoryCacheCutInFirstPassAndInReplay) {
  Dataset<int64_t> repeated = Range(20).Map(MaybeFail).Shuffle(20, std::nullopt, true).Cache().Repeat(3);
  Dataset<int64_t> past_it =
      Range(8).Shuffle(8, std::nullopt, true).Cache().Concatenate(Range(100, 104)).Repeat(2);
  struct Case {
    Dataset<int64_t> ds;
    std::vector<size_t> cuts;
  };
  for (const Case& c : {Case{repeated, {1, 7, 19, 25, 41, 56}}, Case{past_it, {3, 10, 14, 18}}}) {
    for (size_t cut : c.cuts) {
      Iterator<int64_t> it = c.ds.MakeIterator();
      Elements prefix = Pull(it, cut);
      absl::StatusOr<std::string> state = it.SaveBlocking();
      ASSERT_TRUE(state.ok()) << state.status();
      Elements live = Pull(it, kAll);
      auto restored = c.ds.RestoreIterator(*state);
      ASSERT_TRUE(restored.ok()) << restored.status();
      Elements suffix = Pull(*restored, kAll);
      EXPECT_EQ(suffix, live) << "cut " << cut;
    }
  }
  // Replays hold the first pass's good elements, in its order.
  Iterator<int64_t> it = repeated.MakeIterator();
  Elements all = Pull(it, kAll);
  Elements first(all.begin(), all.begin() + 20), good;
  for (const auto& e : first) {
    if (e.ok()) good.push_back(e);
  }
  EXPECT_EQ(Elements(all.begin() + 20, all.begin() + 20 + static_cast<int64_t>(good.size())), good);
}

TEST(CheckpointMoreOpsTest, MemoryCacheRestoresAtEveryCut) {
  CheckEveryCut(Range(12).Map(MaybeFail).Cache().Repeat(3), "Cache().Repeat(3)");
  CheckEveryCut(
      Zip(Range(10).Cache(), Range(50, 57).Cache().Repeat(2)).Map([](std::pair<int64_t, int64_t> p) {
        return p.first * 1000 + p.second;
      }),
      "Zip of caches");
}

// A file Cache cut in its writing pass: the partial file goes with the saving iterator, and the restored
// one writes the saved part again and completes the cache. Then cut in a reading pass.
TEST(CheckpointMoreOpsTest, FileCacheCutInFirstPassAndInReadPass) {
  const std::string path = FreshCachePath("file");
  Dataset<int64_t> ds = Range(30).Map(MaybeFail).Cache(path);
  const Elements expected = All(Range(30).Map(MaybeFail));
  Elements good;
  for (const auto& e : expected) {
    if (e.ok()) good.push_back(e);
  }

  absl::StatusOr<std::string> first_pass;
  Elements prefix;
  {
    Iterator<int64_t> it = ds.MakeIterator();
    prefix = Pull(it, 12);
    first_pass = it.SaveBlocking();
    ASSERT_TRUE(first_pass.ok()) << first_pass.status();
  }  // abandoned: the partial file and the lock are gone
  EXPECT_FALSE(ops::cache_file::IsComplete(path));
  {
    auto restored = ds.RestoreIterator(*first_pass);
    ASSERT_TRUE(restored.ok()) << restored.status();
    EXPECT_EQ(Joined(prefix, Pull(*restored, kAll)), expected);
  }
  ASSERT_TRUE(ops::cache_file::IsComplete(path));
  EXPECT_EQ(All(ds), good);  // read from the file: the saved part and the rest

  // The same state again, now that the cache is complete: the pass goes on without writing.
  {
    auto restored = ds.RestoreIterator(*first_pass);
    ASSERT_TRUE(restored.ok()) << restored.status();
    EXPECT_EQ(Joined(prefix, Pull(*restored, kAll)), expected);
  }

  // A reading pass.
  Iterator<int64_t> reading = ds.MakeIterator();
  Elements read_prefix = Pull(reading, 9);
  absl::StatusOr<std::string> read_state = reading.SaveBlocking();
  ASSERT_TRUE(read_state.ok()) << read_state.status();
  Elements live = Pull(reading, kAll);
  auto restored = ds.RestoreIterator(*read_state);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(Pull(*restored, kAll), live);
  EXPECT_EQ(Joined(read_prefix, live), good);

  // The cache file gone: the reading pass cannot go on, and the restore says why.
  for (const char* suffix : {"", ".index"}) std::remove((path + suffix).c_str());
  auto gone = ds.RestoreIterator(*read_state);
  ASSERT_EQ(gone.status().code(), absl::StatusCode::kFailedPrecondition) << gone.status();
  EXPECT_NE(gone.status().message().find("restoring Cache at /"), std::string::npos) << gone.status();
  EXPECT_NE(gone.status().message().find(path), std::string::npos) << gone.status();
}

TEST(CheckpointMoreOpsTest, FileCacheUnderRepeatRestoresAtEveryCut) {
  const std::string path = FreshCachePath("repeat");
  Dataset<int64_t> repeated = Range(15).Map(MaybeFail).Cache(path).Repeat(2);
  // The first iterator writes the file (and yields the input's errors); every later one reads it.
  All(repeated);
  CheckEveryCut(repeated, "Cache(file).Repeat(2)");
  const std::string fresh = FreshCachePath("repeat_fresh");
  Dataset<int64_t> ds = Range(15).Map(MaybeFail).Cache(fresh).Take(9);  // abandons its pass: never completes
  CheckEveryCut(ds, "Cache(file).Take(9)");
  EXPECT_FALSE(ops::cache_file::IsComplete(fresh));
}

// Each op's params are in the fingerprint: a changed one is refused, naming it.
TEST(CheckpointMoreOpsTest, ChangedParamsAreRefused) {
  auto check = [](const Dataset<int64_t>& saved_from, const Dataset<int64_t>& changed,
                  const std::string& op) {
    Iterator<int64_t> it = saved_from.MakeIterator();
    Pull(it, 3);
    absl::StatusOr<std::string> state = it.SaveBlocking();
    ASSERT_TRUE(state.ok()) << state.status();
    auto restored = changed.RestoreIterator(*state);
    ASSERT_EQ(restored.status().code(), absl::StatusCode::kFailedPrecondition) << op;
    EXPECT_NE(restored.status().message().find(absl::StrCat("saved from ", op)), std::string::npos)
        << restored.status();
  };
  check(SampleFromDatasets<int64_t>({Range(9), Range(9)}, {1, 2}, 1),
        SampleFromDatasets<int64_t>({Range(9), Range(9)}, {1, 3}, 1), "SampleFromDatasets");
  check(
      ChooseFromDatasets<int64_t>({Range(9), Range(9)}, Range(9).Map([](int64_t x) { return x % 2; }), true),
      ChooseFromDatasets<int64_t>({Range(9), Range(9)}, Range(9).Map([](int64_t x) { return x % 2; }), false),
      "ChooseFromDatasets");
  check(Range(20).Map(SequenceOrError).PaddedBatch(2).Map(TensorHash),
        Range(20).Map(SequenceOrError).PaddedBatch(3).Map(TensorHash), "PaddedBatch");
  check(Range(20).Map(SequenceOrError).BucketBySequenceLength(Length, {3}, {2, 2}).Map(TensorHash),
        Range(20).Map(SequenceOrError).BucketBySequenceLength(Length, {4}, {2, 2}).Map(TensorHash),
        "BucketBySequenceLength");
  auto size = [](const Tensor& b) { return b.shape().dim(0); };
  check(Range(20).Batch(3).Rebatch(2).Map(size), Range(20).Batch(3).Rebatch(4).Map(size), "Rebatch");
  check(Range(20).Cache(), Range(20).Cache(FreshCachePath("changed")), "Cache");
}

// Truncations of a state holding every newly covered op fail as DataLoss, never crash.
TEST(CheckpointMoreOpsTest, TruncatedStatesOfTheNewOpsAreDataLoss) {
  Dataset<int64_t> ds =
      SampleFromDatasets<int64_t>(
          {Range(30).Map(SequenceOrError).PaddedBatch(3).Map(TensorHash).Cache(),
           Range(30).Map(SequenceOrError).BucketBySequenceLength(Length, {3}, {2, 3}).Map(TensorHash),
           ChooseFromDatasets<int64_t>({Range(9).Batch(2).Rebatch(3).Map(SumOfBatch)},
                                       Range(10).Map([](int64_t) { return int64_t{0}; }))},
          {}, 5)
          .Repeat(2);
  Iterator<int64_t> it = ds.MakeIterator();
  Pull(it, 25);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  for (size_t n = 0; n < state->size(); n += 7) {
    auto restored = ds.RestoreIterator(std::string_view(*state).substr(0, n));
    EXPECT_FALSE(restored.ok()) << n;
  }
  auto restored = ds.RestoreIterator(*state);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(Pull(*restored, kAll), Pull(it, kAll));
}

// The factory's dataset is not part of the graph (a leaf naming it): its stream's state is a checkpoint
// of its own, checked against what the factory builds in the restoring process.
TEST(CheckpointMoreOpsTest, RegisteredDatasetRestoresAtEveryCut) {
  using checkpoint_more_ops_registrations::kShuffledRange;
  CheckEveryCut(RegisteredDataset(kShuffledRange.With({{"n", int64_t{30}}, {"seed", int64_t{3}}})),
                "RegisteredDataset");
  CheckEveryCut(RegisteredDataset(kShuffledRange.With({{"n", int64_t{25}}, {"seed", int64_t{4}}}))
                    .Map([](int64_t x) { return x * 2; }, "twice")
                    .Repeat(2)
                    .Prefetch(2),
                "RegisteredDataset under Repeat and Prefetch");
}

// An unseeded Shuffle inside draws its seed per iterator: the restored one continues with the saved seed.
TEST(CheckpointMoreOpsTest, RegisteredDatasetKeepsItsInnerSeedAcrossARestore) {
  using checkpoint_more_ops_registrations::kShuffledRange;
  const Dataset<int64_t> ds = RegisteredDataset(kShuffledRange.With({{"n", int64_t{40}}}));
  for (size_t cut : {0u, 3u, 20u, 39u}) {
    Iterator<int64_t> it = ds.MakeIterator();
    Pull(it, cut);
    absl::StatusOr<std::string> state = it.SaveBlocking();
    ASSERT_TRUE(state.ok()) << state.status();
    Elements live = Pull(it, kAll);
    absl::StatusOr<Iterator<int64_t>> restored = ds.RestoreIterator(*state);
    ASSERT_TRUE(restored.ok()) << restored.status();
    EXPECT_EQ(Pull(*restored, kAll), live) << "cut at " << cut;
  }
}

TEST(CheckpointMoreOpsTest, RegisteredDatasetBuiltDifferentlyIsRefusedNamingIt) {
  using checkpoint_more_ops_registrations::inner_buffer;
  using checkpoint_more_ops_registrations::kShuffledRange;
  const Dataset<int64_t> ds = RegisteredDataset(kShuffledRange.With({{"n", int64_t{30}}})).Skip(1);
  Iterator<int64_t> it = ds.MakeIterator();
  Pull(it, 4);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  inner_buffer = 7;
  const Dataset<int64_t> rebuilt = RegisteredDataset(kShuffledRange.With({{"n", int64_t{30}}})).Skip(1);
  absl::StatusOr<Iterator<int64_t>> restored = rebuilt.RestoreIterator(*state);
  inner_buffer = 5;
  ASSERT_FALSE(restored.ok());
  EXPECT_EQ(restored.status().code(), absl::StatusCode::kFailedPrecondition) << restored.status();
  EXPECT_NE(restored.status().message().find("RegisteredDataset at /0"), std::string::npos)
      << restored.status();
  EXPECT_NE(restored.status().message().find("Shuffle"), std::string::npos) << restored.status();
}

}  // namespace
}  // namespace checkpoint_more_ops_test
}  // namespace sluice
