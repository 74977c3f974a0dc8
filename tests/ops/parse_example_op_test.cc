#include "sluice/ops/parse_example.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "tests/ops/test_helpers.h"

namespace sluice {
namespace parse_example_op_test_file {
namespace {

using test_ops::Collect;
using test_ops::Ints;
using test_ops::Values;

ParseSpec Spec() {
  ParseSpec spec;
  spec.fixed.push_back({"label", DType::kInt64, Shape({}), std::nullopt});
  spec.fixed.push_back({"name", DType::kString, Shape({}), Tensor::Scalar<std::string>("none")});
  spec.var.push_back({"scores", DType::kFloat32});
  return spec;
}

std::string Record(int64_t i) {
  ExampleBuilder b;
  b.AddInt64s("label", {i});
  if (i % 2 == 0) b.AddBytes("name", {"even"});
  std::vector<float> scores(static_cast<size_t>(i % 3), 0.5f * static_cast<float>(i));
  b.AddFloats("scores", std::span<const float>(scores));
  return b.Serialize();
}

std::vector<std::string> Records(int64_t n) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(Record(i));
  return out;
}

TEST(ParseExampleOpTest, OneRecordPerElementInOrder) {
  ParseSpec spec = Spec();
  auto ds = FromVector(Records(4)).ParseExample(spec);
  EXPECT_EQ(ds.Cardinality(), 4);
  auto got = Values(ds);
  ASSERT_EQ(got.size(), 4u);
  for (int64_t i = 0; i < 4; ++i) {
    const ParsedExample& p = got[static_cast<size_t>(i)];
    EXPECT_EQ(*FeatureByKey(p, spec, "label"), Tensor::Scalar<int64_t>(i));
    EXPECT_EQ(*FeatureByKey(p, spec, "name"), Tensor::Scalar<std::string>(i % 2 == 0 ? "even" : "none"));
    VarLenValues scores = *VarFeatureByKey(p, spec, "scores");
    EXPECT_EQ(scores.values.num_elements(), i % 3);
    EXPECT_EQ(Ints(scores.row_lengths), (std::vector<int64_t>{i % 3}));
  }
}

TEST(ParseExampleOpTest, BatchedRecordsParseVectorisedAndMatchBatchOfParsed) {
  ParseSpec spec = Spec();
  auto vectorised = Values(FromVector(Records(7)).Batch(3).ParseExample(spec));
  auto per_record = Values(FromVector(Records(7)).ParseExample(spec).Batch(3));
  ASSERT_EQ(vectorised.size(), 3u);
  ASSERT_EQ(per_record.size(), 3u);
  for (size_t b = 0; b < 3; ++b) {
    EXPECT_EQ(vectorised[b].fixed[0], per_record[b].fixed[0]) << b;
    EXPECT_EQ(vectorised[b].fixed[1], per_record[b].fixed[1]) << b;
    EXPECT_EQ(vectorised[b].var[0].values, per_record[b].var[0].values) << b;
    EXPECT_EQ(vectorised[b].var[0].row_lengths, per_record[b].var[0].row_lengths) << b;
  }
  EXPECT_EQ(Ints(*FeatureByKey(vectorised[1], spec, "label")), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(Ints(VarFeatureByKey(vectorised[2], spec, "scores")->row_lengths), (std::vector<int64_t>{0}));
  EXPECT_EQ(FromVector(Records(7)).Batch(3).ParseExample(spec).Cardinality(), 3);
}

TEST(ParseExampleOpTest, BadRecordIsAnErrorElementNamingOpIndexAndFeature) {
  std::vector<std::string> records = Records(3);
  records[1] = ExampleBuilder().AddBytes("name", {"x"}).Serialize();  // no label
  records.push_back("\xff\xff garbage");
  auto got = Collect(FromVector(records).ParseExample(Spec()));
  ASSERT_EQ(got.size(), 4u);
  EXPECT_TRUE(got[0].ok());
  ASSERT_FALSE(got[1].ok());
  EXPECT_EQ(got[1].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(got[1].status().message().find("ParseExample (element 1)"), std::string::npos) << got[1].status();
  EXPECT_NE(got[1].status().message().find("label"), std::string::npos) << got[1].status();
  EXPECT_TRUE(got[2].ok());
  EXPECT_EQ(got[3].status().code(), absl::StatusCode::kDataLoss);
  auto batched = Collect(FromVector(records).Batch(2).ParseExample(Spec()));
  ASSERT_EQ(batched.size(), 2u);
  EXPECT_NE(batched[0].status().message().find("ParseExample (element 0)"), std::string::npos);
  EXPECT_NE(batched[0].status().message().find("record 1"), std::string::npos) << batched[0].status();
}

TEST(ParseExampleOpTest, WrongTypeBadSpecAndInputErrors) {
  ParseSpec wrong;
  wrong.fixed.push_back({"label", DType::kFloat32, Shape({}), std::nullopt});
  auto typed = Collect(FromVector(Records(1)).ParseExample(wrong));
  ASSERT_EQ(typed.size(), 1u);
  EXPECT_EQ(typed[0].status().code(), absl::StatusCode::kInvalidArgument);
  ParseSpec bad;
  bad.fixed.push_back({"x", DType::kInt32, Shape({}), std::nullopt});
  auto spec_error = Collect(FromVector(Records(3)).ParseExample(bad));
  ASSERT_EQ(spec_error.size(), 1u);
  EXPECT_EQ(spec_error[0].status().code(), absl::StatusCode::kInvalidArgument);
  auto failing = Range(3).Map([](int64_t i) -> absl::StatusOr<std::string> {
    if (i == 0) return absl::DataLossError("corrupt record");
    return Record(i);
  });
  auto got = Collect(failing.ParseExample(Spec()));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(got[2].ok());
}

TEST(ParseExampleOpTest, FeatureByKeyErrors) {
  ParseSpec spec = Spec();
  auto got = Values(FromVector(Records(1)).ParseExample(spec));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(FeatureByKey(got[0], spec, "scores").status().code(), absl::StatusCode::kNotFound);  // var, not fixed
  absl::Status missing = FeatureByKey(got[0], spec, "nope").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("label (fixed)"), std::string::npos) << missing;
  EXPECT_EQ(VarFeatureByKey(got[0], spec, "label").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(FeatureByKey(ParsedExample{}, spec, "label").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ParseExampleOpTest, DebugStringAndDestructionMidStream) {
  std::string s = FromVector(Records(2)).ParseExample(Spec()).DebugString();
  EXPECT_NE(s.find("ParseExample(spec=fixed=[label:int64[], name:string[]="), std::string::npos) << s;
  std::vector<std::string> many = Records(200);
  for (int round = 0; round < 10; ++round) {
    Iterator<ParsedExample> it = FromVector(many).Prefetch(3).ParseExample(Spec()).Batch(4).Prefetch(2).MakeIterator();
    for (int i = 0; i < round % 3; ++i) ASSERT_TRUE(it.NextBlocking().ok());
  }
}

}  // namespace
}  // namespace parse_example_op_test_file
}  // namespace sluice
