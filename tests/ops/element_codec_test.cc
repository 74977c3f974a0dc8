#include "sluice/ops/element_codec.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/cord.h"
#include "gtest/gtest.h"
#include "sluice/io/example.h"
#include "sluice/io/tensor.h"
#include "sluice/ops/shuffle.h"

namespace sluice {
namespace element_codec_test_file {
namespace {

template <class T>
T RoundTrip(const T& value) {
  std::string bytes;
  EncodeElement(value, &bytes);
  T back{};
  absl::Status status = DecodeElement(bytes, &back);
  EXPECT_TRUE(status.ok()) << status;
  return back;
}

struct NoCodec {};

// Every proper prefix of a valid encoding must fail cleanly as DataLoss (ASan checks the reads).
template <class T>
void ExpectEveryPrefixIsDataLoss(const T& value) {
  std::string bytes;
  EncodeElement(value, &bytes);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    std::string prefix = bytes.substr(0, cut);  // its own allocation, so a read past it is caught
    T out{};
    absl::Status s = DecodeElement(prefix, &out);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << "prefix of " << cut << " of " << bytes.size() << ": " << s;
  }
}

bool SameExample(const ParsedExample& a, const ParsedExample& b) {
  if (a.fixed != b.fixed || a.var.size() != b.var.size()) return false;
  for (size_t i = 0; i < a.var.size(); ++i) {
    if (!(a.var[i].values == b.var[i].values) || !(a.var[i].row_lengths == b.var[i].row_lengths)) return false;
  }
  return true;
}

// Two fixed features, and var features with empty rows and with no values at all.
ParsedExample SampleExample() {
  ParsedExample e;
  e.fixed.push_back(Tensor::FromVector<float>({1.5f, -2.f}));
  e.fixed.push_back(Tensor::Scalar<std::string>("label"));
  e.var.push_back({Tensor::FromVector<int64_t>({4, 5, 6}), Tensor::FromVector<int64_t>({0, 3, 0})});
  e.var.push_back({Tensor::Empty(DType::kString, Shape({0})), Tensor::FromVector<int64_t>({0})});
  return e;
}

absl::Status StatusWithPayloads() {
  absl::Status s = absl::UnavailableError(std::string("worker gone\0binary", 18));
  s.SetPayload("type.googleapis.com/sluice.Retry", absl::Cord("after=5s"));
  s.SetPayload("type.googleapis.com/sluice.Empty", absl::Cord(""));
  return s;
}

static_assert(HasElementCodec<int64_t>);
static_assert(HasElementCodec<std::string>);
static_assert(HasElementCodec<std::vector<std::pair<int, std::optional<Tensor>>>>);
static_assert(HasElementCodec<std::tuple<bool, double, std::string>>);
static_assert(!HasElementCodec<NoCodec>);
static_assert(!HasElementCodec<std::vector<NoCodec>>);
static_assert(!HasElementCodec<std::pair<int, NoCodec>>);
static_assert(!HasElementCodec<long double>);
static_assert(HasElementCodec<ParsedExample>);
static_assert(HasElementCodec<absl::Status>);
static_assert(HasElementCodec<absl::StatusOr<std::vector<Tensor>>>);
static_assert(!HasElementCodec<absl::StatusOr<NoCodec>>);

TEST(ElementCodecTest, ScalarsRoundTrip) {
  EXPECT_EQ(RoundTrip<int64_t>(-5), -5);
  EXPECT_EQ(RoundTrip<int64_t>(std::numeric_limits<int64_t>::min()), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(RoundTrip<uint8_t>(200), 200);
  EXPECT_EQ(RoundTrip<float>(1.5f), 1.5f);
  EXPECT_EQ(RoundTrip<double>(-0.25), -0.25);
  EXPECT_EQ(RoundTrip<bool>(true), true);
  EXPECT_EQ(RoundTrip<bool>(false), false);
  EXPECT_EQ(RoundTrip<char>('x'), 'x');
  EXPECT_EQ(RoundTrip(Half{0x3c00}).bits, 0x3c00);
}

TEST(ElementCodecTest, FixedWidthLittleEndianLayout) {
  std::string bytes;
  EncodeElement<uint32_t>(0x01020304u, &bytes);
  EXPECT_EQ(bytes, std::string("\x04\x03\x02\x01", 4));
  bytes.clear();
  EncodeElement(std::string("ab"), &bytes);
  EXPECT_EQ(bytes, std::string("\x02" "ab", 3));
}

TEST(ElementCodecTest, ContainersRoundTrip) {
  std::string big(300, 'z');  // a two-byte varint length
  EXPECT_EQ(RoundTrip(big), big);
  EXPECT_EQ(RoundTrip(std::string()), "");
  std::vector<int32_t> ints = {1, -2, 3};
  EXPECT_EQ(RoundTrip(ints), ints);
  std::vector<bool> bools = {true, false, true};
  EXPECT_EQ(RoundTrip(bools), bools);
  std::vector<std::string> strings = {"a", "", "ccc"};
  EXPECT_EQ(RoundTrip(strings), strings);
  auto pair = std::make_pair(int64_t{7}, std::string("seven"));
  EXPECT_EQ(RoundTrip(pair), pair);
  auto tuple = std::make_tuple(true, 2.5, std::string("t"), std::vector<int64_t>{4, 5});
  EXPECT_EQ(RoundTrip(tuple), tuple);
  std::optional<std::string> none;
  std::optional<std::string> some = "x";
  EXPECT_EQ(RoundTrip(none), none);
  EXPECT_EQ(RoundTrip(some), some);
  std::vector<std::vector<int64_t>> nested = {{}, {1}, {2, 3}};
  EXPECT_EQ(RoundTrip(nested), nested);
  EXPECT_EQ(RoundTrip(std::tuple<>()), std::tuple<>());
  std::vector<std::tuple<>> empties(5);
  EXPECT_EQ(RoundTrip(empties).size(), 5u);
}

TEST(ElementCodecTest, TensorsRoundTrip) {
  Tensor f = Tensor::FromVector<float>({1.f, 2.f, 3.f, 4.f, 5.f, 6.f});
  Tensor matrix = *f.Reshape(Shape({2, 3}));
  EXPECT_EQ(RoundTrip(matrix), matrix);
  Tensor slice = *matrix.Slice(1, 2);  // a view at a non-zero offset
  EXPECT_EQ(RoundTrip(slice), slice);
  Tensor scalar = Tensor::Scalar<int64_t>(42);
  EXPECT_EQ(RoundTrip(scalar), scalar);
  Tensor strings = Tensor::FromVector<std::string>({"a", "", "long string"});
  EXPECT_EQ(RoundTrip(strings), strings);
  Tensor bools = Tensor::FromVector<bool>({true, false});
  EXPECT_EQ(RoundTrip(bools), bools);
  Tensor empty = Tensor::Empty(DType::kInt32, Shape({0, 4}));
  Tensor empty_back = RoundTrip(empty);
  EXPECT_EQ(empty_back.shape(), empty.shape());
  EXPECT_EQ(empty_back.dtype(), DType::kInt32);
  Tensor halves = Tensor::FromVector<Half>({FloatToHalf(1.0f), FloatToHalf(-2.0f)});
  EXPECT_EQ(RoundTrip(halves), halves);
}

TEST(ElementCodecTest, DecodeReusesOutputAndAdvancesInput) {
  std::string bytes;
  EncodeElement(std::string("first"), &bytes);
  EncodeElement(std::string("second"), &bytes);
  std::string_view in = bytes;
  std::string out;
  ASSERT_TRUE(ElementCodec<std::string>::Decode(&in, &out).ok());
  EXPECT_EQ(out, "first");
  ASSERT_TRUE(ElementCodec<std::string>::Decode(&in, &out).ok());
  EXPECT_EQ(out, "second");
  EXPECT_TRUE(in.empty());
}

TEST(ElementCodecTest, BadInputIsDataLoss) {
  std::vector<int64_t> v;
  // Truncated.
  std::string bytes;
  EncodeElement(std::vector<int64_t>{1, 2, 3}, &bytes);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    absl::Status s = DecodeElement(std::string_view(bytes.data(), cut), &v);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << cut;
  }
  // Trailing bytes.
  EXPECT_EQ(DecodeElement(bytes + "x", &v).code(), absl::StatusCode::kDataLoss);
  // A huge count is rejected before anything is allocated.
  std::string huge("\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 9);
  EXPECT_EQ(DecodeElement(huge, &v).code(), absl::StatusCode::kDataLoss);
  std::string s;
  EXPECT_EQ(DecodeElement(huge, &s).code(), absl::StatusCode::kDataLoss);
  // A varint longer than 64 bits.
  std::string overlong(11, '\xff');
  EXPECT_EQ(DecodeElement(overlong, &s).code(), absl::StatusCode::kDataLoss);
  // Bad tags.
  bool b = false;
  EXPECT_EQ(DecodeElement(std::string("\x02", 1), &b).code(), absl::StatusCode::kDataLoss);
  std::optional<int32_t> o;
  EXPECT_EQ(DecodeElement(std::string("\x05", 1), &o).code(), absl::StatusCode::kDataLoss);
  // Tensors: unknown dtype, implausible rank, a shape larger than the bytes, overflowing dims.
  Tensor t;
  EXPECT_EQ(DecodeElement(std::string("\x09\x00", 2), &t).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeElement(std::string("\x03\xff\x01", 3), &t).code(), absl::StatusCode::kDataLoss);
  std::string shape_lies("\x03\x01\x64", 3);  // int64 [100] with no data
  EXPECT_EQ(DecodeElement(shape_lies, &t).code(), absl::StatusCode::kDataLoss);
  std::string overflow("\x00\x02", 2);
  overflow += std::string("\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 9);
  overflow += std::string("\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 9);
  EXPECT_EQ(DecodeElement(overflow, &t).code(), absl::StatusCode::kDataLoss);
  std::string bad_bool_tensor("\x00\x01\x02\x01\x07", 5);  // bool [2] = {1, 7}
  EXPECT_EQ(DecodeElement(bad_bool_tensor, &t).code(), absl::StatusCode::kDataLoss);
}

TEST(ElementCodecTest, ParsedExampleRoundTrips) {
  ParsedExample sample = SampleExample();
  EXPECT_TRUE(SameExample(RoundTrip(sample), sample));
  EXPECT_TRUE(SameExample(RoundTrip(ParsedExample{}), ParsedExample{}));
  // A real parse: one var feature present, one absent (an empty row).
  ParseSpec spec;
  spec.fixed.push_back({"label", DType::kInt64, Shape({}), std::nullopt});
  spec.var.push_back({"tags", DType::kString});
  spec.var.push_back({"missing", DType::kFloat32});
  std::string record = ExampleBuilder().AddInt64s("label", {3}).AddBytes("tags", {"a", "bc"}).Serialize();
  absl::StatusOr<ParsedExample> parsed = ParseExample(record, spec);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ParsedExample back = RoundTrip(*parsed);
  EXPECT_TRUE(SameExample(back, *parsed));
  ASSERT_EQ(back.var.size(), 2u);
  EXPECT_EQ(back.var[1].values.num_elements(), 0);
  EXPECT_EQ(back.var[1].row_lengths.data<int64_t>()[0], 0);
  // Decoding into a value that held more replaces it entirely.
  std::string bytes;
  EncodeElement(ParsedExample{}, &bytes);
  ParsedExample reused = SampleExample();
  ASSERT_TRUE(DecodeElement(bytes, &reused).ok());
  EXPECT_TRUE(reused.fixed.empty());
  EXPECT_TRUE(reused.var.empty());
}

TEST(ElementCodecTest, StatusRoundTrips) {
  EXPECT_EQ(RoundTrip(absl::OkStatus()), absl::OkStatus());
  for (int code = 1; code <= static_cast<int>(absl::StatusCode::kUnauthenticated); ++code) {
    absl::Status s(static_cast<absl::StatusCode>(code), absl::StrCat("failure ", code));
    absl::Status back = RoundTrip(s);
    EXPECT_EQ(back.code(), s.code()) << code;
    EXPECT_EQ(back.message(), s.message());
  }
  absl::Status with_payloads = StatusWithPayloads();
  absl::Status back = RoundTrip(with_payloads);
  EXPECT_EQ(back, with_payloads);  // == compares code, message and payloads
  ASSERT_TRUE(back.GetPayload("type.googleapis.com/sluice.Retry").has_value());
  EXPECT_EQ(std::string(*back.GetPayload("type.googleapis.com/sluice.Retry")), "after=5s");
  EXPECT_EQ(back.message().size(), 18u);
  // An OK status is one byte: errors are rare, successes are not.
  std::string ok_bytes;
  EncodeElement(absl::OkStatus(), &ok_bytes);
  EXPECT_EQ(ok_bytes.size(), 1u);
}

TEST(ElementCodecTest, StatusOrRoundTrips) {
  absl::StatusOr<int64_t> value = 42;
  EXPECT_EQ(*RoundTrip(value), 42);
  absl::StatusOr<int64_t> error = absl::NotFoundError("no such file");
  absl::StatusOr<int64_t> error_back = RoundTrip(error);
  ASSERT_FALSE(error_back.ok());
  EXPECT_EQ(error_back.status(), error.status());
  absl::StatusOr<std::vector<std::string>> strings = std::vector<std::string>{"a", "", "c"};
  EXPECT_EQ(*RoundTrip(strings), *strings);
  absl::StatusOr<Tensor> tensor_error = StatusWithPayloads();
  EXPECT_EQ(RoundTrip(tensor_error).status(), StatusWithPayloads());
  // Decoding a value into a holder of an error, and an error into a holder of a value.
  std::string value_bytes;
  std::string error_bytes;
  EncodeElement(value, &value_bytes);
  EncodeElement(error, &error_bytes);
  absl::StatusOr<int64_t> holder = absl::InternalError("old");
  ASSERT_TRUE(DecodeElement(value_bytes, &holder).ok());
  EXPECT_EQ(*holder, 42);
  ASSERT_TRUE(DecodeElement(error_bytes, &holder).ok());
  EXPECT_EQ(holder.status().code(), absl::StatusCode::kNotFound);
  // Errors travel inside containers too.
  std::vector<absl::StatusOr<std::string>> mixed = {std::string("x"), absl::DataLossError("bad record")};
  std::vector<absl::StatusOr<std::string>> mixed_back = RoundTrip(mixed);
  ASSERT_EQ(mixed_back.size(), 2u);
  EXPECT_EQ(*mixed_back[0], "x");
  EXPECT_EQ(mixed_back[1].status(), mixed[1].status());
}

TEST(ElementCodecTest, EveryPrefixOfAnEncodingIsDataLoss) {
  ExpectEveryPrefixIsDataLoss(SampleExample());
  ExpectEveryPrefixIsDataLoss(StatusWithPayloads());
  ExpectEveryPrefixIsDataLoss(absl::Status(absl::InvalidArgumentError("x")));
  ExpectEveryPrefixIsDataLoss(absl::StatusOr<Tensor>(Tensor::FromVector<std::string>({"ab", "c"})));
  ExpectEveryPrefixIsDataLoss(absl::StatusOr<Tensor>(StatusWithPayloads()));
  ExpectEveryPrefixIsDataLoss(std::make_tuple(std::vector<int64_t>{1, 2}, std::string("s"), std::optional<bool>(true)));
  ExpectEveryPrefixIsDataLoss(Tensor::FromVector<double>({1.0, 2.0}));
}

TEST(ElementCodecTest, HostileStatusBytesAreDataLoss) {
  absl::Status s;
  // Codes outside absl's set.
  EXPECT_EQ(DecodeElement(std::string("\x11\x00\x00", 3), &s).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeElement(std::string("\xff\x01\x00\x00", 4), &s).code(), absl::StatusCode::kDataLoss);
  // OK carries nothing after the code.
  EXPECT_EQ(DecodeElement(std::string("\x00\x00", 2), &s).code(), absl::StatusCode::kDataLoss);
  // A payload count larger than the bytes could hold is refused before anything is built.
  std::string huge_count("\x05\x01m", 3);
  huge_count += std::string("\xff\xff\xff\xff\x0f", 5);
  EXPECT_EQ(DecodeElement(huge_count, &s).code(), absl::StatusCode::kDataLoss);
  // A message length past the end.
  EXPECT_EQ(DecodeElement(std::string("\x05\x7f", 2), &s).code(), absl::StatusCode::kDataLoss);
  absl::StatusOr<int32_t> so;
  // A StatusOr tag other than 0/1, and an "error" that is OK (absl::StatusOr cannot hold one).
  EXPECT_EQ(DecodeElement(std::string("\x02\x00\x00\x00\x00", 5), &so).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeElement(std::string("\x00\x00", 2), &so).code(), absl::StatusCode::kDataLoss);
  // ParsedExample: counts claiming more tensors than the bytes.
  ParsedExample e;
  EXPECT_EQ(DecodeElement(std::string("\x7f\x00", 2), &e).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeElement(std::string("\x00\x7f", 2), &e).code(), absl::StatusCode::kDataLoss);
}

TEST(ElementCodecTest, StreamHeaderChecksTypeAndVersion) {
  std::string stream;
  EncodeElementStreamHeader<std::vector<int64_t>>(&stream);
  EncodeElement(std::vector<int64_t>{1, 2}, &stream);
  // The right reader passes the header and is left at the first element.
  std::string_view in = stream;
  ASSERT_TRUE(CheckElementStreamHeader<std::vector<int64_t>>(&in).ok());
  std::vector<int64_t> first;
  ASSERT_TRUE(DecodeElement(in, &first).ok());
  EXPECT_EQ(first, (std::vector<int64_t>{1, 2}));
  // Another type is a named error, not DataLoss from the first element.
  in = stream;
  absl::Status wrong = CheckElementStreamHeader<Tensor>(&in);
  EXPECT_EQ(wrong.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(wrong.message(), "element stream holds vector<int64>, reader expects Tensor");
  // Unnamed types match each other only.
  std::string unnamed;
  EncodeElementStreamHeader<NoCodec>(&unnamed);
  in = unnamed;
  EXPECT_TRUE(CheckElementStreamHeader<NoCodec>(&in).ok());
  in = unnamed;
  absl::Status named = CheckElementStreamHeader<int64_t>(&in);
  EXPECT_EQ(named.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(named.message().find("holds an unnamed element type, reader expects int64"), std::string::npos) << named;
  // Another format version.
  std::string future("SLEL\x09\x05int64", 11);
  in = future;
  absl::Status version = CheckElementStreamHeader<int64_t>(&in);
  EXPECT_EQ(version.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(version.message().find("format version 9"), std::string::npos) << version;
  // Not a header, or a truncated one.
  in = std::string_view("\x02\x01\x02", 3);
  EXPECT_EQ(CheckElementStreamHeader<int64_t>(&in).code(), absl::StatusCode::kDataLoss);
  std::string header;
  EncodeElementStreamHeader<std::vector<int64_t>>(&header);
  for (size_t cut = 0; cut < header.size(); ++cut) {
    std::string prefix = header.substr(0, cut);
    std::string_view p = prefix;
    EXPECT_EQ(CheckElementStreamHeader<std::vector<int64_t>>(&p).code(), absl::StatusCode::kDataLoss) << cut;
  }
}

// Random bytes and random corruptions of valid encodings never crash (ASan/UBSan check the rest).
TEST(ElementCodecTest, FuzzedInputNeverCrashes) {
  using Complex = std::tuple<std::vector<std::string>, std::optional<Tensor>, std::pair<int32_t, bool>>;
  Complex value{{"a", "bc"}, Tensor::FromVector<std::string>({"x", "yz"}), {3, true}};
  std::string valid;
  EncodeElement(value, &valid);
  ops::SplitMix64 rng(1234);
  int decoded_ok = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string bytes;
    if (round % 2 == 0) {
      bytes = valid;
      int flips = 1 + static_cast<int>(rng.Uniform(4));
      for (int i = 0; i < flips; ++i) bytes[rng.Uniform(bytes.size())] = static_cast<char>(rng.Next());
      if (rng.Uniform(4) == 0) bytes.resize(rng.Uniform(bytes.size() + 1));
    } else {
      bytes.resize(rng.Uniform(64));
      for (char& c : bytes) c = static_cast<char>(rng.Next());
    }
    Complex out;
    absl::Status s = DecodeElement(bytes, &out);
    if (s.ok()) {
      ++decoded_ok;
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
    }
    Tensor t;
    (void)DecodeElement(bytes, &t);
    std::vector<std::vector<int64_t>> vv;
    (void)DecodeElement(bytes, &vv);
    ParsedExample e;
    (void)DecodeElement(bytes, &e);
    absl::StatusOr<std::vector<std::string>> so;
    (void)DecodeElement(bytes, &so);
    absl::Status st;
    (void)DecodeElement(bytes, &st);
  }
  EXPECT_LT(decoded_ok, 20000);
}

}  // namespace
}  // namespace element_codec_test_file
}  // namespace sluice
