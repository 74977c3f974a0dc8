// Save hooks (docs/checkpoint.md): functions declared Stateful and FromGenerator sources with
// GeneratorHooks save and restore their own state; declared without hooks, or where an op cannot save
// them, Save fails naming the op.
#include <charconv>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sluice/engine/async_generator.h"
#include "sluice/ops/dataset.h"
#include "tests/ops/checkpoint_helpers.h"

namespace sluice::checkpoint_hooks_test {
namespace {

using checkpoint_testing::Elements;
using checkpoint_testing::Pull;
using checkpoint_testing::Show;

constexpr size_t kAll = 100000;

std::vector<std::string> Shown(const Elements& elements) {
  std::vector<std::string> shown;
  for (const auto& e : elements) shown.push_back(Show(e));
  return shown;
}

int64_t ParseInt(std::string_view text) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) throw std::invalid_argument("not a number");
  return value;
}

// Adds how many elements it has seen: its output depends on its state.
struct RunningOffset {
  int64_t seen = 0;
  int64_t operator()(int64_t x) { return x * 100 + seen++; }
};
auto SaveSeen = [](const RunningOffset& f) { return std::to_string(f.seen); };
auto RestoreSeen = [](RunningOffset& f, std::string_view state) { f.seen = ParseInt(state); };

// Keeps every third element it is asked about.
struct EveryThird {
  int64_t asked = 0;
  bool operator()(const int64_t&) { return asked++ % 3 == 0; }
};

// For every cut of `ds`: prefix, save, destroy, restore, suffix; equal to the uninterrupted run.
void ExpectEveryCutResumes(const Dataset<int64_t>& ds) {
  auto whole = ds.MakeIterator();
  const Elements expected = Pull(whole, kAll);
  ASSERT_FALSE(expected.empty());
  for (size_t cut = 0; cut <= expected.size(); ++cut) {
    SCOPED_TRACE(absl::StrCat("cut at ", cut));
    std::string state;
    Elements got;
    {
      auto it = ds.MakeIterator();
      got = Pull(it, cut);
      absl::StatusOr<std::string> saved = it.SaveBlocking();
      ASSERT_TRUE(saved.ok()) << saved.status();
      state = *std::move(saved);
    }
    absl::StatusOr<Iterator<int64_t>> restored = ds.RestoreIterator(state);
    ASSERT_TRUE(restored.ok()) << restored.status();
    for (auto& e : Pull(*restored, kAll)) got.push_back(std::move(e));
    EXPECT_EQ(Shown(got), Shown(expected));
  }
}

absl::Status SaveAfter(const Dataset<int64_t>& ds, size_t pulled) {
  auto it = ds.MakeIterator();
  Pull(it, pulled);
  return it.SaveBlocking().status();
}

TEST(CheckpointHooksTest, StatefulMapFunctionIsSavedAndRestored) {
  const auto ds = Range(0, 12).Map(Stateful(RunningOffset{}, SaveSeen, RestoreSeen)).Prefetch(3);
  ExpectEveryCutResumes(ds);
  // Without its state a restored function would start from seen = 0 again: the test would see it.
  auto it = ds.MakeIterator();
  EXPECT_EQ(Shown(Pull(it, 3)), (std::vector<std::string>{"0", "101", "202"}));
}

TEST(CheckpointHooksTest, StatefulFilterPredicateIsSavedAndRestored) {
  ExpectEveryCutResumes(Range(0, 20).Filter(Stateful(
      EveryThird{}, [](const EveryThird& p) { return std::to_string(p.asked); },
      [](EveryThird& p, std::string_view state) -> absl::Status {
        p.asked = ParseInt(state);
        return absl::OkStatus();
      })));
}

TEST(CheckpointHooksTest, DeclaredStatefulWithoutHooksFailsNamingTheOp) {
  const auto ds = Range(0, 10).Map([](int64_t x) { return x; }).Map(Stateful(RunningOffset{}), "offset");
  // Calling it works as the function itself.
  auto it = ds.MakeIterator();
  EXPECT_EQ(Shown(Pull(it, 2)), (std::vector<std::string>{"0", "101"}));
  absl::Status saved = it.SaveBlocking().status();
  EXPECT_EQ(saved.code(), absl::StatusCode::kFailedPrecondition) << saved;
  EXPECT_NE(
      saved.message().find("checkpointing Map at /: its function f is declared Stateful without save hooks"),
      std::string::npos)
      << saved;
  EXPECT_NE(saved.message().find("Map(f=Stateful(\"offset\"))"), std::string::npos) << saved;
  // The iterator goes on unchanged after the refused save.
  EXPECT_EQ(Shown(Pull(it, 1)), (std::vector<std::string>{"202"}));
}

