// Dataset::element_spec(): tf.data's element_spec of common pipelines, from the graph alone.
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "sluice/io/example.h"
#include "sluice/ops/dataset.h"
#include "sluice/ops/library_functions.h"
#include "tests/ops/test_helpers.h"
#include "tests/test_util.h"

namespace sluice::element_spec_test {
namespace {

ParseSpec ImageSpec() {
  ParseSpec spec;
  spec.fixed.push_back({"image", DType::kFloat32, Shape({28, 28}), std::nullopt});
  spec.fixed.push_back({"label", DType::kInt64, Shape({}), std::nullopt});
  spec.var.push_back({"tags", DType::kString});
  return spec;
}

Tensor Matrix(int64_t rows, int64_t cols) { return Tensor::Zeros(DType::kFloat32, Shape({rows, cols})); }

TEST(ElementSpecTest, NumbersAndStrings) {
  EXPECT_EQ(Range(10).element_spec().DebugString(), "(int64[])");
  EXPECT_EQ(TFRecord({"a.tfrecord"}).element_spec().DebugString(), "(string[])");
  EXPECT_EQ(Range(10).Batch(4).element_spec().DebugString(), "(int64[-1])");
  EXPECT_EQ(Range(10).Batch(4, /*drop_remainder=*/true).element_spec().DebugString(), "(int64[4])");
  EXPECT_EQ(Range(10).Batch(4, true).Unbatch().element_spec().DebugString(), "(int64[])");
  EXPECT_EQ(Range(10).Enumerate().Batch(4, true).element_spec().DebugString(), "(int64[4], int64[4])");
  EXPECT_EQ(Range(10).BatchVectors(4, true).element_spec().DebugString(), "(int64[4])");
}

TEST(ElementSpecTest, PassThroughOpsKeepTheSpec) {
  const std::string want = "(float32[3])";
  Dataset<Tensor> rows = FromTensorSlices(Matrix(5, 3));
  EXPECT_EQ(rows.element_spec().DebugString(), want);
  for (const Dataset<Tensor>& ds :
       {rows.Shuffle(4, 1), rows.Repeat(2), rows.Take(2), rows.Skip(1), rows.Prefetch(2), rows.Cache(),
        rows.Shard(2, 0), rows.Filter([](const Tensor&) { return true; }), rows.IgnoreErrors()}) {
    EXPECT_EQ(ds.element_spec().DebugString(), want) << ds.DebugString();
  }
}

TEST(ElementSpecTest, TensorSourcesKnowTheirValues) {
  EXPECT_EQ(FromTensors(Matrix(2, 3)).element_spec().DebugString(), "(float32[2,3])");
  EXPECT_EQ(FromTensorSlices(std::make_tuple(Matrix(4, 3), Tensor::FromVector<int64_t>({1, 2, 3, 4})))
                .element_spec()
                .DebugString(),
            "(float32[3], int64[])");
  // Values that disagree leave the dimension unknown.
  EXPECT_EQ(FromVector<Tensor>({Matrix(2, 3), Matrix(2, 5)}).element_spec().DebugString(), "(float32[2,-1])");
  EXPECT_EQ(FromVector<Tensor>({Matrix(2, 3), Tensor::Scalar<int64_t>(1)}).element_spec().DebugString(),
            "(?[?])");
}

TEST(ElementSpecTest, ParseExampleNamesItsFeatures) {
  Dataset<ParsedExample> parsed = TFRecord({"a.tfrecord"}).ParseExample(ImageSpec());
  EXPECT_EQ(parsed.element_spec().DebugString(),
            "(image: float32[28,28], label: int64[], tags: ragged string[-1])");
  EXPECT_EQ(parsed.Batch(32, true).element_spec().DebugString(),
            "(image: float32[32,28,28], label: int64[32], tags: ragged string[32,-1])");
  // Batched records parsed at once (the fused form).
  EXPECT_EQ(TFRecord({"a.tfrecord"}).Batch(8).ParseExample(ImageSpec()).element_spec().DebugString(),
            "(image: float32[-1,28,28], label: int64[-1], tags: ragged string[-1,-1])");
}

TEST(ElementSpecTest, ZipEnumerateAndConcatenateCombine) {
  auto zipped = Zip(Range(3), FromTensorSlices(Matrix(3, 2)));
  EXPECT_EQ(zipped.element_spec().DebugString(), "(int64[], float32[2])");
  EXPECT_EQ(FromTensorSlices(Matrix(3, 2)).Enumerate().element_spec().DebugString(), "(int64[], float32[2])");
  EXPECT_EQ(
      FromTensorSlices(Matrix(3, 2)).Concatenate(FromTensorSlices(Matrix(3, 4))).element_spec().DebugString(),
      "(float32[-1])");
}

// A C++ function's result says only its type; a batch of windows is windows.
TEST(ElementSpecTest, FunctionsGiveTheirResultType) {
  auto mapped = Range(3).Map([](int64_t x) { return Tensor::Scalar<float>(static_cast<float>(x)); });
  EXPECT_EQ(mapped.element_spec().DebugString(), "(?[?])");
  EXPECT_EQ(mapped.Batch(2, true).element_spec().DebugString(), "(?[?])");
  auto pairs = Range(3).Map([](int64_t x) { return std::make_pair(x, 2.5 * static_cast<double>(x)); });
  EXPECT_EQ(pairs.element_spec().DebugString(), "(int64[], float64[])");
  EXPECT_EQ(Range(7).Window(3).element_spec().DebugString(), "(dataset)");
  DatasetSpec parsed_by_function = Range(3).Map([](int64_t) { return ParsedExample(); }).element_spec();
  EXPECT_FALSE(parsed_by_function.complete);
  EXPECT_EQ(parsed_by_function.DebugString(), "(...)");
}

TEST(ElementSpecTest, PaddedBatchKnowsRankNotPaddedSizes) {
  auto sequences = Range(5).Map([](int64_t x) {
    return Tensor::FromVector<int64_t>(std::vector<int64_t>(static_cast<size_t>(x + 1), x));
  });
  EXPECT_EQ(FromVector<Tensor>({Tensor::FromVector<int64_t>({1, 2}), Tensor::FromVector<int64_t>({3})})
                .PaddedBatch(2, {}, {}, /*drop_remainder=*/true)
                .element_spec()
                .DebugString(),
            "(int64[2,-1])");
  EXPECT_EQ(sequences.PaddedBatch(2).element_spec().DebugString(), "(?[?])");
}

}  // namespace
}  // namespace sluice::element_spec_test
