#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/proto_wire.h"
#include "sluice/io/example.h"
#include "sluice/io/tensor.h"

namespace sluice {
namespace example_parser_test_file {
namespace {

using ::testing::HasSubstr;

// ---- hand assembly of wire bytes ------------------------------------------------------------------------

std::string Field(uint32_t number, std::string_view payload) {
  std::string out;
  wire::AppendBytesField(&out, number, payload);
  return out;
}

std::string VarintField(uint32_t number, uint64_t value) {
  std::string out;
  wire::AppendTag(&out, number, wire::kVarint);
  wire::AppendVarint(&out, value);
  return out;
}

std::string Fixed32Field(uint32_t number, uint32_t value) {
  std::string out;
  wire::AppendTag(&out, number, wire::kFixed32);
  wire::AppendFixed32(&out, value);
  return out;
}

std::string Fixed64Field(uint32_t number, uint64_t value) {
  std::string out;
  wire::AppendTag(&out, number, wire::kFixed64);
  wire::AppendFixed64(&out, value);
  return out;
}

// Unknown fields of every skippable wire type, numbered so they never clash with Example's fields.
std::string AllUnknowns() {
  return VarintField(99, 300) + Fixed64Field(100, 0x0123456789abcdefULL) + Field(101, "junk") +
         Fixed32Field(102, 7);
}

std::string Entry(std::string_view key, std::string_view feature) { return Field(1, key) + Field(2, feature); }
std::string ExampleOf(std::string_view entries) { return Field(1, entries); }
std::string EntryField(std::string_view key, std::string_view feature) { return Field(1, Entry(key, feature)); }

ParseSpec FloatSpec(std::string key, int64_t n) {
  ParseSpec spec;
  spec.fixed.push_back({std::move(key), DType::kFloat32, Shape({n}), std::nullopt});
  return spec;
}

// Copies into an exactly-sized heap block so ASan flags any read past the end.
class ExactBuffer {
 public:
  explicit ExactBuffer(std::string_view bytes) : size_(bytes.size()), data_(new char[bytes.size() + 0]) {
    if (size_ > 0) std::memcpy(data_.get(), bytes.data(), size_);
  }
  std::string_view view() const { return std::string_view(data_.get(), size_); }

 private:
  size_t size_;
  std::unique_ptr<char[]> data_;
};

// ---- round trips ----------------------------------------------------------------------------------------

TEST(ExampleParserTest, BuilderRoundTrip) {
  const std::string record = ExampleBuilder()
                                 .AddFloats("f", {1.5f, -2.0f, 3.25f, 0.0f})
                                 .AddInt64s("i", {1, -1, INT64_MAX, INT64_MIN})
                                 .AddBytes("b", {"hello", std::string_view("\0x", 2), ""})
                                 .AddInt64s("v", {7, 8, 9})
                                 .Serialize();
  ParseSpec spec;
  spec.fixed.push_back({"f", DType::kFloat32, Shape({2, 2}), std::nullopt});
  spec.fixed.push_back({"i", DType::kInt64, Shape({4}), std::nullopt});
  spec.fixed.push_back({"b", DType::kString, Shape({3}), std::nullopt});
  spec.var.push_back({"v", DType::kInt64});
  spec.var.push_back({"absent", DType::kFloat32});
  absl::StatusOr<ParsedExample> parsed = ParseExample(record, spec, "rt");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->fixed.size(), 3u);
  EXPECT_EQ(parsed->fixed[0], *Tensor::FromVector<float>({1.5f, -2.0f, 3.25f, 0.0f}).Reshape(Shape({2, 2})));
  EXPECT_EQ(parsed->fixed[1], Tensor::FromVector<int64_t>({1, -1, INT64_MAX, INT64_MIN}));
  EXPECT_EQ(parsed->fixed[2], Tensor::FromVector<std::string>({"hello", std::string("\0x", 2), ""}));
  ASSERT_EQ(parsed->var.size(), 2u);
  EXPECT_EQ(parsed->var[0].values, Tensor::FromVector<int64_t>({7, 8, 9}));
  EXPECT_EQ(parsed->var[0].row_lengths, Tensor::FromVector<int64_t>({3}));
  EXPECT_EQ(parsed->var[1].values.num_elements(), 0);
  EXPECT_EQ(parsed->var[1].values.dtype(), DType::kFloat32);
  EXPECT_EQ(parsed->var[1].row_lengths, Tensor::FromVector<int64_t>({0}));
  EXPECT_EQ(spec.FixedIndex("b"), 2);
  EXPECT_EQ(spec.VarIndex("absent"), 1);
  EXPECT_EQ(spec.FixedIndex("nope"), -1);

  absl::StatusOr<DecodedExample> decoded = DecodeExample(record);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->features.size(), 4u);
  EXPECT_EQ(decoded->features.begin()->first, "b");  // ordered by key
  EXPECT_EQ(decoded->features.at("f"), Feature::Floats({1.5f, -2.0f, 3.25f, 0.0f}));
  EXPECT_EQ(decoded->features.at("i").kind, FeatureKind::kInt64);
  EXPECT_EQ(decoded->features.at("b").size(), 3u);
}

TEST(ExampleParserTest, ScalarShapeAndScalarDefault) {
  const std::string record = ExampleBuilder().AddInt64s("label", {4}).Serialize();
  ParseSpec spec;
  spec.fixed.push_back({"label", DType::kInt64, Shape({}), std::nullopt});
  spec.fixed.push_back({"weight", DType::kFloat32, Shape({}), Tensor::Scalar<float>(0.5f)});
  spec.fixed.push_back({"names", DType::kString, Shape({2}), Tensor::FromVector<std::string>({"x", "y"})});
  absl::StatusOr<ParsedExample> parsed = ParseExample(record, spec);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->fixed[0], Tensor::Scalar<int64_t>(4));
  EXPECT_EQ(parsed->fixed[1], Tensor::Scalar<float>(0.5f));
  EXPECT_EQ(parsed->fixed[2], Tensor::FromVector<std::string>({"x", "y"}));
}

