// StandardizeBytes: the vector kernel gives the plain expression's floats bit for bit.
#include "sluice/io/standardize.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace sluice {
namespace standardize_test_file {
namespace {

constexpr float kScale = 1.0f / 255.0f;
constexpr float kMean = 0.2860f;
constexpr float kInvStd = 1.0f / 0.3530f;

// Kept out of line so that the compiler cannot fold it into the kernel's own code.
__attribute__((noinline)) float Plain(uint8_t byte, float scale, float mean, float inv_std) {
  return (static_cast<float>(byte) * scale - mean) * inv_std;
}

uint32_t Bits(float x) {
  uint32_t bits = 0;
  std::memcpy(&bits, &x, sizeof(bits));
  return bits;
}

TEST(StandardizeBytesTest, EveryByteValueEqualsThePlainExpressionBitForBit) {
  std::vector<uint8_t> bytes(256);
  for (int v = 0; v < 256; ++v) bytes[static_cast<size_t>(v)] = static_cast<uint8_t>(v);
  std::vector<float> out(bytes.size());
  StandardizeBytes(std::span<const uint8_t>(bytes), kScale, kMean, kInvStd, out.data());
  for (int v = 0; v < 256; ++v) {
    ASSERT_EQ(Bits(out[static_cast<size_t>(v)]), Bits(Plain(static_cast<uint8_t>(v), kScale, kMean, kInvStd)))
        << "byte " << v;
  }
}

// Every length up to three vector steps and every start offset: the tails and unaligned loads.
TEST(StandardizeBytesTest, AnyLengthAndAlignment) {
  std::string source(80, '\0');
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<char>(i * 37 + 11);
  for (size_t offset = 0; offset < 16; ++offset) {
    for (size_t length = 0; length + offset <= 64; ++length) {
      std::vector<float> out(length + 1, -7.0f);  // one past the end must stay untouched
      StandardizeBytes(std::string_view(source).substr(offset, length), 0.5f, 3.0f, 2.0f, out.data());
      for (size_t i = 0; i < length; ++i) {
        ASSERT_EQ(Bits(out[i]), Bits(Plain(static_cast<uint8_t>(source[offset + i]), 0.5f, 3.0f, 2.0f)))
            << "offset " << offset << ", length " << length << ", index " << i;
      }
      ASSERT_EQ(out[length], -7.0f) << "offset " << offset << ", length " << length;
    }
  }
}

}  // namespace
}  // namespace standardize_test_file
}  // namespace sluice
