#include "tools/sluice/record_display.h"

#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/io/example.h"

namespace sluice::tools {
namespace record_display_test_file {
namespace {

using ::testing::HasSubstr;

TEST(RecordDisplayTest, CountsItemsWithoutDecoding) {
  // 3 features + 2 bytes + 3 floats + 4 int64s.
  const std::string example = ExampleBuilder()
                                  .AddBytes("b", {"x", ""})
                                  .AddFloats("f", {1.f, 2.f, 3.f})
                                  .AddInt64s("i", {1, 300, -1, 0})
                                  .Serialize();
  ExampleItemCount count = CountExampleItems(example);
  EXPECT_EQ(count.items, 12u);
  EXPECT_FALSE(count.malformed);
  EXPECT_FALSE(count.has_feature_lists);

  // 1 context feature + 1 value, 1 list + 2 steps + 3 values.
  const std::string sequence = SequenceExampleBuilder()
                                   .AddContext("len", Feature::Int64s({2}))
                                   .AddFeatureList("tokens", {Feature::Int64s({4, 5}), Feature::Int64s({6})})
                                   .Serialize();
  count = CountExampleItems(sequence);
  EXPECT_EQ(count.items, 8u);
  EXPECT_TRUE(count.has_feature_lists);

  EXPECT_TRUE(CountExampleItems("\x0a\x05\x0a").malformed);  // length past the end
  EXPECT_TRUE(CountExampleItems("foo").malformed);           // wire type 6
  EXPECT_FALSE(CountExampleItems("").malformed);             // the empty Example
}

TEST(RecordDisplayTest, ClassifiesRecords) {
  RecordDisplay shown = DecodeForDisplay(ExampleBuilder().AddInt64s("a", {1}).Serialize(), DisplayBudget{});
  EXPECT_EQ(shown.kind, RecordKind::kExample);
  EXPECT_EQ(RecordHeadline(shown), "tf.train.Example, 1 feature");

  const std::string sequence = SequenceExampleBuilder()
                                   .AddContext("c", Feature::Floats({1.f}))
                                   .AddFeatureList("l", {Feature::Floats({2.f})})
                                   .Serialize();
  shown = DecodeForDisplay(sequence, DisplayBudget{});
  EXPECT_EQ(shown.kind, RecordKind::kSequenceExample);
  EXPECT_EQ(RecordHeadline(shown), "tf.train.SequenceExample, 1 context feature, 1 feature list");

  shown = DecodeForDisplay("foo", DisplayBudget{}, "record 4");
  EXPECT_EQ(shown.kind, RecordKind::kNotExample);
  EXPECT_THAT(RecordHeadline(shown), HasSubstr("not a tf.train.Example (3 bytes): Name: record 4"));
}

TEST(RecordDisplayTest, BudgetStopsDecoding) {
  const std::vector<int64_t> values(1000, 7);
  const std::string record = ExampleBuilder().AddInt64s("v", values).Serialize();
  DisplayBudget budget;
  budget.max_items = 1000;  // 1 feature + 1000 values is one over
  RecordDisplay shown = DecodeForDisplay(record, budget);
  EXPECT_EQ(shown.kind, RecordKind::kTooLarge);
  EXPECT_TRUE(shown.example.features.empty());
  EXPECT_THAT(RecordHeadline(shown), HasSubstr("too large to show"));
  budget.max_items = 1001;
  EXPECT_EQ(DecodeForDisplay(record, budget).kind, RecordKind::kExample);
  budget.max_record_bytes = record.size() - 1;
  EXPECT_EQ(DecodeForDisplay(record, budget).kind, RecordKind::kTooLarge);

  // Over the budget, IsExampleRecord trusts the walk; within it, the decoders.
  budget.max_items = 10;
  EXPECT_TRUE(IsExampleRecord(record, budget));
  EXPECT_FALSE(IsExampleRecord("foo", budget));
  EXPECT_TRUE(IsExampleRecord(record, DisplayBudget{}));
  EXPECT_FALSE(IsExampleRecord("foo", DisplayBudget{}));
}

TEST(RecordDisplayTest, FormatsValuesWithinLimits) {
  ShowLimits limits;
  limits.values = 3;
  limits.bytes_per_value = 4;
  EXPECT_EQ(FormatValues(Feature::Int64s({1, 2}), limits), "[1, 2]");
  EXPECT_EQ(FormatValues(Feature::Int64s({1, 2, 3, 4, 5}), limits), "[1, 2, 3, ... (2 more)]");
  EXPECT_EQ(FormatValues(Feature::Floats({0.5f}), limits), "[0.5]");
  EXPECT_EQ(FormatValues(Feature::Bytes({"ab", "a\nbcdef"}), limits), "[\"ab\", \"a\\nbc\"... (7 bytes)]");
  EXPECT_EQ(FormatValues(Feature{}, limits), "[]");
  limits.values = 0;
  EXPECT_EQ(FormatValues(Feature::Int64s({1, 2}), limits), "[... (2 more)]");
}

TEST(RecordDisplayTest, PrintsFeaturesAndCutsLongLists) {
  ExampleBuilder builder;
  for (char c = 'a'; c <= 'e'; ++c) builder.AddInt64s(std::string(1, c), {1});
  builder.AddBytes("odd name\t", {"v"});
  RecordDisplay shown = DecodeForDisplay(builder.Serialize(), DisplayBudget{});
  ShowLimits limits;
  limits.features = 6;
  std::ostringstream out;
  PrintRecordBody(shown, limits, "  ", out);
  EXPECT_THAT(out.str(), HasSubstr("  a: int64_list, 1 value [1]\n"));
  EXPECT_THAT(out.str(), HasSubstr("  \"odd name\\t\": bytes_list, 1 value [\"v\"]\n"));
  limits.features = 2;
  out.str("");
  PrintRecordBody(shown, limits, "  ", out);
  EXPECT_EQ(out.str(),
            "  a: int64_list, 1 value [1]\n  b: int64_list, 1 value [1]\n  ... (4 more features)\n");

  const std::string sequence =
      SequenceExampleBuilder()
          .AddFeatureList("l", {Feature::Int64s({1}), Feature::Int64s({2}), Feature::Int64s({3})})
          .Serialize();
  limits = ShowLimits::Dump();
  limits.steps = 2;
  out.str("");
  PrintRecordBody(DecodeForDisplay(sequence, DisplayBudget{}), limits, "", out);
  EXPECT_EQ(out.str(),
            "list l: 3 steps, 3 values\n"
            "  [0] int64_list, 1 value [1]\n"
            "  [1] int64_list, 1 value [2]\n"
            "  ... (1 more steps)\n");
}

}  // namespace
}  // namespace record_display_test_file
}  // namespace sluice::tools