TEST(ExampleParserTest, UnpackedAndMixedEncodings) {
  // float_list: unpacked fixed32 values, then a packed run, then another unpacked value.
  std::string packed_floats;
  wire::AppendFixed32(&packed_floats, std::bit_cast<uint32_t>(3.0f));
  wire::AppendFixed32(&packed_floats, std::bit_cast<uint32_t>(4.0f));
  const std::string float_list = Fixed32Field(1, std::bit_cast<uint32_t>(1.0f)) +
                                 Fixed32Field(1, std::bit_cast<uint32_t>(2.0f)) + Field(1, packed_floats) +
                                 Fixed32Field(1, std::bit_cast<uint32_t>(5.0f));
  // int64_list: unpacked varints (one negative, 10 bytes) and a packed run.
  std::string packed_ints;
  wire::AppendVarint(&packed_ints, 300);
  wire::AppendVarint(&packed_ints, static_cast<uint64_t>(int64_t{-5}));
  const std::string int_list = VarintField(1, 1) + VarintField(1, static_cast<uint64_t>(int64_t{-2})) +
                               Field(1, packed_ints);
  const std::string record =
      ExampleOf(EntryField("f", Field(2, float_list)) + EntryField("i", Field(3, int_list)));
  ParseSpec spec;
  spec.fixed.push_back({"f", DType::kFloat32, Shape({5}), std::nullopt});
  spec.var.push_back({"i", DType::kInt64});
  absl::StatusOr<ParsedExample> parsed = ParseExample(record, spec);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->fixed[0], Tensor::FromVector<float>({1, 2, 3, 4, 5}));
  EXPECT_EQ(parsed->var[0].values, Tensor::FromVector<int64_t>({1, -2, 300, -5}));

  absl::StatusOr<DecodedExample> decoded = DecodeExample(record);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->features.at("f"), Feature::Floats({1, 2, 3, 4, 5}));
  EXPECT_EQ(decoded->features.at("i"), Feature::Int64s({1, -2, 300, -5}));
}

TEST(ExampleParserTest, SkipsUnknownFieldsOfEveryWireTypeAtEveryLevel) {
  std::string packed;
  wire::AppendFixed32(&packed, std::bit_cast<uint32_t>(7.5f));
  const std::string float_list = AllUnknowns() + Field(1, packed) + AllUnknowns();
  const std::string feature = AllUnknowns() + Field(2, float_list) + AllUnknowns();
  const std::string bytes_feature = Field(1, AllUnknowns() + Field(1, "v") + AllUnknowns());
  const std::string entry = AllUnknowns() + Field(1, "x") + AllUnknowns() + Field(2, feature) + AllUnknowns();
  const std::string features = AllUnknowns() + Field(1, entry) + AllUnknowns() + EntryField("s", bytes_feature);
  const std::string record = AllUnknowns() + Field(1, features) + AllUnknowns();
  ParseSpec spec = FloatSpec("x", 1);
  spec.fixed.push_back({"s", DType::kString, Shape({1}), std::nullopt});
  absl::StatusOr<ParsedExample> parsed = ParseExample(record, spec);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->fixed[0], Tensor::FromVector<float>({7.5f}));
  EXPECT_EQ(parsed->fixed[1], Tensor::FromVector<std::string>({"v"}));
  absl::StatusOr<DecodedExample> decoded = DecodeExample(record);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->features.at("x"), Feature::Floats({7.5f}));
  EXPECT_EQ(decoded->features.at("s"), Feature::Bytes({"v"}));
}

TEST(ExampleParserTest, FeaturesMessageRepeatedIsMerged) {
  // Example.features given twice: protobuf merges the maps.
  const std::string record = ExampleOf(EntryField("a", Field(3, Field(1, std::string(1, '\x01'))))) +
                             ExampleOf(EntryField("b", Field(3, Field(1, std::string(1, '\x02')))));
  ParseSpec spec;
  spec.fixed.push_back({"a", DType::kInt64, Shape({1}), std::nullopt});
  spec.fixed.push_back({"b", DType::kInt64, Shape({1}), std::nullopt});
  absl::StatusOr<ParsedExample> parsed = ParseExample(record, spec);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->fixed[0].data<int64_t>()[0], 1);
  EXPECT_EQ(parsed->fixed[1].data<int64_t>()[0], 2);
}

TEST(ExampleParserTest, DuplicateKeyLastWins) {
  const std::string record =
      ExampleBuilder().AddFloats("x", {1.0f}).AddInt64s("y", {5}).AddFloats("x", {2.0f, 3.0f}).Serialize();
  absl::StatusOr<ParsedExample> parsed = ParseExample(record, FloatSpec("x", 2));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->fixed[0], Tensor::FromVector<float>({2.0f, 3.0f}));
  absl::StatusOr<DecodedExample> decoded = DecodeExample(record);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->features.at("x"), Feature::Floats({2.0f, 3.0f}));
}

