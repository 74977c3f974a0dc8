// The keyword-style options structs (sluice/ops/op_options.h) build the same op as the positional forms:
// each field lands in the param of its name, and unset fields keep the positional defaults.
#include "sluice/ops/op_options.h"

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "tests/ops/test_helpers.h"

namespace sluice::op_options_test {
namespace {

using ::testing::ElementsAre;

// The scalar params of a dataset's root op, as text, with its op name under "op".
template <class D>
std::map<std::string, std::string> RootParams(const D& ds) {
  std::map<std::string, std::string> out{{"op", std::string(ds.node()->op_name())}};
  for (const Param& p : ds.node()->params()) {
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, bool> || std::is_same_v<V, int64_t>)
            out[p.name] = std::to_string(v);
          if constexpr (std::is_same_v<V, std::string>) out[p.name] = v;
        },
        p.value);
  }
  return out;
}

int64_t Twice(int64_t x) { return 2 * x; }

TEST(OpOptionsTest, BatchFieldsLandInTheirParams) {
  auto r = Range(10);
  EXPECT_EQ(RootParams(r.Batch(4, {.drop_remainder = true, .num_parallel_calls = 3})),
            RootParams(r.Batch(4, true, 3)));
  auto only_calls = RootParams(r.Batch(4, {.num_parallel_calls = 4}));
  EXPECT_EQ(only_calls["num_parallel_calls"], "4");
  EXPECT_EQ(only_calls["drop_remainder"], "0");
  EXPECT_EQ(RootParams(r.Batch(4, {.deterministic = false}))["deterministic"], "0");
  EXPECT_EQ(test_ops::Values(r.Batch(4, {.drop_remainder = true})).size(), 2u);
}

TEST(OpOptionsTest, MapAndInterleaveFields) {
  auto r = Range(6);
  auto parallel = r.Map(Twice, {.num_parallel_calls = 2, .deterministic = true, .name = "twice"});
  EXPECT_EQ(RootParams(parallel)["op"], "ParallelMap");
  EXPECT_EQ(RootParams(parallel)["num_parallel_calls"], "2");
  EXPECT_THAT(test_ops::Values(parallel), ElementsAre(0, 2, 4, 6, 8, 10));
  EXPECT_EQ(RootParams(r.Map(Twice, {.deterministic = false}))["op"], "Map");
  EXPECT_THAT(parallel.DebugString(), ::testing::HasSubstr("twice"));
  // A name alone still reads as a name.
  EXPECT_EQ(RootParams(r.Map(Twice, "twice"))["op"], "Map");

  auto nested = Range(1, 4).Interleave([](int64_t x) { return Range(x); },
                                       {.cycle_length = 2, .block_length = 1, .num_parallel_calls = 2});
  EXPECT_EQ(RootParams(nested)["op"], "ParallelInterleave");
  EXPECT_EQ(RootParams(nested)["cycle_length"], "2");
  auto sequential = Range(1, 4).Interleave([](int64_t x) { return Range(x); }, {.cycle_length = 1});
  EXPECT_EQ(RootParams(sequential)["op"], "Interleave");
  EXPECT_THAT(test_ops::Values(sequential), ElementsAre(0, 0, 1, 0, 1, 2));
}

TEST(OpOptionsTest, ShuffleWindowAndListFilesFields) {
  auto r = Range(10);
  auto no_reshuffle = RootParams(r.Shuffle(10, {.reshuffle_each_iteration = false}));
  EXPECT_EQ(no_reshuffle["reshuffle_each_iteration"], "0");
  EXPECT_EQ(no_reshuffle.count("seed"), 0u);  // unset: drawn, not 0
  EXPECT_EQ(test_ops::Values(r.Shuffle(10, {.seed = 3})), test_ops::Values(r.Shuffle(10, 3)));
  EXPECT_EQ(RootParams(r.Window(3, {.shift = 2})), RootParams(r.Window(3, 2)));
  EXPECT_EQ(RootParams(r.Window(3, {.drop_remainder = true})), RootParams(r.Window(3, 3, 1, true)));
  EXPECT_EQ(RootParams(ListFiles({"/nonexistent/*"}, {.shuffle = false})),
            RootParams(ListFiles({"/nonexistent/*"}, false)));
}

TEST(OpOptionsTest, SamplePaddedBatchAndBucketFields) {
  auto a = Range(0, 5);
  auto b = Range(100, 102);
  auto sampled = SampleFromDatasets<int64_t>({a, b}, {0.5, 0.5}, {.seed = 7, .stop_on_empty_dataset = true});
  EXPECT_EQ(test_ops::Values(sampled), test_ops::Values(SampleFromDatasets<int64_t>(
                                           {a, b}, {0.5, 0.5}, 7, /*stop_on_empty_dataset=*/true)));

  auto tensors =
      Range(1, 6).Map([](int64_t n) { return Tensor::FromVector<int64_t>(std::vector<int64_t>(n, n)); });
  EXPECT_EQ(test_ops::Values(tensors.PaddedBatch(2, PaddedBatchOptions{.drop_remainder = true})).size(), 2u);
  auto length = [](const Tensor& t) { return t.shape().dim(0); };
  auto bucketed = tensors.BucketBySequenceLength(length, {3}, {2, 2},
                                                 BucketBySequenceLengthOptions{.drop_remainder = true});
  EXPECT_EQ(test_ops::Values(bucketed).size(),
            test_ops::Values(tensors.BucketBySequenceLength(length, {3}, {2, 2}, {}, {}, false, false, true))
                .size());
}

}  // namespace
}  // namespace sluice::op_options_test
