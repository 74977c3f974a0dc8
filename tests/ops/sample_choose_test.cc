#include "sluice/ops/sample_from_datasets.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "tests/ops/test_helpers.h"

namespace sluice {
namespace sample_choose_test_file {
namespace {

using test_ops::Collect;
using test_ops::Values;

Dataset<int64_t> Choices(std::vector<int64_t> v) { return FromVector<int64_t>(std::move(v)); }

TEST(ChooseFromDatasetsTest, FollowsTheChoicesInOrder) {
  // tf.data's documented example: datasets of "foo", "bar", "baz" and choices 0,1,2,0,1,2,...
  std::vector<Dataset<std::string>> datasets = {FromVector<std::string>({"foo", "foo", "foo"}),
                                                FromVector<std::string>({"bar", "bar", "bar"}),
                                                FromVector<std::string>({"baz", "baz", "baz"})};
  auto ds = ChooseFromDatasets(datasets, Range(3).Repeat(3));
  EXPECT_EQ(Values(ds), (std::vector<std::string>{"foo", "bar", "baz", "foo", "bar", "baz", "foo", "bar", "baz"}));
  EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
  EXPECT_EQ(Values(ChooseFromDatasets<int64_t>({Range(0, 3), Range(10, 13)}, Choices({1, 1, 0, 1}))),
            (std::vector<int64_t>{10, 11, 0, 12}));
  std::string debug = ds.DebugString();
  EXPECT_NE(debug.find("ChooseFromDatasets(stop_on_empty_dataset=true)"), std::string::npos) << debug;
}

TEST(ChooseFromDatasetsTest, ExhaustedInputStopsOrIsSkipped) {
  std::vector<Dataset<int64_t>> datasets = {Range(0, 2), Range(10, 15)};
  auto choices = Choices({0, 1, 0, 0, 1, 1, 0, 1});
  // stop_on_empty_dataset (the default): the third pick of input 0 finds it empty and ends everything.
  EXPECT_EQ(Values(ChooseFromDatasets(datasets, choices)), (std::vector<int64_t>{0, 10, 1}));
  // Otherwise the exhausted input's choices are skipped.
  EXPECT_EQ(Values(ChooseFromDatasets(datasets, choices, false)), (std::vector<int64_t>{0, 10, 1, 11, 12, 13}));
  // Ends when every input is exhausted even though choices go on forever.
  auto endless = Range(2).Repeat();
  EXPECT_EQ(Values(ChooseFromDatasets(datasets, endless, false)),
            (std::vector<int64_t>{0, 10, 1, 11, 12, 13, 14}));
  // And when the choices end first.
  EXPECT_EQ(Values(ChooseFromDatasets(datasets, Choices({1}), false)), (std::vector<int64_t>{10}));
  EXPECT_TRUE(Values(ChooseFromDatasets(datasets, Choices({}))).empty());
}

TEST(ChooseFromDatasetsTest, ErrorsAreElements) {
  std::vector<Dataset<int64_t>> datasets = {Range(0, 5), Range(10, 15)};
  auto got = Collect(ChooseFromDatasets(datasets, Choices({0, 2, -1, 1})));
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(*got[0], 0);
  EXPECT_EQ(got[1].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(got[1].status().message().find("Selector index out of range: 2 >= 2"), std::string::npos)
      << got[1].status();
  EXPECT_EQ(got[2].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*got[3], 10);
  // An error in the choices and one in the chosen input are yielded, and the stream goes on.
  auto bad_choices = Range(3).Map([](int64_t x) -> absl::StatusOr<int64_t> {
    if (x == 1) return absl::DataLossError("bad choice");
    return 0;
  });
  auto bad_input = Range(3).Map([](int64_t x) -> absl::StatusOr<int64_t> {
    if (x == 0) return absl::NotFoundError("bad element");
    return x;
  });
  auto mixed = Collect(ChooseFromDatasets<int64_t>({bad_input}, bad_choices));
  ASSERT_EQ(mixed.size(), 3u);
  EXPECT_EQ(mixed[0].status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(mixed[1].status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(*mixed[2], 1);
  auto none = Collect(ChooseFromDatasets<int64_t>({}, Choices({0})));
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ChooseFromDatasetsTest, Cardinality) {
  EXPECT_EQ(ChooseFromDatasets<int64_t>({Range(3), Range(4).Repeat()}, Choices({0})).Cardinality(),
            kInfiniteCardinality);
  EXPECT_EQ(ChooseFromDatasets<int64_t>({Range(3), Range(4)}, Choices({0})).Cardinality(), kUnknownCardinality);
}

TEST(SampleFromDatasetsTest, EveryElementOnceInInputOrderPerDataset) {
  std::vector<Dataset<int64_t>> datasets = {Range(0, 50), Range(100, 150), Range(200, 250)};
  auto ds = SampleFromDatasets(datasets, {0.2, 0.3, 0.5}, 7);
  std::vector<int64_t> got = Values(ds);
  ASSERT_EQ(got.size(), 150u);  // stop_on_empty_dataset=false: every input drained
  std::vector<int64_t> last = {-1, 99, 199};
  for (int64_t x : got) {
    int64_t k = x / 100;
    EXPECT_EQ(x, last[k] + 1);  // each input's elements come out in its own order
    last[k] = x;
  }
  std::vector<int64_t> sorted = got;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::unique(sorted.begin(), sorted.end()), sorted.end());
  EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
}

TEST(SampleFromDatasetsTest, SeedReproducesAndWeightsShapeTheMix) {
  std::vector<Dataset<int64_t>> datasets = {Range(0, 100000).Map([](int64_t) { return int64_t{0}; }),
                                            Range(0, 100000).Map([](int64_t) { return int64_t{1}; })};
  auto ds = SampleFromDatasets(datasets, {3.0, 1.0}, 42);  // unnormalised weights
  std::vector<int64_t> a = Values(ds, 4000);
  std::vector<int64_t> b = Values(ds, 4000);
  EXPECT_EQ(a, b);  // same definition, same seed: same sequence every iteration
  EXPECT_EQ(Values(SampleFromDatasets(datasets, {3.0, 1.0}, 42), 4000), a);
  EXPECT_NE(Values(SampleFromDatasets(datasets, {3.0, 1.0}, 43), 4000), a);
  int64_t ones = 0;
  for (int64_t x : a) ones += x;
  // Expected 1000 of 4000; 8 standard deviations (~27) either side never fail by chance.
  EXPECT_GT(ones, 780);
  EXPECT_LT(ones, 1220);
  std::vector<int64_t> uniform = Values(SampleFromDatasets(datasets, {}, 5), 4000);
  int64_t uniform_ones = 0;
  for (int64_t x : uniform) uniform_ones += x;
  EXPECT_GT(uniform_ones, 1750);
  EXPECT_LT(uniform_ones, 2250);
  std::string debug = ds.DebugString();
  EXPECT_NE(debug.find("SampleFromDatasets(weights=[3, 1], stop_on_empty_dataset=false, seed=42)"),
            std::string::npos)
      << debug;
}

TEST(SampleFromDatasetsTest, StopOnEmptyDataset) {
  // Input 1 is empty: with stop_on_empty_dataset the result ends the first time it is picked.
  std::vector<Dataset<int64_t>> datasets = {Range(0, 1000), Range(0)};
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<int64_t> stopped = Values(SampleFromDatasets(datasets, {0.5, 0.5}, seed, true));
    std::vector<int64_t> skipped = Values(SampleFromDatasets(datasets, {0.5, 0.5}, seed, false));
    EXPECT_LT(stopped.size(), 1000u);
    EXPECT_EQ(skipped.size(), 1000u);
    for (size_t i = 0; i < stopped.size(); ++i) EXPECT_EQ(stopped[i], static_cast<int64_t>(i));
  }
}

TEST(SampleFromDatasetsTest, ZeroWeightsAndBadArguments) {
  std::vector<Dataset<int64_t>> datasets = {Range(0, 5), Range(10, 15)};
  // A zero weight drops its input, as tf.data; one input left is that input itself.
  auto only_second = SampleFromDatasets(datasets, {0.0, 2.0}, 1);
  EXPECT_EQ(Values(only_second), (std::vector<int64_t>{10, 11, 12, 13, 14}));
  EXPECT_EQ(only_second.Cardinality(), 5);
  auto nothing = SampleFromDatasets(datasets, {0.0, 0.0}, 1);
  EXPECT_TRUE(Values(nothing).empty());
  EXPECT_EQ(nothing.Cardinality(), 0);
  EXPECT_EQ(SampleFromDatasets<int64_t>({Range(3), Range(1).Repeat()}, {1, 1}).Cardinality(), kInfiniteCardinality);
  for (const std::vector<double>& weights :
       std::vector<std::vector<double>>{{1.0}, {1.0, 2.0, 3.0}, {1.0, -0.5}, {1.0, std::nan("")}}) {
    auto bad = Collect(SampleFromDatasets(datasets, weights, 1));
    ASSERT_EQ(bad.size(), 1u);
    EXPECT_EQ(bad[0].status().code(), absl::StatusCode::kInvalidArgument) << bad[0].status();
  }
  auto none = Collect(SampleFromDatasets<int64_t>({}, {}, 1));
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SampleFromDatasetsTest, AsyncInputsAndDestroyedMidStream) {
  std::vector<Dataset<int64_t>> datasets = {Range(0, 300).Prefetch(2), Range(1000, 1300).Prefetch(3)};
  std::vector<int64_t> got = Values(SampleFromDatasets(datasets, {1, 1}, 3));
  EXPECT_EQ(got.size(), 600u);
  for (int round = 0; round < 10; ++round) {
    std::vector<Dataset<int64_t>> endless = {Range(0, 1000000).Prefetch(4), Range(0, 1000000).Prefetch(4)};
    auto sample = SampleFromDatasets(endless, {1, 2}, round).Prefetch(2);
    Iterator<int64_t> it = sample.MakeIterator();
    for (int i = 0; i < round; ++i) ASSERT_TRUE(it.NextBlocking().ok());
    auto chosen = ChooseFromDatasets(endless, Range(2).Repeat()).Prefetch(2);
    Iterator<int64_t> it2 = chosen.MakeIterator();
    for (int i = 0; i < round; ++i) ASSERT_TRUE(it2.NextBlocking().ok());
  }
}

// Unseeded, the seed is drawn per iterator (issue #12), not when the dataset is defined: the definition
// carries no seed, each iterator samples its own sequence, and an iterator's epochs repeat it.
TEST(SampleFromDatasetsTest, UnseededDrawsItsSeedPerIterator) {
  std::vector<Dataset<int64_t>> datasets = {Range(0, 500), Range(1000, 1500)};
  auto ds = SampleFromDatasets(datasets);
  for (const Param& p : ds.node()->params()) EXPECT_NE(p.name, "seed");
  std::vector<int64_t> first = Values(ds);
  std::vector<int64_t> second = Values(ds);
  ASSERT_EQ(first.size(), 1000u);
  ASSERT_EQ(second.size(), 1000u);
  // The outputs are equal only if the 1000 fair choices are, with probability below 2^-500.
  EXPECT_NE(first, second);
  std::vector<int64_t> epochs = Values(ds.Repeat(2));
  ASSERT_EQ(epochs.size(), 2000u);
  EXPECT_EQ(std::vector<int64_t>(epochs.begin(), epochs.begin() + 1000),
            std::vector<int64_t>(epochs.begin() + 1000, epochs.end()));
}

// tf.data's rerandomize_each_iteration: every pass (epoch) draws its own sequence, reproducibly.
TEST(SampleFromDatasetsTest, RerandomizeEachIterationDrawsASequencePerEpoch) {
  auto make = [](bool rerandomize) {
    return SampleFromDatasets<int64_t>({Range(0, 500), Range(1000, 1500)}, {}, 7, false, rerandomize);
  };
  auto halves = [](const std::vector<int64_t>& epochs) {
    return std::pair(std::vector<int64_t>(epochs.begin(), epochs.begin() + 1000),
                     std::vector<int64_t>(epochs.begin() + 1000, epochs.end()));
  };
  std::vector<int64_t> repeated = Values(make(false).Repeat(2));
  ASSERT_EQ(repeated.size(), 2000u);
  EXPECT_EQ(halves(repeated).first, halves(repeated).second);

  std::vector<int64_t> rerandomized = Values(make(true).Repeat(2));
  ASSERT_EQ(rerandomized.size(), 2000u);
  auto [first, second] = halves(rerandomized);
  // Equal only if the 1000 fair choices are, with probability below 2^-500.
  EXPECT_NE(first, second);
  std::sort(first.begin(), first.end());
  std::sort(second.begin(), second.end());
  EXPECT_EQ(first, second);  // every element once per epoch
  EXPECT_EQ(Values(make(true).Repeat(2)), rerandomized);  // the seed fixes the sequence of sequences

  bool found = false;
  for (const Param& p : make(true).node()->params()) found = found || p.name == "rerandomize_each_iteration";
  EXPECT_TRUE(found);
  for (const Param& p : make(false).node()->params()) EXPECT_NE(p.name, "rerandomize_each_iteration");
}

}  // namespace
}  // namespace sample_choose_test_file
}  // namespace sluice
