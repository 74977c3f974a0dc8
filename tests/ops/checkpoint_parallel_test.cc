// Checkpoints of the parallel and nested ops (docs/checkpoint.md): a save while calls are in flight, and
// a save followed by the same iterator going on, op by op.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "tests/ops/checkpoint_helpers.h"
#include "tests/ops/test_helpers.h"
#include "tests/test_util.h"

namespace sluice {
namespace checkpoint_parallel_test_file {
namespace {

using checkpoint_testing::Elements;
using checkpoint_testing::GeneratedRange;
using checkpoint_testing::IntOf;
using checkpoint_testing::MaybeFail;
using checkpoint_testing::Pull;
using checkpoint_testing::Show;
using checkpoint_testing::Sorted;
using checkpoint_testing::SumOfBatch;

Elements Concat(Elements a, const Elements& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Once armed, calls wait in the function until Release(). Before, they only count themselves. Every
// wait is bounded, so a broken pipeline fails the test rather than hanging it.
class Gate {
 public:
  void Pass() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!armed_) {
      ++passed_;
      changed_.notify_all();
      return;
    }
    ++entered_;
    changed_.notify_all();
    changed_.wait_for(lock, std::chrono::seconds(60), [this] { return released_; });
  }
  // After `passed` calls went through unarmed (returns whether they did).
  bool ArmAfter(int passed) {
    std::unique_lock<std::mutex> lock(mu_);
    const bool reached = changed_.wait_for(lock, std::chrono::seconds(20), [&] { return passed_ >= passed; });
    armed_ = true;
    return reached;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    changed_.notify_all();
  }
  // Waits until one call is inside the gate, then a little for `n`; returns how many are. Not all `n`
  // need arrive: a parked worker's wake-up can be queued on a pool thread blocked in the gate.
  int WaitEntered(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait_for(lock, std::chrono::seconds(20), [&] { return entered_ >= 1; });
    changed_.wait_for(lock, std::chrono::milliseconds(500), [&] { return entered_ >= n; });
    return entered_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  bool armed_ = false;
  int passed_ = 0;
  int entered_ = 0;
  bool released_ = false;
};

using MapFn = std::function<absl::StatusOr<int64_t>(int64_t)>;

// A save while workers are blocked inside the user's function: it waits for those calls (it cannot
// finish before they are released), saves their results, and both the live iterator and a restored one
// continue with exactly the rest. `make` builds the pipeline around a function. The consumer never waits
// while a call blocks (a wake-up queued on a pool thread blocked in the gate would wait for the release):
// `taken` elements, then the workers fill their buffers (`buffered` calls) and park, then the gate
// closes, and `more` ready results taken let parked workers start up to `blocked` calls, which block.
void SaveWhileCallsAreInFlight(const std::function<Dataset<int64_t>(MapFn)>& make, bool deterministic,
                               int taken, int buffered, int more, int blocked) {
  auto gate = std::make_shared<Gate>();
  Dataset<int64_t> ds = make([gate](int64_t x) {
    gate->Pass();
    return MaybeFail(x);
  });
  const Elements expected = test_ops::Collect(make(MaybeFail));  // errors name the element's index

  Options options;
  options.thread_pool_size = 4;  // a thread per blocked call and more, so the save's wake-ups still run
  Iterator<int64_t> it = ds.MakeIterator(options);
  // Whatever fails below, the calls are let go before the iterator (declared first) joins them.
  struct ReleaseAtExit {
    Gate* gate;
    ~ReleaseAtExit() { gate->Release(); }
  } release_at_exit{gate.get()};
  Elements prefix = Pull(it, static_cast<size_t>(taken));
  ASSERT_TRUE(gate->ArmAfter(taken + buffered));
  for (auto& e : Pull(it, static_cast<size_t>(more))) prefix.push_back(std::move(e));
  const int entered = gate->WaitEntered(blocked);
  ASSERT_GE(entered, 1);
  ASSERT_LE(entered, blocked);
  std::atomic<bool> saved{false};
  absl::StatusOr<std::string> state;
  std::thread saver([&] {
    state = it.SaveBlocking();
    saved = true;
  });
  EXPECT_FALSE(saved.load());  // the calls in flight hold the save: it cannot have finished yet
  gate->Release();
  saver.join();
  ASSERT_TRUE(state.ok()) << state.status();

  Elements live = Pull(it, 1000);
  { Iterator<int64_t> dropped = std::move(it); }
  auto restored = ds.RestoreIterator(*state);
  ASSERT_TRUE(restored.ok()) << restored.status();
  Elements suffix = Pull(*restored, 1000);
  ASSERT_GT(suffix.size(), 0u);
  if (deterministic) {
    EXPECT_EQ(Concat(prefix, suffix), expected);
    EXPECT_EQ(Concat(prefix, live), expected);
  } else {
    EXPECT_EQ(Sorted(Concat(prefix, suffix)), Sorted(expected));
    EXPECT_EQ(Sorted(Concat(prefix, live)), Sorted(expected));
  }
}

// ParallelMap(4): a buffer of 4 * 4 results; each of the 4 results taken after it filled starts a call.
Dataset<int64_t> GatedMap(MapFn f, bool deterministic) {
  return Range(60).Map(std::move(f), 4, deterministic);
}

TEST(CheckpointParallelTest, SaveWhileCallsAreInFlightDeterministic) {
  SaveWhileCallsAreInFlight([](MapFn f) { return GatedMap(std::move(f), true); }, true, 3, 16, 4, 4);
}
TEST(CheckpointParallelTest, SaveWhileCallsAreInFlightNondeterministic) {
  SaveWhileCallsAreInFlight([](MapFn f) { return GatedMap(std::move(f), false); }, false, 3, 16, 4, 4);
}

// ParallelInterleave(cycle 2, block 1, 2 workers) over inner Maps: each slot buffers 8; taking from a
// full slot wakes a worker, whose next poll of the inner Map blocks, one per slot.
Dataset<int64_t> GatedInterleave(MapFn f, bool deterministic) {
  return Range(5).Interleave([f](int64_t x) { return Range(x * 100, x * 100 + 30).Map(f); }, 2, 1, 2,
                             deterministic);
}

TEST(CheckpointParallelTest, ParallelInterleaveSaveWhileCallsAreInFlight) {
  for (bool deterministic : {true, false}) {
    SCOPED_TRACE(deterministic);
    SaveWhileCallsAreInFlight([=](MapFn f) { return GatedInterleave(std::move(f), deterministic); },
                              deterministic, 3, 16, 4, 2);
  }
}

// One iterator saved twice as it goes: its own elements are the uninterrupted run's, and each state
// restores the rest after its save (as a multiset when `deterministic` is false).
void CheckSaveThenContinue(const Dataset<int64_t>& ds, bool deterministic, const std::string& what) {
  Iterator<int64_t> full_it = ds.MakeIterator();
  const Elements full = Pull(full_it, 100000);
  ASSERT_GT(full.size(), 10u) << what;
  const size_t first = full.size() / 4, second = full.size() / 2 + 1;
  Iterator<int64_t> it = ds.MakeIterator();
  Elements a = Pull(it, first);
  absl::StatusOr<std::string> state1 = it.SaveBlocking();
  ASSERT_TRUE(state1.ok()) << what << "\n" << state1.status();
  Elements b = Pull(it, second - first);
  absl::StatusOr<std::string> state2 = it.SaveBlocking();
  ASSERT_TRUE(state2.ok()) << what << "\n" << state2.status();
  Elements c = Pull(it, 100000);
  auto same = [&](const Elements& got, const Elements& want, const std::string& which) {
    if (deterministic) {
      EXPECT_EQ(got, want) << what << ": " << which;
    } else {
      EXPECT_EQ(Sorted(got), Sorted(want)) << what << ": " << which;
    }
  };
  same(Concat(Concat(a, b), c), full, "the saving iterator");
  auto from1 = ds.RestoreIterator(*state1);
  ASSERT_TRUE(from1.ok()) << what << "\n" << from1.status();
  same(Concat(a, Pull(*from1, 100000)), full, "restored from the first save");
  auto from2 = ds.RestoreIterator(*state2);
  ASSERT_TRUE(from2.ok()) << what << "\n" << from2.status();
  same(Concat(Concat(a, b), Pull(*from2, 100000)), full, "restored from the second save");
}

int64_t Size(std::string s) { return static_cast<int64_t>(s.size()); }

TEST(CheckpointParallelTest, ParallelMapSaveThenContinue) {
  CheckSaveThenContinue(Range(300).Map(MaybeFail, 3, true), true, "ParallelMap(3)");
  CheckSaveThenContinue(Range(300).Map(MaybeFail, kAutotune, true), true, "ParallelMap(kAutotune)");
  CheckSaveThenContinue(Range(300).Map(MaybeFail, 3, false), false, "ParallelMap(3, nondeterministic)");
  // An async input: the workers may wait on it when the save pauses them.
  CheckSaveThenContinue(Range(300).Prefetch(2).Map(MaybeFail, 4, true), true, "Prefetch.ParallelMap");
}

TEST(CheckpointParallelTest, ParallelBatchSaveThenContinue) {
  CheckSaveThenContinue(Range(301).Batch(4, false, 2).Map(SumOfBatch), true, "Batch(4, parallel)");
  // An async input leaves partial groups behind a pending poll; errors drop their group.
  CheckSaveThenContinue(Range(300).Map(MaybeFail).Prefetch(1).Batch(5, true, 3).Map(SumOfBatch), true,
                        "Prefetch.Batch(5, drop, parallel)");
  CheckSaveThenContinue(Range(300).Batch(3, false, 3, false).Unbatch().Map(IntOf), false,
                        "Batch(3, nondeterministic)");
}

TEST(CheckpointParallelTest, ParseExampleSaveThenContinue) {
  std::vector<std::string> files = testing_util::TaxiEvalShards(2);
  ParseSpec spec;
  spec.var.push_back(VarLenFeature{"fare", DType::kFloat32});
  spec.fixed.push_back({"trip_seconds", DType::kInt64, Shape({}), std::nullopt});  // missing in some
  auto rows = [](ParsedExample p) {
    return p.fixed[0].num_elements() * 1000 + p.var[0].values.num_elements();
  };
  CheckSaveThenContinue(TFRecord(files, Compression::kGzip).ParseExample(spec).Map(rows), true,
                        "ParseExample");
  CheckSaveThenContinue(TFRecord(files, Compression::kGzip).Batch(16).ParseExample(spec).Map(rows), true,
                        "Batch.ParseExample");
}

TEST(CheckpointParallelTest, InterleaveAndFlatMapSaveThenContinue) {
  auto inner = [](int64_t x) { return Range(x % 13).Map([x](int64_t y) { return x * 1000 + y; }); };
  CheckSaveThenContinue(Range(40).Interleave(inner, 3, 2), true, "Interleave(3, 2)");
  CheckSaveThenContinue(Range(40).FlatMap(inner), true, "FlatMap");
  // Nested cycles.
  auto nested = [](int64_t x) {
    return Range(x % 5 + 1).Interleave(
        [x](int64_t y) { return Range(y + 2).Map([x](int64_t z) { return x + z; }); }, 2, 1);
  };
  CheckSaveThenContinue(Range(30).Map(MaybeFail).Interleave(nested, 2, 3).Prefetch(3), true,
                        "Interleave(Interleave)");
  // Unseeded Shuffles in every slot, all open at the save (a dataset opened later draws a new seed).
  auto shuffled =
      Range(1, 5).Interleave([](int64_t x) { return Range(10 * x).Shuffle(5).Prefetch(2); }, 4, 1);
  Iterator<int64_t> it = shuffled.MakeIterator();
  Pull(it, 37);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  Elements live = Pull(it, 100000);
  auto restored = shuffled.RestoreIterator(*state);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(Pull(*restored, 100000), live);
  EXPECT_EQ(live.size(), 100u - 37u);
}

TEST(CheckpointParallelTest, ParallelInterleaveSaveThenContinue) {
  auto inner = [](int64_t x) { return Range(x % 13).Map([x](int64_t y) { return x * 1000 + y; }); };
  CheckSaveThenContinue(Range(40).Map(MaybeFail).Interleave(inner, 3, 2, 2, true), true,
                        "ParallelInterleave(3, 2, 2)");
  CheckSaveThenContinue(Range(40).Interleave(inner, 4, 1, kAutotune, true), true,
                        "ParallelInterleave(4, 1, kAutotune)");
  CheckSaveThenContinue(Range(40).Map(MaybeFail).Interleave(inner, 3, 2, 3, false), false,
                        "ParallelInterleave(3, 2, 3, nondeterministic)");
  // Sub-streams that are async themselves: a worker may be waiting on one when the save pauses it.
  auto prefetched = [](int64_t x) { return Range(x % 9).Map(MaybeFail).Prefetch(1); };
  CheckSaveThenContinue(Range(40).Interleave(prefetched, 4, 3, 4, true), true,
                        "ParallelInterleave(Prefetch)");
}

TEST(CheckpointParallelTest, InterleaveOfFilesSaveThenContinue) {
  std::vector<std::string> files = testing_util::TaxiEvalShards(4);
  auto ds = FromVector(files)
                .Interleave([](std::string file) { return TFRecord({file}, Compression::kGzip); }, 2, 4)
                .Map(Size);
  CheckSaveThenContinue(ds, true, "Interleave(TFRecord)");
  auto parallel =
      FromVector(files)
          .Interleave([](std::string file) { return TFRecord({file}, Compression::kGzip); }, 3, 4, 3)
          .Map(Size);
  CheckSaveThenContinue(parallel, true, "ParallelInterleave(TFRecord)");
}

// Every cut of a FlatMap whose datasets hold a parallel Batch, under Enumerate (which exposes any
// element lost, repeated or reordered), then a parallel map polling it from its workers.
TEST(CheckpointParallelTest, ParallelBatchInsideFlatMapEveryCut) {
  for (bool deterministic : {true, false}) {
    auto ds = Range(60)
                  .FlatMap([](int64_t x) { return Range(x % 4).Batch(2, false, 2).Unbatch().Map(IntOf); })
                  .Enumerate()
                  .Map([](std::pair<int64_t, int64_t> p) { return p.first * 1000 + p.second; })
                  .Shard(2, 0)
                  .Map(MaybeFail, 3, deterministic);
    // Deterministic: the exact sequence; otherwise the multiset (sorted on both sides).
    auto canon = [deterministic](Elements e) { return deterministic ? e : Sorted(std::move(e)); };
    const Elements full = canon(test_ops::Collect(ds));
    ASSERT_GT(full.size(), 20u);
    for (size_t cut = deterministic ? 0 : 1; cut <= full.size(); cut += 2) {  // odd or even cuts: half
      Iterator<int64_t> it = ds.MakeIterator();
      Elements prefix = Pull(it, cut);
      absl::StatusOr<std::string> state = it.SaveBlocking();
      ASSERT_TRUE(state.ok()) << state.status();
      Elements live = Pull(it, 100000);
      auto restored = ds.RestoreIterator(*state);
      ASSERT_TRUE(restored.ok()) << restored.status();
      Elements suffix = Pull(*restored, 100000);
      ASSERT_EQ(canon(Concat(prefix, suffix)), full) << "cut " << cut << " " << deterministic;
      ASSERT_EQ(canon(Concat(prefix, live)), full) << "live, cut " << cut << " " << deterministic;
    }
  }
}

// A save that fails below a parallel op (an uncovered FromGenerator) still paused and resumed its workers:
// the error names the uncovered op and its path, and the iterator goes on with exactly the rest.
TEST(CheckpointParallelTest, FailedSaveBelowAParallelOpLeavesTheIteratorExact) {
  struct Case {
    Dataset<int64_t> ds;
    std::string error;
  };
  std::vector<Case> cases = {
      {GeneratedRange(2000).Map(MaybeFail, 3, true),
       "checkpointing FromGenerator at /0 is not supported yet"},
      {GeneratedRange(2000).Batch(4, false, 2).Map(SumOfBatch),
       "checkpointing FromGenerator at /0/0 is not supported yet"},
      {Range(6).Interleave(
           [](int64_t x) { return GeneratedRange(9).Map([x](int64_t y) { return x * 10 + y; }); }, 2, 1, 2,
           true),
       "ParallelInterleave at /, cycle slot 0: checkpointing FromGenerator at /0 is not supported yet"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.error);
    const Elements full = test_ops::Collect(c.ds);
    ASSERT_GT(full.size(), 10u);
    Iterator<int64_t> it = c.ds.MakeIterator();
    Elements got = Pull(it, 5);
    absl::StatusOr<std::string> state = it.SaveBlocking();
    ASSERT_EQ(state.status().code(), absl::StatusCode::kFailedPrecondition) << state.status();
    EXPECT_NE(state.status().message().find(c.error), std::string::npos) << state.status();
    EXPECT_EQ(Concat(got, Pull(it, 100000)), full);
  }
}

}  // namespace
}  // namespace checkpoint_parallel_test_file
}  // namespace sluice
