// Window: tf.data.Dataset.window's documented examples, its kernel tests' cases (shift, stride,
// drop_remainder, errors, cardinality) and saving mid-way.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "tests/ops/checkpoint_helpers.h"
#include "tests/ops/test_helpers.h"

namespace sluice::window_test {
namespace {

using checkpoint_testing::Pull;
using test_ops::Collect;
using test_ops::Values;
using ::testing::HasSubstr;
using Ints64 = std::vector<int64_t>;

// Each window's elements.
std::vector<Ints64> Windows(const Dataset<Dataset<int64_t>>& ds) {
  std::vector<Ints64> out;
  for (const Dataset<int64_t>& w : Values(ds)) out.push_back(Values(w));
  return out;
}

// The documentation's examples.
TEST(WindowTest, DocumentedExamples) {
  EXPECT_EQ(Windows(Range(7).Window(3)), (std::vector<Ints64>{{0, 1, 2}, {3, 4, 5}, {6}}));
  EXPECT_EQ(Windows(Range(7).Window(3, std::nullopt, 1, /*drop_remainder=*/true)),
            (std::vector<Ints64>{{0, 1, 2}, {3, 4, 5}}));
  EXPECT_EQ(Windows(Range(7).Window(3, 2, 1, true)), (std::vector<Ints64>{{0, 1, 2}, {2, 3, 4}, {4, 5, 6}}));
  EXPECT_EQ(Windows(Range(7).Window(3, 1, 2, true)), (std::vector<Ints64>{{0, 2, 4}, {1, 3, 5}, {2, 4, 6}}));
  // flat_map(lambda w: w.batch(3)) over window(3, shift=2)
  auto batches = Values(Range(7).Window(3, 2).FlatMap([](Dataset<int64_t> w) { return w.Batch(3); }));
  EXPECT_EQ(test_ops::IntBatches(batches), (std::vector<Ints64>{{0, 1, 2}, {2, 3, 4}, {4, 5, 6}, {6}}));
}

// A shift larger than the window drops the elements between windows.
TEST(WindowTest, ShiftLargerThanSizeSkips) {
  EXPECT_EQ(Windows(Range(10).Window(2, 4)), (std::vector<Ints64>{{0, 1}, {4, 5}, {8, 9}}));
  EXPECT_EQ(Windows(Range(11).Window(2, 4, 3)), (std::vector<Ints64>{{0, 3}, {4, 7}, {8}}));
  EXPECT_EQ(Windows(Range(11).Window(2, 4, 3, true)), (std::vector<Ints64>{{0, 3}, {4, 7}}));
}

// WindowDatasetOpTest's cardinalities, checked against the elements.
TEST(WindowTest, CardinalityFollowsTfDataRule) {
  struct Case {
    int64_t n, size, shift, stride;
    bool drop;
  };
  for (const Case c :
       {Case{7, 2, 2, 1, false}, Case{7, 2, 2, 1, true}, Case{7, 2, 2, 2, true}, Case{7, 8, 3, 1, false},
        Case{7, 8, 3, 1, true}, Case{7, 3, 1, 2, true}, Case{0, 2, 2, 1, false}, Case{10, 3, 4, 2, true}}) {
    auto ds = Range(c.n).Window(c.size, c.shift, c.stride, c.drop);
    EXPECT_EQ(ds.Cardinality(), static_cast<int64_t>(Windows(ds).size()))
        << c.n << " " << c.size << " " << c.shift << " " << c.stride << " " << c.drop;
  }
  EXPECT_EQ(Range(7).Window(2, 2, 1, true).Cardinality(), 3);
  EXPECT_EQ(Range(7).Window(8, 3, 1, true).Cardinality(), 0);
  EXPECT_EQ(Range(7).Window(2).Cardinality(), 4);
  EXPECT_EQ(Range(7).Repeat().Window(2).Cardinality(), kInfiniteCardinality);
}

TEST(WindowTest, InvalidArgumentsAreTheOneError) {
  for (auto ds : {Range(7).Window(0), Range(7).Window(2, 0), Range(7).Window(2, 1, 0),
                  Range(7).Window(INT64_MAX, 1, 3)}) {
    auto got = Collect(ds);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(got[0].status().message(), HasSubstr("Window"));
  }
}

absl::StatusOr<int64_t> FailOnThree(int64_t x) {
  if (x == 3) return absl::DataLossError("three");
  return x;
}

// An error a window takes replaces it; one it strides over, or that a shift drops, is ignored.
TEST(WindowTest, ErrorsTakenReplaceTheWindowOthersAreIgnored) {
  auto taken = Collect(Range(6).Map(FailOnThree).Window(2));
  ASSERT_EQ(taken.size(), 3u);
  EXPECT_TRUE(taken[0].ok());
  EXPECT_THAT(taken[1].status().message(), HasSubstr("three"));
  ASSERT_TRUE(taken[2].ok());
  EXPECT_EQ(Values(*taken[2]), (Ints64{4, 5}));
  // stride 3 over 0..5 from 2: {2, 5}; 3 lies between.
  EXPECT_EQ(Windows(Range(6).Map(FailOnThree).Skip(2).Window(2, 4, 3)), (std::vector<Ints64>{{2, 5}}));
  // shift 4 with size 2 drops 2 and 3.
  EXPECT_EQ(Windows(Range(6).Map(FailOnThree).Window(2, 4)), (std::vector<Ints64>{{0, 1}, {4, 5}}));
}

// Windows of strings are copies that outlive the op; a window dataset iterates again and again.
TEST(WindowTest, WindowsAreReusableDatasets) {
  auto windows = Values(FromVector<std::string>({"a", "b", "c", "d"}).Window(3, 1));
  ASSERT_EQ(windows.size(), 4u);
  EXPECT_EQ(Values(windows[1]), (std::vector<std::string>{"b", "c", "d"}));
  EXPECT_EQ(Values(windows[1]), Values(windows[1]));
  EXPECT_EQ(windows[0].Cardinality(), 3);
  EXPECT_EQ(Values(windows[3]), (std::vector<std::string>{"d"}));
}

// Saved between windows (buffer half full, or a skip pending), restored: the same windows after.
TEST(WindowTest, SaveAndRestoreMidway) {
  for (auto make : {+[] { return Range(23).Window(4, 3, 2); }, +[] { return Range(23).Window(2, 5); },
                    +[] { return Range(23).Map(FailOnThree).Window(3, 1, 1, true); }}) {
    const Dataset<Dataset<int64_t>> ds = make();
    auto flat = [](const std::vector<absl::StatusOr<Dataset<int64_t>>>& windows) {
      std::vector<std::string> out;
      for (const auto& w : windows) {
        std::string s = w.ok() ? "" : std::string(w.status().message());
        if (w.ok()) {
          for (int64_t x : Values(*w)) s += std::to_string(x) + ",";
        }
        out.push_back(s);
      }
      return out;
    };
    const std::vector<std::string> all = flat(Collect(ds));
    for (size_t cut = 0; cut <= all.size(); ++cut) {
      Iterator<Dataset<int64_t>> it = ds.MakeIterator();
      auto prefix = Pull(it, cut);
      absl::StatusOr<std::string> state = it.SaveBlocking();
      ASSERT_TRUE(state.ok()) << state.status();
      absl::StatusOr<Iterator<Dataset<int64_t>>> restored = ds.RestoreIterator(*state);
      ASSERT_TRUE(restored.ok()) << restored.status();
      auto rest = Pull(*restored, 100);
      prefix.insert(prefix.end(), rest.begin(), rest.end());
      EXPECT_EQ(flat(prefix), all) << "cut " << cut;
    }
  }
}

TEST(WindowTest, CompactModeRefusesIt) {
  Options options;
  options.compact_checkpoints = true;
  auto got = Collect(Range(5).Window(2), options);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(got[0].status().message(), HasSubstr("Window"));
}

}  // namespace
}  // namespace sluice::window_test
