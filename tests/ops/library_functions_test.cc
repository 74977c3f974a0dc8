// The library's registered functions (sluice/ops/library_functions.h): what they compute, their argument
// errors, and that pipelines holding them serialize and rebuild with no registration of the program's own.
#include "sluice/ops/library_functions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "io/tfrecord_writer.h"
#include "sluice/dataset.h"
#include "sluice/ops/graph.h"
#include "tests/ops/test_helpers.h"
#include "tests/test_util.h"

namespace sluice {
namespace library_functions_test_file {
namespace {

using test_ops::Collect;
using test_ops::Values;

std::string Bytes(std::initializer_list<uint8_t> values) { return std::string(values.begin(), values.end()); }

std::string WriteShard(const std::string& name, const std::vector<std::string>& records,
                       Compression compression) {
  absl::StatusOr<io::TFRecordBufferWriter> writer = io::TFRecordBufferWriter::Create(compression);
  EXPECT_TRUE(writer.ok());
  for (const std::string& r : records) EXPECT_TRUE(writer->Write(r).ok());
  EXPECT_TRUE(writer->Finish().ok());
  const std::string path = testing_util::TempPath(name);
  testing_util::WriteFile(path, writer->output());
  return path;
}

TEST(LibraryFunctionsTest, AreListedAsRegistered) {
  std::vector<std::string> names = RegisteredFunctionNames();
  for (const char* name : {"sluice.read_tfrecord", "sluice.decode_raw", "sluice.example_to_pair"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
}

TEST(LibraryFunctionsTest, DecodeRawUint8IsOneValuePerByte) {
  auto out = Values(FromVector<std::string>({Bytes({1, 2, 255}), ""})
                        .Map(kDecodeRaw.With({{"dtype", std::string("uint8")}})));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], Tensor::FromVector<uint8_t>({1, 2, 255}));
  EXPECT_EQ(out[1].shape(), Shape({0}));
}

TEST(LibraryFunctionsTest, DecodeRawReadsLittleAndBigEndian) {
  const std::string little = Bytes({1, 0, 0, 0, 0, 1, 0, 0});
  const std::string big = Bytes({0, 0, 0, 1, 0, 0, 1, 0});
  auto le = Values(FromVector<std::string>({little}).Map(kDecodeRaw.With({{"dtype", std::string("int32")}})));
  auto be = Values(FromVector<std::string>({big}).Map(
      kDecodeRaw.With({{"dtype", std::string("int32")}, {"little_endian", false}})));
  ASSERT_EQ(le.size(), 1u);
  ASSERT_EQ(be.size(), 1u);
  EXPECT_EQ(le[0], Tensor::FromVector<int32_t>({1, 256}));
  EXPECT_EQ(be[0], Tensor::FromVector<int32_t>({1, 256}));
}

TEST(LibraryFunctionsTest, DecodeRawShapesWithOneInferredDimension) {
  std::string floats(6 * sizeof(float), '\0');
  for (int i = 0; i < 6; ++i) {
    const float v = static_cast<float>(i) + 0.5f;
    std::memcpy(floats.data() + i * sizeof(float), &v, sizeof v);
  }
  auto out = Values(FromVector<std::string>({floats}).Map(
      kDecodeRaw.With({{"dtype", std::string("float32")}, {"shape", std::vector<int64_t>{-1, 3}}})));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), Shape({2, 3}));
  EXPECT_EQ(out[0].data<float>()[5], 5.5f);
}

TEST(LibraryFunctionsTest, DecodeRawNamesBadByteCounts) {
  auto ragged = Collect(
      FromVector<std::string>({Bytes({1, 2, 3})}).Map(kDecodeRaw.With({{"dtype", std::string("int32")}})));
  ASSERT_EQ(ragged.size(), 1u);
  EXPECT_EQ(ragged[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ragged[0].status().message().find("3 bytes are not a multiple of int32's 4 bytes"),
            std::string::npos)
      << ragged[0].status();
  auto misfit = Collect(
      FromVector<std::string>({Bytes({1, 2, 3})})
          .Map(kDecodeRaw.With({{"dtype", std::string("uint8")}, {"shape", std::vector<int64_t>{2, 2}}})));
  ASSERT_EQ(misfit.size(), 1u);
  EXPECT_EQ(misfit[0].status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LibraryFunctionsTest, BadArgumentsAreTheDatasetsOneError) {
  auto unknown =
      Collect(FromVector<std::string>({"x"}).Map(kDecodeRaw.With({{"dtype", std::string("complex64")}})));
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(unknown[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown[0].status().message().find("unknown dtype 'complex64'"), std::string::npos)
      << unknown[0].status();

  auto missing = Collect(FromVector<std::string>({"x"}).Map(kDecodeRaw.With()));
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].status().code(), absl::StatusCode::kNotFound);

  auto bad_mode = Collect(
      FromVector<std::string>({"f"}).Interleave(kReadTFRecord.With({{"read_mode", std::string("fast")}}), 1));
  ASSERT_EQ(bad_mode.size(), 1u);
  EXPECT_EQ(bad_mode[0].status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LibraryFunctionsTest, ReadTFRecordPicksCompressionByExtension) {
  const std::string plain = WriteShard("lib_fn_a.tfrecord", {"a0", "a1"}, Compression::kNone);
  const std::string gzip = WriteShard("lib_fn_b.tfrecord.gz", {"b0", "b1", "b2"}, Compression::kGzip);
  auto records =
      Values(FromVector<std::string>({plain, gzip}).Interleave(kReadTFRecord.With(), /*cycle_length=*/1));
  EXPECT_EQ(records, (std::vector<std::string>{"a0", "a1", "b0", "b1", "b2"}));

  // An explicit compression wins over the name: the .gz file read as plain bytes is a framing error.
  auto forced = Collect(FromVector<std::string>({gzip}).Interleave(
      kReadTFRecord.With({{"compression", std::string("NONE")}}), 1));
  ASSERT_FALSE(forced.empty());
  EXPECT_FALSE(forced[0].ok());
}

ParseSpec ImageLabelSpec() {
  ParseSpec spec;
  spec.fixed.push_back({"image", DType::kString, Shape(), std::nullopt});
  spec.fixed.push_back({"label", DType::kInt64, Shape(), std::nullopt});
  return spec;
}

std::vector<std::string> ImageExamples() {
  std::vector<std::string> out;
  for (int64_t i = 0; i < 3; ++i) {
    const std::string image = Bytes({0, static_cast<uint8_t>(100 + i), 255});
    out.push_back(ExampleBuilder().AddBytes("image", {image}).AddInt64s("label", {i}).Serialize());
  }
  return out;
}

Dataset<std::pair<Tensor, Tensor>> ImagePipeline(const std::string& shard) {
  return FromVector<std::string>({shard})
      .Interleave(kReadTFRecord.With(), 1)
      .ParseExample(ImageLabelSpec())
      .Map(kExampleToPair.With({{"decode_raw", std::string("uint8")},
                                {"cast", std::string("float")},
                                {"scale", 2.0},
                                {"offset", -1.0}}));
}

TEST(LibraryFunctionsTest, ExampleToPairDecodesCastsAndScales) {
  const std::string shard = WriteShard("lib_fn_images.tfrecord", ImageExamples(), Compression::kNone);
  auto pairs = Values(ImagePipeline(shard));
  ASSERT_EQ(pairs.size(), 3u);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(pairs[i].first, Tensor::FromVector<float>({-1.0f, 2.0f * (100 + i) - 1.0f, 509.0f}));
    EXPECT_EQ(pairs[i].second, Tensor::Scalar<int64_t>(i));
  }
}

TEST(LibraryFunctionsTest, ExampleToPairRefusesWhatItCannotDo) {
  const std::string shard = WriteShard("lib_fn_images2.tfrecord", ImageExamples(), Compression::kNone);
  auto parsed =
      FromVector<std::string>({shard}).Interleave(kReadTFRecord.With(), 1).ParseExample(ImageLabelSpec());
  auto out_of_range = Collect(parsed.Map(kExampleToPair.With({{"second", int64_t{2}}})));
  ASSERT_EQ(out_of_range.size(), 3u);
  EXPECT_EQ(out_of_range[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out_of_range[0].status().message().find("has 2 fixed features"), std::string::npos);

  auto strings_scaled = Collect(parsed.Map(kExampleToPair.With({{"scale", 0.5}})));
  ASSERT_EQ(strings_scaled.size(), 3u);
  EXPECT_NE(strings_scaled[0].status().message().find("decode_raw them first"), std::string::npos);

  auto integer_affine =
      Collect(parsed.Map(kExampleToPair.With({{"decode_raw", std::string("uint8")}, {"scale", 0.5}})));
  ASSERT_EQ(integer_affine.size(), 1u);  // refused by the factory: the dataset's one error
  EXPECT_NE(integer_affine[0].status().message().find("need a floating dtype, not uint8"), std::string::npos)
      << integer_affine[0].status();
}

TEST(LibraryFunctionsTest, PipelineRebuildsFromItsGraphWithTheSameElements) {
  const std::string shard = WriteShard("lib_fn_images3.tfrecord", ImageExamples(), Compression::kNone);
  Dataset<std::pair<Tensor, Tensor>> ds = ImagePipeline(shard).Batch(2);
  absl::StatusOr<std::string> bytes = Serialize(ds);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<Dataset<std::pair<Tensor, Tensor>>> again = BuildTyped<std::pair<Tensor, Tensor>>(*bytes);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->DebugString(), ds.DebugString());
  auto expected = Values(ds);
  auto rebuilt = Values(*again);
  ASSERT_EQ(rebuilt.size(), 2u);
  EXPECT_EQ(rebuilt, expected);
}

}  // namespace
}  // namespace library_functions_test_file
}  // namespace sluice