TEST(ExampleParserTest, OneofLastKindWinsAndSameKindConcatenates) {
  std::string packed;
  wire::AppendFixed32(&packed, std::bit_cast<uint32_t>(1.0f));
  // float_list, then int64_list (replaces it), then int64_list again (merged: concatenated).
  const std::string feature = Field(2, Field(1, packed)) + Field(3, Field(1, "\x04")) + Field(3, Field(1, "\x05"));
  const std::string record = ExampleOf(EntryField("k", feature));
  ParseSpec spec;
  spec.var.push_back({"k", DType::kInt64});
  absl::StatusOr<ParsedExample> parsed = ParseExample(record, spec);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->var[0].values, Tensor::FromVector<int64_t>({4, 5}));
  // Asking for float now is a type error: the float list was replaced.
  absl::StatusOr<ParsedExample> as_float = ParseExample(record, FloatSpec("k", 1));
  EXPECT_EQ(as_float.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ExampleParserTest, EmptyFeatureHasZeroValues) {
  const std::string record = ExampleBuilder().AddEmpty("e").AddFloats("z", {}).Serialize();
  ParseSpec spec;
  spec.var.push_back({"e", DType::kString});
  spec.var.push_back({"z", DType::kFloat32});
  spec.fixed.push_back({"e", DType::kInt64, Shape({0}), std::nullopt});
  // "e" is used twice: rejected.
  EXPECT_EQ(ParseExample(record, spec).status().code(), absl::StatusCode::kInvalidArgument);
  spec.fixed.clear();
  absl::StatusOr<ParsedExample> parsed = ParseExample(record, spec);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->var[0].values.num_elements(), 0);
  EXPECT_EQ(parsed->var[0].row_lengths, Tensor::FromVector<int64_t>({0}));
  EXPECT_EQ(parsed->var[1].values.num_elements(), 0);

  ParseSpec zero;
  zero.fixed.push_back({"e", DType::kFloat32, Shape({0}), std::nullopt});
  EXPECT_TRUE(ParseExample(record, zero).ok());
  // An empty feature is present, so the default does not apply and the count is wrong.
  ParseSpec one;
  one.fixed.push_back({"e", DType::kFloat32, Shape({1}), Tensor::FromVector<float>({9})});
  absl::StatusOr<ParsedExample> bad = ParseExample(record, one, "rec-e");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("expected 1 float values"));

  absl::StatusOr<DecodedExample> decoded = DecodeExample(record);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->features.at("e").kind, FeatureKind::kNone);
  EXPECT_EQ(decoded->features.at("z"), Feature::Floats({}));
}

TEST(ExampleParserTest, EmptyRecordIsAnEmptyExample) {
  absl::StatusOr<DecodedExample> decoded = DecodeExample("");
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(decoded->features.empty());
  ParseSpec spec;
  spec.var.push_back({"v", DType::kString});
  EXPECT_TRUE(ParseExample("", spec).ok());
  EXPECT_EQ(ParseExample("", FloatSpec("x", 1)).status().code(), absl::StatusCode::kInvalidArgument);
}

// ---- errors ---------------------------------------------------------------------------------------------

TEST(ExampleParserTest, MissingRequiredFeature) {
  const std::string record = ExampleBuilder().AddFloats("other", {1}).Serialize();
  absl::StatusOr<ParsedExample> parsed = ParseExample(record, FloatSpec("wanted", 1), "shard-3:17");
  ASSERT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(),
            "Name: shard-3:17, Feature: wanted (data type: float) is required but could not be found.");
  absl::StatusOr<ParsedExample> unnamed = ParseExample(record, FloatSpec("wanted", 1));
  EXPECT_THAT(unnamed.status().message(), HasSubstr("Name: <unknown>"));
}

TEST(ExampleParserTest, WrongType) {
  const std::string record = ExampleBuilder().AddInt64s("x", {1}).Serialize();
  absl::StatusOr<ParsedExample> parsed = ParseExample(record, FloatSpec("x", 1), "r7");
  ASSERT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parsed.status().message(), HasSubstr("Name: r7"));
  EXPECT_THAT(parsed.status().message(), HasSubstr("Key: x"));
  EXPECT_THAT(parsed.status().message(), HasSubstr("Data types don't match. Data type: int64_list"));
  ParseSpec var;
  var.var.push_back({"x", DType::kString});
  EXPECT_THAT(ParseExample(record, var, "r8").status().message(), HasSubstr("expected type: string"));
}

TEST(ExampleParserTest, WrongCount) {
  const std::string record = ExampleBuilder().AddFloats("x", {1, 2, 3}).Serialize();
  ParseSpec spec;
  spec.fixed.push_back({"x", DType::kFloat32, Shape({2, 2}), std::nullopt});
  absl::StatusOr<ParsedExample> parsed = ParseExample(record, spec, "r9");
  ASSERT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(),
            "Name: r9, Key: x, Index: 0. Can't parse serialized Example: expected 4 float values (shape [2,2]), "
            "got 3");
}

TEST(ExampleParserTest, InvalidSpecs) {
  const std::string record = ExampleBuilder().AddInt64s("x", {1}).Serialize();
  ParseSpec int32_spec;
  int32_spec.fixed.push_back({"x", DType::kInt32, Shape({1}), std::nullopt});
  EXPECT_THAT(ParseExample(record, int32_spec).status().message(), HasSubstr("only float, int64 and string"));
  ParseSpec negative;
  negative.fixed.push_back({"x", DType::kInt64, Shape({-1}), std::nullopt});
  EXPECT_EQ(ParseExample(record, negative).status().code(), absl::StatusCode::kInvalidArgument);
  ParseSpec bad_default;
  bad_default.fixed.push_back({"x", DType::kInt64, Shape({2}), Tensor::FromVector<int64_t>({1})});
  EXPECT_THAT(ParseExample(record, bad_default).status().message(), HasSubstr("default value"));
  ParseSpec bad_default_type;
  bad_default_type.fixed.push_back({"x", DType::kInt64, Shape({1}), Tensor::FromVector<float>({1})});
  EXPECT_EQ(ValidateParseSpec(bad_default_type).code(), absl::StatusCode::kInvalidArgument);
  ParseSpec var_bool;
  var_bool.var.push_back({"x", DType::kBool});
  EXPECT_EQ(ValidateParseSpec(var_bool).code(), absl::StatusCode::kInvalidArgument);
}

struct MalformedCase {
  const char* name;
  std::string bytes;
  const char* reason;
};

