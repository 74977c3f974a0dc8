// bfloat16 (tf.bfloat16) as a Tensor dtype: conversions as TensorFlow rounds (nearest even), the element
// codec, batching and padding, decode_raw and cast by name.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sluice/io/tensor.h"
#include "sluice/ops/dataset.h"
#include "sluice/ops/element_codec.h"
#include "sluice/ops/element_type_registry.h"
#include "sluice/ops/library_functions.h"
#include "tests/ops/test_helpers.h"

namespace sluice::bfloat16_test {
namespace bfloat16_test_file {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(BFloat16Test, ConversionsRoundToNearestEven) {
  EXPECT_EQ(FloatToBFloat16(0.0f).bits, 0x0000);
  EXPECT_EQ(FloatToBFloat16(-0.0f).bits, 0x8000);
  EXPECT_EQ(FloatToBFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(FloatToBFloat16(-2.0f).bits, 0xc000);
  EXPECT_EQ(FloatToBFloat16(3.14159265f).bits, 0x4049);                        // 0x40490fdb: rounds down
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3f808000u)).bits, 0x3f80);              // halfway, even stays
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3f818000u)).bits, 0x3f82);              // halfway, odd goes up
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3f808001u)).bits, 0x3f81);              // above halfway
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::max()).bits, 0x7f80);  // rounds to inf
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::infinity()).bits, 0x7f80);
  EXPECT_EQ(FloatToBFloat16(-std::numeric_limits<float>::infinity()).bits, 0xff80);
  EXPECT_EQ(FloatToBFloat16(FromBits(0x00000001u)).bits, 0x0000);  // smallest subnormal: to zero
  EXPECT_EQ(FloatToBFloat16(FromBits(0x00010000u)).bits, 0x0001);  // a subnormal bfloat16
  // NaN stays NaN, quiet, even when its payload sits only in the dropped bits.
  const BFloat16 nan = FloatToBFloat16(FromBits(0x7f800001u));
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(nan)));
  EXPECT_EQ(nan.bits & 0x0040, 0x0040);
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(-std::numeric_limits<float>::quiet_NaN()))));
  // Widening is exact, and narrowing what was widened gives the same bits back.
  for (uint32_t b = 0; b <= 0xffff; b += 7) {
    const BFloat16 x{static_cast<uint16_t>(b)};
    const float f = BFloat16ToFloat(x);
    EXPECT_EQ(Bits(f), b << 16);
    if (!std::isnan(f)) {
      EXPECT_EQ(FloatToBFloat16(f).bits, b);
    }
  }
}

TEST(BFloat16Test, TensorsOfBFloat16) {
  EXPECT_EQ(DTypeSize(DType::kBFloat16), 2u);
  EXPECT_EQ(DTypeName(DType::kBFloat16), "bfloat16");
  Tensor t = Tensor::FromVector<BFloat16>({FloatToBFloat16(1.5f), FloatToBFloat16(-2.0f)});
  EXPECT_EQ(t.dtype(), DType::kBFloat16);
  EXPECT_EQ(t.num_bytes(), 4u);
  EXPECT_EQ(t.DebugString(), "bfloat16[2] {1.5, -2}");
  EXPECT_EQ(t, Tensor::FromVector<BFloat16>({FloatToBFloat16(1.5f), FloatToBFloat16(-2.0f)}));
  EXPECT_FALSE(t == Tensor::FromVector<Half>({FloatToHalf(1.5f), FloatToHalf(-2.0f)}));
  EXPECT_EQ(Tensor::Zeros(DType::kBFloat16, Shape({3})).data<BFloat16>()[2].bits, 0);
}

TEST(BFloat16Test, TheCodecCarriesTheDType) {
  Tensor t = Tensor::FromVector<BFloat16>({FloatToBFloat16(0.25f), FloatToBFloat16(8.0f)});
  std::string bytes;
  ElementCodec<Tensor>::Encode(t, &bytes);
  std::string_view in = bytes;
  Tensor back;
  ASSERT_TRUE(ElementCodec<Tensor>::Decode(&in, &back).ok());
  EXPECT_EQ(back, t);
  // A dtype byte past the last dtype is still DataLoss.
  bytes[0] = static_cast<char>(static_cast<uint8_t>(kLastDType) + 1);
  in = bytes;
  EXPECT_EQ(ElementCodec<Tensor>::Decode(&in, &back).code(), absl::StatusCode::kDataLoss);

  std::string scalar;
  ElementCodec<BFloat16>::Encode(FloatToBFloat16(3.0f), &scalar);
  std::string_view scalar_in = scalar;
  BFloat16 value;
  ASSERT_TRUE(ElementCodec<BFloat16>::Decode(&scalar_in, &value).ok());
  EXPECT_EQ(BFloat16ToFloat(value), 3.0f);
  EXPECT_NE(FindElementType("bfloat16"), nullptr);
}

TEST(BFloat16Test, BatchAndPaddedBatch) {
  auto rows = Range(1, 4).Map([](int64_t n) {
    std::vector<BFloat16> v(static_cast<size_t>(n), FloatToBFloat16(static_cast<float>(n)));
    return Tensor::FromVector<BFloat16>(v);
  });
  std::vector<Tensor> padded =
      test_ops::Values(rows.PaddedBatch(3, {{4}}, {Tensor::Scalar(FloatToBFloat16(-1.0f))}));
  ASSERT_EQ(padded.size(), 1u);
  EXPECT_EQ(padded[0].dtype(), DType::kBFloat16);
  EXPECT_EQ(padded[0].DebugString(20), "bfloat16[3,4] {1, -1, -1, -1, 2, 2, -1, -1, 3, 3, 3, -1}");
  auto scalars = Range(4).Map([](int64_t x) { return FloatToBFloat16(static_cast<float>(x) / 2); });
  std::vector<Tensor> batches = test_ops::Values(scalars.Batch(2));
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1].DebugString(20), "bfloat16[2] {1, 1.5}");
  std::vector<std::vector<BFloat16>> vectors = test_ops::Values(scalars.BatchVectors(2));
  ASSERT_EQ(vectors.size(), 2u);
  EXPECT_EQ(BFloat16ToFloat(vectors[1][1]), 1.5f);
}

TEST(BFloat16Test, DecodeRawAndCastByName) {
  const std::string raw = {'\x80', '\x3f', '\x00', '\xc0'};  // 1.0 and -2.0, little-endian
  std::vector<Tensor> decoded = test_ops::Values(
      FromVector<std::string>({raw}).Map(kDecodeRaw.With({{"dtype", std::string("bfloat16")}})));
  ASSERT_EQ(decoded.size(), 1u);
  EXPECT_EQ(decoded[0].DebugString(), "bfloat16[2] {1, -2}");
  EXPECT_EQ(ParseDTypeName("bfloat16").value(), DType::kBFloat16);
}

}  // namespace
}  // namespace bfloat16_test_file
}  // namespace sluice::bfloat16_test