TEST(CheckpointHooksTest, StatefulFunctionInAnOpThatCannotSaveItFails) {
  const auto ds = Range(0, 10).TakeWhile(Stateful([n = 0](const int64_t&) mutable { return n++ < 5; },
                                                  [](const auto&) { return std::string(); },
                                                  [](auto&, std::string_view) {}));
  absl::Status saved = SaveAfter(ds, 2);
  EXPECT_EQ(saved.code(), absl::StatusCode::kFailedPrecondition) << saved;
  EXPECT_NE(saved.message().find("TakeWhile at /: its function predicate is declared Stateful, and TakeWhile "
                                 "cannot save a function's state"),
            std::string::npos)
      << saved;
}

TEST(CheckpointHooksTest, StatefulFunctionInsideAnInterleavesDatasetsFails) {
  const auto ds = Range(0, 3).Interleave(
      [](int64_t x) { return Range(x * 10, x * 10 + 5).Map(Stateful(RunningOffset{})); }, 2, 1);
  absl::Status saved = SaveAfter(ds, 3);
  EXPECT_EQ(saved.code(), absl::StatusCode::kFailedPrecondition) << saved;
  EXPECT_NE(saved.message().find("cycle slot 0"), std::string::npos) << saved;
  EXPECT_NE(saved.message().find("declared Stateful without save hooks"), std::string::npos) << saved;
}

TEST(CheckpointHooksTest, CompactModeRefusesAStatefulFunction) {
  Options options;
  options.compact_checkpoints = true;
  auto it = Range(0, 10).Map(Stateful(RunningOffset{}, SaveSeen, RestoreSeen)).MakeIterator(options);
  auto first = it.NextBlocking();
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), absl::StatusCode::kInvalidArgument) << first.status();
  EXPECT_NE(first.status().message().find("Map at / has a function declared Stateful"), std::string::npos)
      << first.status();
}

TEST(CheckpointHooksTest, HookErrorsNameTheOpAndPath) {
  const auto throwing_save = Range(0, 10).Map(Stateful(
      RunningOffset{}, [](const RunningOffset&) -> std::string { throw std::runtime_error("disk full"); },
      RestoreSeen));
  absl::Status saved = SaveAfter(throwing_save, 1);
  EXPECT_FALSE(saved.ok());
  EXPECT_NE(saved.message().find("saving the function state of Map at /"), std::string::npos) << saved;
  EXPECT_NE(saved.message().find("disk full"), std::string::npos) << saved;

  const auto refusing_restore =
      Range(0, 10).Map(Stateful(RunningOffset{}, SaveSeen, [](RunningOffset&, std::string_view) {
        return absl::InvalidArgumentError("bad counter");
      }));
  auto it = refusing_restore.MakeIterator();
  Pull(it, 2);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  absl::StatusOr<Iterator<int64_t>> restored = refusing_restore.RestoreIterator(*state);
  ASSERT_FALSE(restored.ok());
  EXPECT_EQ(restored.status().code(), absl::StatusCode::kInvalidArgument) << restored.status();
  EXPECT_NE(restored.status().message().find("restoring the function state of Map at /: bad counter"),
            std::string::npos)
      << restored.status();
}

TEST(CheckpointHooksTest, StatesOfTheStatefulAndTheUndeclaredPipelineDoNotMix) {
  const auto declared = Range(0, 10).Map(Stateful(RunningOffset{}, SaveSeen, RestoreSeen));
  const auto undeclared = Range(0, 10).Map(RunningOffset{});
  auto it = declared.MakeIterator();
  Pull(it, 2);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  absl::StatusOr<Iterator<int64_t>> restored = undeclared.RestoreIterator(*state);
  ASSERT_FALSE(restored.ok());
  EXPECT_EQ(restored.status().code(), absl::StatusCode::kFailedPrecondition) << restored.status();
}

// A callable source whose state is its next value.
struct Counter {
  int64_t next = 0;
  int64_t end = 0;
  absl::StatusOr<std::optional<int64_t>> operator()() {
    if (next >= end) return std::optional<int64_t>();
    const int64_t value = next++;
    if (value % 7 == 3) return absl::DataLossError(absl::StrCat("odd record ", value));
    return std::optional<int64_t>(value * value);
  }
};