TEST(ExampleParserTest, MalformedInputIsDataLoss) {
  std::string bad_packed_float = ExampleOf(EntryField("x", Field(2, Field(1, "abc"))));
  const std::vector<MalformedCase> cases = {
      {"truncated tag varint", std::string("\x80", 1), "truncated varint"},
      {"length past end", std::string("\x0a\x05\x0a", 3), "past the end"},
      {"wire type 7", std::string("\x0f", 1), "wire type"},
      {"wire type 6", std::string("\x0e", 1), "wire type"},
      {"start group", std::string("\x0b", 1), "group"},
      {"end group", std::string("\x0c", 1), "group"},
      {"field zero", std::string("\x02\x00", 2), "field number"},
      {"overlong varint", VarintField(5, 0).substr(0, 1) + std::string(11, '\xff') + "\x01",
       "longer than 10 bytes"},
      {"truncated fixed64", std::string("\x09\x01\x02", 3), "64-bit"},
      {"truncated fixed32", std::string("\x0d\x01", 2), "32-bit"},
      {"packed floats not multiple of 4", bad_packed_float, "multiple of 4"},
      {"packed int64 truncated varint", ExampleOf(EntryField("x", Field(3, Field(1, "\x01\x81")))),
       "truncated varint"},
      {"group inside a Feature", ExampleOf(EntryField("x", std::string("\x1b", 1))), "group"},
      {"bad length inside map entry", ExampleOf(Field(1, std::string("\x0a\x09x", 3))), "past the end"},
  };
  ParseSpec spec;
  spec.var.push_back({"x", DType::kFloat32});
  for (const MalformedCase& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<DecodedExample> decoded = DecodeExample(c.bytes, "bad.tfrecord:0");
    ASSERT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss) << decoded.status();
    EXPECT_THAT(decoded.status().message(), HasSubstr("Name: bad.tfrecord:0"));
    EXPECT_THAT(decoded.status().message(), HasSubstr(c.reason));
    EXPECT_THAT(decoded.status().message(), HasSubstr("at byte offset"));
    absl::StatusOr<ParsedExample> parsed = ParseExample(c.bytes, spec, "bad.tfrecord:0");
    // The int64 case is a type error for a float spec before any int64 is decoded.
    if (std::string_view(c.name) == "packed int64 truncated varint") continue;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kDataLoss) << parsed.status();
  }
}

TEST(ExampleParserTest, UnrequestedFeaturesAreOnlyFramed) {
  // A malformed body inside a feature the spec does not ask for: the spec parse skips it (like TF's fast
  // parser); DecodeExample validates everything.
  const std::string record =
      ExampleOf(EntryField("junk", std::string("\x0f", 1))) + ExampleBuilder().AddFloats("x", {1}).Serialize();
  EXPECT_TRUE(ParseExample(record, FloatSpec("x", 1)).ok());
  EXPECT_EQ(DecodeExample(record).status().code(), absl::StatusCode::kDataLoss);
}

// ---- robustness ------------------------------------------------------------------------------------------

std::string RichRecord() {
  std::string unpacked = Fixed32Field(1, std::bit_cast<uint32_t>(2.5f)) + VarintField(1, 3);
  return ExampleBuilder()
             .AddFloats("f", {1, 2, 3})
             .AddInt64s("i", {-1, 1000000, 7})
             .AddBytes("b", {"abc", "de"})
             .AddEmpty("e")
             .Serialize() +
         ExampleOf(EntryField("u", Field(2, unpacked)) + AllUnknowns());
}

ParseSpec RichSpec() {
  ParseSpec spec;
  spec.fixed.push_back({"f", DType::kFloat32, Shape({3}), std::nullopt});
  spec.fixed.push_back({"b", DType::kString, Shape({2}), std::nullopt});
  spec.var.push_back({"i", DType::kInt64});
  spec.var.push_back({"u", DType::kFloat32});
  spec.var.push_back({"e", DType::kString});
  return spec;
}

TEST(ExampleParserTest, EveryPrefixIsAnErrorOrACorrectParse) {
  const std::string full = RichRecord();
  absl::StatusOr<DecodedExample> want = DecodeExample(full);
  ASSERT_TRUE(want.ok()) << want.status();
  const ParseSpec spec = RichSpec();
  absl::StatusOr<ParsedExample> want_parsed = ParseExample(full, spec);
  ASSERT_TRUE(want_parsed.ok()) << want_parsed.status();
  int ok_prefixes = 0;
  for (size_t n = 0; n <= full.size(); ++n) {
    ExactBuffer prefix(std::string_view(full).substr(0, n));
    absl::StatusOr<DecodedExample> decoded = DecodeExample(prefix.view(), "prefix");
    if (decoded.ok()) {
      ++ok_prefixes;
      // A prefix can only parse when it ends on a field boundary: every feature it holds is complete.
      for (const auto& [key, feature] : decoded->features) {
        ASSERT_EQ(feature, want->features.at(key)) << "prefix " << n << " key " << key;
      }
    } else {
      EXPECT_TRUE(decoded.status().code() == absl::StatusCode::kDataLoss) << decoded.status();
    }
    absl::StatusOr<ParsedExample> parsed = ParseExample(prefix.view(), spec, "prefix");
    if (parsed.ok()) {
      for (size_t i = 0; i < spec.fixed.size(); ++i) ASSERT_EQ(parsed->fixed[i], want_parsed->fixed[i]) << n;
    } else {
      const absl::StatusCode code = parsed.status().code();
      EXPECT_TRUE(code == absl::StatusCode::kDataLoss || code == absl::StatusCode::kInvalidArgument) << n;
    }
    std::vector<std::string_view> batch = {prefix.view(), prefix.view()};
    (void)ParseExampleBatch(batch, spec);
  }
  EXPECT_GE(ok_prefixes, 2);  // the empty prefix and the full record
}

