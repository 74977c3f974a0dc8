// Features of a ParsedExample by name (tf.data's dict of features): through ParseExample, Batch,
// Unbatch, the element codec and a checkpoint that holds parsed examples.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/io/example.h"
#include "sluice/ops/dataset.h"
#include "sluice/ops/element_codec.h"
#include "sluice/ops/library_functions.h"
#include "tests/ops/checkpoint_helpers.h"
#include "tests/ops/test_helpers.h"

namespace sluice::parsed_example_names_test {
namespace {

using checkpoint_testing::Pull;
using test_ops::Ints;
using test_ops::Values;

ParseSpec Spec() {
  ParseSpec spec;
  spec.fixed.push_back({"label", DType::kInt64, Shape({}), std::nullopt});
  spec.fixed.push_back({"pixels", DType::kFloat32, Shape({2}), std::nullopt});
  spec.var.push_back({"tags", DType::kString});
  return spec;
}

std::vector<std::string> Records(int64_t n) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < n; ++i) {
    ExampleBuilder b;
    b.AddInt64s("label", {i});
    const float pixels[] = {0.5f * static_cast<float>(i), 1.0f};
    b.AddFloats("pixels", std::span<const float>(pixels));
    std::vector<std::string> tags(static_cast<size_t>(i % 3), "t");
    b.AddBytes("tags", tags);
    out.push_back(b.Serialize());
  }
  return out;
}

TEST(ParsedExampleNamesTest, ParsedRecordsAnswerByName) {
  std::vector<ParsedExample> parsed = Values(FromVector(Records(3)).ParseExample(Spec()));
  ASSERT_EQ(parsed.size(), 3u);
  const ParsedExample& e = parsed[2];
  EXPECT_EQ(Ints(e["label"]), std::vector<int64_t>{2});
  EXPECT_EQ(e["pixels"].shape(), Shape({2}));
  EXPECT_FLOAT_EQ(e["pixels"].data<float>()[0], 1.0f);
  ASSERT_NE(e.FindVar("tags"), nullptr);
  EXPECT_EQ(e.var_len("tags").values.num_elements(), 2);
  // A var-len feature is not a fixed one, and a name outside the spec is neither.
  EXPECT_EQ(e.FindFixed("tags"), nullptr);
  EXPECT_EQ(e.FindFixed("image"), nullptr);
  EXPECT_EQ(e.FindVar("label"), nullptr);
  ASSERT_NE(e.names, nullptr);
  EXPECT_EQ(e.names->fixed, (std::vector<std::string>{"label", "pixels"}));
}

TEST(ParsedExampleNamesTest, BatchesAndRowsKeepTheNames) {
  Dataset<ParsedExample> batches = FromVector(Records(5)).ParseExample(Spec()).Batch(2);
  std::vector<ParsedExample> got = Values(batches);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(Ints(got[1]["label"]), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(got[0]["pixels"].shape(), Shape({2, 2}));
  EXPECT_EQ(got[0].var_len("tags").row_lengths.num_elements(), 2);
  // The fused form (ParseExample after Batch) names them too.
  std::vector<ParsedExample> fused = Values(FromVector(Records(4)).Batch(4).ParseExample(Spec()));
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(Ints(fused[0]["label"]), (std::vector<int64_t>{0, 1, 2, 3}));
  std::vector<ParsedExample> rows = Values(batches.Unbatch());
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(Ints(rows[4]["label"]), std::vector<int64_t>{4});
}

TEST(ParsedExampleNamesTest, CodecCarriesTheNames) {
  std::vector<ParsedExample> parsed = Values(FromVector(Records(2)).ParseExample(Spec()));
  std::string bytes;
  for (const ParsedExample& e : parsed) EncodeElement(e, &bytes);
  ParsedExample by_hand;  // no names: still encodes, decodes without them
  by_hand.fixed.push_back(Tensor::Scalar<int64_t>(9));
  EncodeElement(by_hand, &bytes);
  std::string_view in = bytes;
  std::vector<ParsedExample> decoded(3);
  for (ParsedExample& e : decoded) ASSERT_TRUE(ElementCodec<ParsedExample>::Decode(&in, &e).ok());
  EXPECT_TRUE(in.empty());
  EXPECT_EQ(Ints(decoded[1]["label"]), std::vector<int64_t>{1});
  EXPECT_EQ(decoded[1].FindVar("tags")->row_lengths.num_elements(), 1);
  EXPECT_EQ(decoded[2].names, nullptr);
  EXPECT_EQ(decoded[2].FindFixed("label"), nullptr);
  // Consecutive elements of one spec share one decoded name table.
  EXPECT_EQ(decoded[0].names, decoded[1].names);
}

// A shuffle buffer of parsed examples is saved as elements; the restored ones answer by name.
TEST(ParsedExampleNamesTest, RestoredBufferedExamplesKeepTheirNames) {
  Dataset<ParsedExample> ds = FromVector(Records(20)).ParseExample(Spec()).Shuffle(8, /*seed=*/3);
  Iterator<ParsedExample> it = ds.MakeIterator();
  ASSERT_EQ(Pull(it, 5).size(), 5u);
  absl::StatusOr<std::string> state = it.SaveBlocking();
  ASSERT_TRUE(state.ok()) << state.status();
  absl::StatusOr<Iterator<ParsedExample>> restored = ds.RestoreIterator(*state);
  ASSERT_TRUE(restored.ok()) << restored.status();
  auto rest = Pull(*restored, 100);
  ASSERT_EQ(rest.size(), 15u);
  for (const auto& e : rest) {
    ASSERT_TRUE(e.ok()) << e.status();
    ASSERT_NE(e->FindFixed("label"), nullptr);
  }
}

TEST(ParsedExampleNamesTest, StackingExamplesOfDifferentSpecsFails) {
  ParseSpec other = Spec();
  other.fixed[0].key = "id";
  std::vector<ParsedExample> a = Values(FromVector(Records(1)).ParseExample(Spec()));
  std::vector<ParsedExample> b = Values(FromVector(Records(1)).ParseExample(other).IgnoreErrors());
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 0u);  // the records have no "id": every parse fails
  ParsedExample renamed = a[0];
  renamed.names = std::make_shared<const FeatureNames>(FeatureNames{{"id", "pixels"}, {"tags"}});
  auto stacked = test_ops::Collect(FromVector(std::vector<ParsedExample>{a[0], renamed}).Batch(2));
  ASSERT_EQ(stacked.size(), 1u);
  ASSERT_FALSE(stacked[0].ok());
  EXPECT_NE(stacked[0].status().message().find("different"), std::string::npos) << stacked[0].status();
}

// The library's example_to_pair takes feature names as well as indices.
TEST(ParsedExampleNamesTest, ExampleToPairByName) {
  auto pairs = Values(
      FromVector(Records(3))
          .ParseExample(Spec())
          .Map(kExampleToPair.With({{"first", std::string("pixels")}, {"second", std::string("label")}})));
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[1].first.shape(), Shape({2}));
  EXPECT_EQ(Ints(pairs[1].second), std::vector<int64_t>{1});
  auto missing = test_ops::Collect(FromVector(Records(1))
                                       .ParseExample(Spec())
                                       .Map(kExampleToPair.With({{"first", std::string("image")}})));
  ASSERT_EQ(missing.size(), 1u);
  ASSERT_FALSE(missing[0].ok());
  EXPECT_NE(missing[0].status().message().find("no fixed feature 'image'; the Example's are label, pixels"),
            std::string::npos)
      << missing[0].status();
}

}  // namespace
}  // namespace sluice::parsed_example_names_test