auto CounterHooks(int64_t end, int* restores = nullptr) {
  return GeneratorHooks{[](const Counter& c, int64_t produced) -> absl::StatusOr<std::string> {
                          if (produced != c.next)
                            return absl::InternalError("produced does not match the counter");
                          return std::to_string(c.next);
                        },
                        [end, restores](std::string_view state, int64_t produced) -> absl::StatusOr<Counter> {
                          if (restores != nullptr) ++*restores;
                          const int64_t next = ParseInt(state);
                          if (next != produced)
                            return absl::InternalError("produced does not match the state");
                          return Counter{next, end};
                        }};
}

TEST(CheckpointHooksTest, FromGeneratorCallableWithHooksResumesAtEveryCut) {
  int restores = 0;
  const auto ds = FromGenerator([] { return Counter{0, 15}; }, CounterHooks(15, &restores), "counter");
  ExpectEveryCutResumes(ds);
  // A cut before the first pull restores no source (the factory makes it); cuts 1 to 15 each call restore.
  EXPECT_EQ(restores, 15);
  ExpectEveryCutResumes(ds.Map([](int64_t x) { return x + 1; }).Prefetch(4));
  ExpectEveryCutResumes(ds.Repeat(2).BatchVectors(4).Unbatch());
  ExpectEveryCutResumes(
      ds.Repeat(2).Batch(4).Unbatch().Map(checkpoint_testing::IntOf));
}

AsyncGenerator<int64_t> CubesFrom(int64_t from, int64_t end) {
  for (int64_t i = from; i < end; ++i) co_yield i* i* i;
}

TEST(CheckpointHooksTest, FromGeneratorCoroutineWithHooksResumesAtEveryCut) {
  const auto ds = FromGenerator(
      [] { return CubesFrom(0, 12); },
      GeneratorHooks{[](const AsyncGenerator<int64_t>&, int64_t) { return std::string(); },
                     [](std::string_view, int64_t produced) { return CubesFrom(produced, 12); }});
  ExpectEveryCutResumes(ds);
  ExpectEveryCutResumes(ds.Prefetch(3));
  ExpectEveryCutResumes(ds.Map([](int64_t x) { return x - 1; }, 2, true));
}

TEST(CheckpointHooksTest, FromGeneratorWithoutHooksSaysHowToAddThem) {
  absl::Status saved = SaveAfter(checkpoint_testing::GeneratedRange(5), 2);
  EXPECT_EQ(saved.code(), absl::StatusCode::kFailedPrecondition) << saved;
  EXPECT_NE(saved.message().find("checkpointing FromGenerator at / is not supported yet"), std::string::npos)
      << saved;
  EXPECT_NE(saved.message().find("FromGenerator(factory, GeneratorHooks{save, restore})"), std::string::npos)
      << saved;
}

TEST(CheckpointHooksTest, FromGeneratorHookFailuresAreErrorsNotCrashes) {
  const auto ds = FromGenerator(
      [] {
        return Counter{0, 10};
      },
      GeneratorHooks{[](const Counter& c, int64_t) { return std::to_string(c.next); },
                     [](std::string_view state, int64_t) {
                       return Counter{ParseInt(state), 10};
                     }});
  auto it = ds.MakeIterator();
  Pull(it, 2);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  // A state whose hook bytes do not parse: the restore hook throws, the restore fails naming the op.
  const auto other = FromGenerator(
      [] {
        return Counter{0, 10};
      },
      GeneratorHooks{[](const Counter&, int64_t) { return std::string("not a number"); },
                     [](std::string_view state, int64_t) {
                       return Counter{ParseInt(state), 10};
                     }});
  auto other_it = other.MakeIterator();
  Pull(other_it, 2);
  absl::StatusOr<std::string> bad = other_it.SaveBlocking();
  ASSERT_TRUE(bad.ok()) << bad.status();
  absl::StatusOr<Iterator<int64_t>> restored = other.RestoreIterator(*bad);
  ASSERT_FALSE(restored.ok());
  EXPECT_NE(restored.status().message().find("restoring the function state of FromGenerator at /"),
            std::string::npos)
      << restored.status();
  EXPECT_NE(restored.status().message().find("not a number"), std::string::npos) << restored.status();
}

}  // namespace
}  // namespace sluice::checkpoint_hooks_test