TEST(ExampleParserTest, FuzzGarbageAndMutations) {
#if defined(SLUICE_SANITIZED_BUILD)
  constexpr int kIterations = 4000;
#else
  constexpr int kIterations = 30000;
#endif
  std::mt19937_64 rng(12345);
  const std::string base = RichRecord();
  const ParseSpec spec = RichSpec();
  SequenceParseSpec seq_spec;
  seq_spec.var.push_back({"f", DType::kFloat32});
  int decoded_ok = 0;
  for (int iter = 0; iter < kIterations; ++iter) {
    std::string bytes;
    if (iter % 2 == 0) {
      bytes.resize(rng() % 64);
      for (char& c : bytes) c = static_cast<char>(rng());
    } else {
      bytes = base;
      const int mutations = 1 + static_cast<int>(rng() % 4);
      for (int m = 0; m < mutations; ++m) {
        const size_t pos = rng() % bytes.size();
        switch (rng() % 3) {
          case 0:
            bytes[pos] = static_cast<char>(rng());
            break;
          case 1:
            bytes[pos] = static_cast<char>(bytes[pos] ^ (1 << (rng() % 8)));
            break;
          default:
            bytes.erase(pos, 1 + rng() % 3);
            if (bytes.empty()) bytes = "x";
            break;
        }
      }
    }
    ExactBuffer input(bytes);
    absl::StatusOr<DecodedExample> decoded = DecodeExample(input.view());
    decoded_ok += decoded.ok();
    absl::StatusOr<ParsedExample> parsed = ParseExample(input.view(), spec);
    if (parsed.ok()) {
      EXPECT_EQ(parsed->fixed[0].num_elements(), 3);
      EXPECT_EQ(parsed->var[0].row_lengths.data<int64_t>()[0], parsed->var[0].values.num_elements());
    }
    (void)DecodeSequenceExample(input.view());
    (void)ParseSequenceExample(input.view(), spec, seq_spec);
  }
  EXPECT_GT(decoded_ok, 0);  // some mutations keep the record well-formed
}

// ---- batches ---------------------------------------------------------------------------------------------

TEST(ExampleParserTest, BatchStacksFixedAndConcatenatesVar) {
  std::vector<std::string> records;
  for (int r = 0; r < 3; ++r) {
    std::vector<int64_t> tags(static_cast<size_t>(r), r);
    records.push_back(ExampleBuilder()
                          .AddFloats("x", {static_cast<float>(r), static_cast<float>(r) + 0.5f})
                          .AddInt64s("tags", tags)
                          .AddBytes("name", {std::string("n") + std::to_string(r)})
                          .Serialize());
  }
  std::vector<std::string_view> views(records.begin(), records.end());
  ParseSpec spec;
  spec.fixed.push_back({"x", DType::kFloat32, Shape({2}), std::nullopt});
  spec.fixed.push_back({"name", DType::kString, Shape({}), std::nullopt});
  spec.fixed.push_back({"missing", DType::kInt64, Shape({1}), Tensor::FromVector<int64_t>({-1})});
  spec.var.push_back({"tags", DType::kInt64});
  absl::StatusOr<ParsedExample> parsed = ParseExampleBatch(views, spec);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->fixed[0], *Tensor::FromVector<float>({0, 0.5, 1, 1.5, 2, 2.5}).Reshape(Shape({3, 2})));
  EXPECT_EQ(parsed->fixed[1], Tensor::FromVector<std::string>({"n0", "n1", "n2"}));
  EXPECT_EQ(parsed->fixed[2], *Tensor::FromVector<int64_t>({-1, -1, -1}).Reshape(Shape({3, 1})));
  EXPECT_EQ(parsed->var[0].values, Tensor::FromVector<int64_t>({1, 2, 2}));
  EXPECT_EQ(parsed->var[0].row_lengths, Tensor::FromVector<int64_t>({0, 1, 2}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(parsed->fixed[0].raw_data()) % 64, 0u);

  absl::StatusOr<ParsedExample> empty = ParseExampleBatch({}, spec);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->fixed[0].shape(), Shape({0, 2}));
  EXPECT_EQ(empty->var[0].row_lengths.num_elements(), 0);
}

TEST(ExampleParserTest, BatchErrorsNameTheRecord) {
  std::vector<std::string> records = {ExampleBuilder().AddFloats("x", {1}).Serialize(),
                                      ExampleBuilder().AddFloats("y", {1}).Serialize()};
  std::vector<std::string_view> views(records.begin(), records.end());
  absl::StatusOr<ParsedExample> parsed = ParseExampleBatch(views, FloatSpec("x", 1));
  ASSERT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parsed.status().message(), HasSubstr("Name: record 1, Feature: x"));
  std::vector<std::string> names = {"a.tfrecord:0", "a.tfrecord:1"};
  parsed = ParseExampleBatch(views, FloatSpec("x", 1), names);
  EXPECT_THAT(parsed.status().message(), HasSubstr("Name: a.tfrecord:1"));
  std::vector<std::string> one_name = {"only"};
  EXPECT_EQ(ParseExampleBatch(views, FloatSpec("x", 1), one_name).status().code(),
            absl::StatusCode::kInvalidArgument);
  records[1] = "\x0f";
  views.assign(records.begin(), records.end());
  parsed = ParseExampleBatch(views, FloatSpec("x", 1));
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(parsed.status().message(), HasSubstr("Name: record 1"));
}

TEST(ExampleParserTest, EmptyPackedListsDecodeToNothing) {
  const std::string record =
      ExampleOf(EntryField("f", Field(2, Field(1, ""))) + EntryField("i", Field(3, Field(1, ""))));
  absl::StatusOr<DecodedExample> decoded = DecodeExample(record);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->features.at("f"), Feature::Floats({}));
  EXPECT_EQ(decoded->features.at("i"), Feature::Int64s({}));
  ParseSpec spec;
  spec.var.push_back({"f", DType::kFloat32});
  spec.fixed.push_back({"i", DType::kInt64, Shape({0}), std::nullopt});
  EXPECT_TRUE(ParseExample(record, spec).ok());
}

