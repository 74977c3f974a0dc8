#include "sluice/ops/element_codec.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "sluice/ops/shuffle.h"
#include "sluice/io/tensor.h"

namespace sluice {
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

static_assert(HasElementCodec<int64_t>);
static_assert(HasElementCodec<std::string>);
static_assert(HasElementCodec<std::vector<std::pair<int, std::optional<Tensor>>>>);
static_assert(HasElementCodec<std::tuple<bool, double, std::string>>);
static_assert(!HasElementCodec<NoCodec>);
static_assert(!HasElementCodec<std::vector<NoCodec>>);
static_assert(!HasElementCodec<std::pair<int, NoCodec>>);
static_assert(!HasElementCodec<long double>);

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
  }
  EXPECT_LT(decoded_ok, 20000);
}

}  // namespace
}  // namespace sluice