TEST(ExampleParserTest, ConcurrentParsesShareOneSpec) {
  // The spec is read-only during parsing; TSan checks that nothing in it is written.
  const ParseSpec spec = RichSpec();
  const std::string record = RichRecord();
  absl::StatusOr<ParsedExample> want = ParseExample(record, spec);
  ASSERT_TRUE(want.ok());
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&spec, &record, &want, &failures, t] {
      for (int i = 0; i < 200; ++i) {
        absl::StatusOr<ParsedExample> got = ParseExample(record, spec);
        if (!got.ok() || !(got->fixed[0] == want->fixed[0]) || !(got->var[0].values == want->var[0].values)) {
          ++failures[static_cast<size_t>(t)];
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

// ---- ExampleParser: a spec compiled once ------------------------------------------------------------------

TEST(ExampleParserTest, CompiledParserMatchesParseExample) {
  const ParseSpec spec = RichSpec();
  absl::StatusOr<ExampleParser> parser = ExampleParser::Create(spec);
  ASSERT_TRUE(parser.ok()) << parser.status();
  EXPECT_EQ(parser->spec().fixed.size(), spec.fixed.size());
  const std::vector<std::string> records = {RichRecord(), RichRecord()};
  absl::StatusOr<ParsedExample> want = ParseExample(records[0], spec);
  absl::StatusOr<ParsedExample> got = parser->Parse(records[0]);
  ASSERT_TRUE(want.ok() && got.ok());
  ASSERT_EQ(got->fixed.size(), want->fixed.size());
  for (size_t i = 0; i < want->fixed.size(); ++i) EXPECT_EQ(got->fixed[i], want->fixed[i]);
  ASSERT_EQ(got->var.size(), want->var.size());
  for (size_t i = 0; i < want->var.size(); ++i) {
    EXPECT_EQ(got->var[i].values, want->var[i].values);
    EXPECT_EQ(got->var[i].row_lengths, want->var[i].row_lengths);
  }
  const std::vector<std::string_view> views(records.begin(), records.end());
  absl::StatusOr<ParsedExample> batch = parser->ParseBatch(views);
  absl::StatusOr<ParsedExample> want_batch = ParseExampleBatch(views, spec);
  ASSERT_TRUE(batch.ok() && want_batch.ok());
  for (size_t i = 0; i < want_batch->fixed.size(); ++i) EXPECT_EQ(batch->fixed[i], want_batch->fixed[i]);
}

TEST(ExampleParserTest, CompiledParserErrorsAsParseExample) {
  const std::string record = ExampleBuilder().AddFloats("y", {1}).Serialize();
  absl::StatusOr<ExampleParser> parser = ExampleParser::Create(FloatSpec("x", 1));
  ASSERT_TRUE(parser.ok());
  EXPECT_EQ(parser->Parse(record, "r7").status(), ParseExample(record, FloatSpec("x", 1), "r7").status());
  EXPECT_EQ(parser->Parse("\x0f").status(), ParseExample("\x0f", FloatSpec("x", 1)).status());
  const std::vector<std::string_view> views = {record};
  const std::vector<std::string> names = {"only.tfrecord:0"};
  EXPECT_THAT(parser->ParseBatch(views, names).status().message(), HasSubstr("Name: only.tfrecord:0"));

  ParseSpec twice;
  twice.fixed.push_back({"x", DType::kInt64, Shape({1}), std::nullopt});
  twice.var.push_back({"x", DType::kInt64});
  EXPECT_EQ(ExampleParser::Create(twice).status().code(), absl::StatusCode::kInvalidArgument);
  ParseSpec int32_spec;
  int32_spec.fixed.push_back({"x", DType::kInt32, Shape({1}), std::nullopt});
  EXPECT_THAT(ExampleParser::Create(int32_spec).status().message(),
              HasSubstr("only float, int64 and string"));
}

TEST(ExampleParserTest, CompiledParserOutlivesItsSourceAndIsShared) {
  std::optional<ExampleParser> copy;
  {
    ParseSpec spec;
    // Short keys live inside the std::string (SSO): the compiled lookup must not point into `spec`.
    spec.fixed.push_back({"b", DType::kInt64, Shape({1}), std::nullopt});
    spec.fixed.push_back({"a", DType::kInt64, Shape({1}), std::nullopt});
    absl::StatusOr<ExampleParser> parser = ExampleParser::Create(std::move(spec));
    ASSERT_TRUE(parser.ok());
    copy = *parser;
  }
  const std::string record = ExampleBuilder().AddInt64s("a", {1}).AddInt64s("b", {2}).Serialize();
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&copy, &record, &failures, t] {
      for (int i = 0; i < 200; ++i) {
        absl::StatusOr<ParsedExample> got = copy->Parse(record);
        if (!got.ok() || got->fixed[0].data<int64_t>()[0] != 2 || got->fixed[1].data<int64_t>()[0] != 1) {
          ++failures[static_cast<size_t>(t)];
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

// ---- SequenceExample -------------------------------------------------------------------------------------

TEST(ExampleParserTest, SequenceExampleRoundTrip) {
  const std::string record = SequenceExampleBuilder()
                                 .AddContext("len", Feature::Int64s({3}))
                                 .AddContext("id", Feature::Bytes({"seq-1"}))
                                 .AddFeatureList("tok", {Feature::Int64s({1, 2}), Feature::Int64s({3, 4}),
                                                         Feature::Int64s({5, 6})})
                                 .AddFeatureList("word", {Feature::Bytes({"a"}), Feature::Bytes({}),
                                                          Feature::Bytes({"b", "c"})})
                                 .AddFeatureList("empty", {})
                                 .Serialize();
  ParseSpec context;
  context.fixed.push_back({"len", DType::kInt64, Shape({}), std::nullopt});
  context.var.push_back({"id", DType::kString});
  SequenceParseSpec seq;
  seq.fixed.push_back({"tok", DType::kInt64, Shape({2}), false});
  seq.fixed.push_back({"empty", DType::kFloat32, Shape({3}), false});
  seq.fixed.push_back({"gone", DType::kFloat32, Shape({3}), true});
  seq.var.push_back({"word", DType::kString});
  seq.var.push_back({"nothing", DType::kInt64});
  absl::StatusOr<ParsedSequenceExample> parsed = ParseSequenceExample(record, context, seq, "s0");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->context.fixed[0], Tensor::Scalar<int64_t>(3));
  EXPECT_EQ(parsed->context.var[0].values, Tensor::FromVector<std::string>({"seq-1"}));
  EXPECT_EQ(parsed->sequence.fixed[0], *Tensor::FromVector<int64_t>({1, 2, 3, 4, 5, 6}).Reshape(Shape({3, 2})));
  EXPECT_EQ(parsed->sequence.fixed[1].shape(), Shape({0, 3}));
  EXPECT_EQ(parsed->sequence.fixed[2].shape(), Shape({0, 3}));
  EXPECT_EQ(parsed->sequence.var[0].values, Tensor::FromVector<std::string>({"a", "b", "c"}));
  EXPECT_EQ(parsed->sequence.var[0].row_lengths, Tensor::FromVector<int64_t>({1, 0, 2}));
  EXPECT_EQ(parsed->sequence.var[1].row_lengths.num_elements(), 0);

  absl::StatusOr<DecodedSequenceExample> decoded = DecodeSequenceExample(record);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->context.at("len"), Feature::Int64s({3}));
  ASSERT_EQ(decoded->feature_lists.at("word").size(), 3u);
  EXPECT_EQ(decoded->feature_lists.at("word")[2], Feature::Bytes({"b", "c"}));
  EXPECT_TRUE(decoded->feature_lists.at("empty").empty());
}

TEST(ExampleParserTest, SequenceExampleErrors) {
  const std::string record = SequenceExampleBuilder()
                                 .AddFeatureList("tok", {Feature::Int64s({1, 2}), Feature::Int64s({3})})
                                 .AddFeatureList("f", {Feature::Floats({1})})
                                 .Serialize();
  ParseSpec no_context;
  SequenceParseSpec count;
  count.fixed.push_back({"tok", DType::kInt64, Shape({2}), false});
  absl::StatusOr<ParsedSequenceExample> parsed = ParseSequenceExample(record, no_context, count, "s1");
  ASSERT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parsed.status().message(), HasSubstr("Name: s1, Feature list: tok, Index: 1"));

  SequenceParseSpec type;
  type.var.push_back({"f", DType::kInt64});
  parsed = ParseSequenceExample(record, no_context, type, "s1");
  EXPECT_THAT(parsed.status().message(), HasSubstr("Data types don't match"));

  SequenceParseSpec missing;
  missing.fixed.push_back({"absent", DType::kFloat32, Shape({}), false});
  parsed = ParseSequenceExample(record, no_context, missing, "s1");
  EXPECT_THAT(parsed.status().message(), HasSubstr("Feature list: absent (data type: float) is required"));

  ParseSpec context_missing = FloatSpec("ctx", 1);
  parsed = ParseSequenceExample(record, context_missing, SequenceParseSpec{}, "s1");
  EXPECT_THAT(parsed.status().message(), HasSubstr("Feature: ctx"));

  SequenceParseSpec bad_dtype;
  bad_dtype.var.push_back({"f", DType::kFloat64});
  EXPECT_EQ(ParseSequenceExample(record, no_context, bad_dtype).status().code(),
            absl::StatusCode::kInvalidArgument);

  SequenceParseSpec duplicate;
  duplicate.fixed.push_back({"f", DType::kFloat32, Shape({1}), false});
  duplicate.var.push_back({"f", DType::kFloat32});
  EXPECT_THAT(ParseSequenceExample(record, no_context, duplicate).status().message(), HasSubstr("used twice"));

  const std::string truncated = record.substr(0, record.size() - 1);
  EXPECT_EQ(ParseSequenceExample(truncated, no_context, count).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeSequenceExample(truncated).status().code(), absl::StatusCode::kDataLoss);
}

// ---- real TensorFlow-written data -------------------------------------------------------------------------

std::string SharedDir() {
  const char* env = std::getenv("SLUICE_SHARED_DIR");
  return env != nullptr ? std::string(env) : std::string("../shared");
}

// TEST-ONLY TFRecord framing reader (u64 LE length, u32 length CRC, data, u32 data CRC); CRCs are not
// checked. The real reader lives in io/ and is tested on its own.
std::vector<std::string> ReadTfRecordsForTest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string file = ss.str();
  std::vector<std::string> records;
  size_t pos = 0;
  while (pos + 12 <= file.size()) {
    uint64_t length;
    std::memcpy(&length, file.data() + pos, 8);
    if (length > file.size() - pos - 12 || file.size() - pos - 12 - length < 4) break;
    records.push_back(file.substr(pos + 12, length));
    pos += 12 + length + 4;
  }
  return records;
}

TEST(ExampleParserTest, TorchdataExamplesMatchSidecar) {
  const std::vector<std::string> records =
      ReadTfRecordsForTest(SharedDir() + "/data/tfrecord/torchdata_example.tfrecord");
  ASSERT_EQ(records.size(), 4u) << "shared data not found under " << SharedDir();
  ParseSpec spec;
  spec.fixed.push_back({"x_float", DType::kFloat32, Shape({10}), std::nullopt});
  spec.fixed.push_back({"x_int", DType::kInt64, Shape({10}), std::nullopt});
  spec.fixed.push_back({"x_byte", DType::kString, Shape({}), std::nullopt});
  std::vector<std::string_view> views(records.begin(), records.end());
  absl::StatusOr<ParsedExample> batch = ParseExampleBatch(views, spec);
  ASSERT_TRUE(batch.ok()) << batch.status();
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    std::vector<float> floats;
    std::vector<int64_t> ints;
    for (int k = 0; k < 10; ++k) {
      floats.push_back(static_cast<float>(10 * i + k));
      ints.push_back(100 * i + 10 * k);
    }
    absl::StatusOr<ParsedExample> one = ParseExample(records[static_cast<size_t>(i)], spec);
    ASSERT_TRUE(one.ok()) << one.status();
    EXPECT_EQ(one->fixed[0], Tensor::FromVector<float>(floats));
    EXPECT_EQ(one->fixed[1], Tensor::FromVector<int64_t>(ints));
    EXPECT_EQ(one->fixed[2], Tensor::Scalar<std::string>("test str"));
    EXPECT_EQ(*batch->fixed[0].SubTensor(i), Tensor::FromVector<float>(floats));
    EXPECT_EQ(*batch->fixed[1].SubTensor(i), Tensor::FromVector<int64_t>(ints));

    absl::StatusOr<DecodedExample> decoded = DecodeExample(records[static_cast<size_t>(i)]);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    ASSERT_EQ(decoded->features.size(), 3u);
    EXPECT_EQ(decoded->features.at("x_float"), Feature::Floats(floats));
    EXPECT_EQ(decoded->features.at("x_int"), Feature::Int64s(ints));
    EXPECT_EQ(decoded->features.at("x_byte"), Feature::Bytes({"test str"}));
  }
}

TEST(ExampleParserTest, TorchdataSequenceExamplesMatchSidecar) {
  const std::vector<std::string> records =
      ReadTfRecordsForTest(SharedDir() + "/data/tfrecord/torchdata_sequence_example.tfrecord");
  ASSERT_EQ(records.size(), 4u) << "shared data not found under " << SharedDir();
  ParseSpec context;
  context.fixed.push_back({"x_float", DType::kFloat32, Shape({10}), std::nullopt});
  context.fixed.push_back({"x_int", DType::kInt64, Shape({10}), std::nullopt});
  context.fixed.push_back({"x_byte", DType::kString, Shape({1}), std::nullopt});
  SequenceParseSpec seq;
  seq.fixed.push_back({"x_float_seq", DType::kFloat32, Shape({10}), false});
  seq.fixed.push_back({"x_int_seq", DType::kInt64, Shape({10}), false});
  seq.var.push_back({"x_byte_seq", DType::kString});
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    const int64_t rep = 2 * i + 3;
    std::vector<float> floats;
    std::vector<int64_t> ints;
    for (int k = 0; k < 10; ++k) {
      floats.push_back(static_cast<float>(10 * i + k));
      ints.push_back(100 * i + 10 * k);
    }
    const std::string& record = records[static_cast<size_t>(i)];
    absl::StatusOr<ParsedSequenceExample> parsed = ParseSequenceExample(record, context, seq);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->context.fixed[0], Tensor::FromVector<float>(floats));
    EXPECT_EQ(parsed->context.fixed[1], Tensor::FromVector<int64_t>(ints));
    EXPECT_EQ(parsed->context.fixed[2], Tensor::FromVector<std::string>({"test str"}));
    ASSERT_EQ(parsed->sequence.fixed[0].shape(), Shape({rep, 10}));
    ASSERT_EQ(parsed->sequence.fixed[1].shape(), Shape({rep, 10}));
    for (int64_t step = 0; step < rep; ++step) {
      EXPECT_EQ(*parsed->sequence.fixed[0].SubTensor(step), Tensor::FromVector<float>(floats));
      EXPECT_EQ(*parsed->sequence.fixed[1].SubTensor(step), Tensor::FromVector<int64_t>(ints));
    }
    EXPECT_EQ(parsed->sequence.var[0].values.num_elements(), rep);
    EXPECT_EQ(parsed->sequence.var[0].row_lengths, Tensor::FromVector<int64_t>(std::vector<int64_t>(
                                                       static_cast<size_t>(rep), 1)));
    for (const std::string& s : parsed->sequence.var[0].values.span<std::string>()) EXPECT_EQ(s, "test str");

    absl::StatusOr<DecodedSequenceExample> decoded = DecodeSequenceExample(record);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->context.size(), 3u);
    EXPECT_EQ(decoded->context.at("x_float"), Feature::Floats(floats));
    ASSERT_EQ(decoded->feature_lists.size(), 3u);
    for (const auto& [key, steps] : decoded->feature_lists) {
      ASSERT_EQ(static_cast<int64_t>(steps.size()), rep) << key;
      for (const Feature& step : steps) {
        if (key == "x_float_seq") {
          EXPECT_EQ(step, Feature::Floats(floats));
        }
        if (key == "x_int_seq") {
          EXPECT_EQ(step, Feature::Int64s(ints));
        }
        if (key == "x_byte_seq") {
          EXPECT_EQ(step, Feature::Bytes({"test str"}));
        }
      }
    }
    // Every prefix of a real record is an error or a parse that agrees with the full one.
    if (i == 0) {
      for (size_t n = 0; n < record.size(); ++n) {
        ExactBuffer prefix(std::string_view(record).substr(0, n));
        absl::StatusOr<DecodedSequenceExample> partial = DecodeSequenceExample(prefix.view());
        if (partial.ok()) {
          for (const auto& [key, feature] : partial->context) EXPECT_EQ(feature, decoded->context.at(key)) << n;
          for (const auto& [key, steps] : partial->feature_lists) {
            EXPECT_EQ(steps, decoded->feature_lists.at(key)) << n;
          }
        }
        absl::StatusOr<ParsedSequenceExample> partial_parse = ParseSequenceExample(prefix.view(), context, seq);
        if (partial_parse.ok()) {
          EXPECT_EQ(partial_parse->sequence.fixed[0], parsed->sequence.fixed[0]) << n;
        }
      }
    }
    // A SequenceExample read as an Example has no field-1 Features map of the same shape: the context is
    // field 1, so it decodes as the context features.
    absl::StatusOr<DecodedExample> as_example = DecodeExample(record);
    ASSERT_TRUE(as_example.ok());
    EXPECT_EQ(as_example->features.size(), 3u);
  }
}

}  // namespace
}  // namespace example_parser_test_file
}  // namespace sluice
