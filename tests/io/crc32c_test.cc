#include "io/crc32c.h"

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace sluice::io {
namespace crc32c_test_file {
namespace {

std::vector<unsigned char> Filled(size_t n, unsigned char v) { return std::vector<unsigned char>(n, v); }

using CrcFn = uint32_t (*)(uint32_t, const void*, size_t);

void CheckPublishedVectors(CrcFn fn) {
  // RFC 3720, appendix B.4.
  std::vector<unsigned char> zeros = Filled(32, 0x00);
  EXPECT_EQ(fn(0, zeros.data(), zeros.size()), 0x8A9136AAu);
  std::vector<unsigned char> ones = Filled(32, 0xFF);
  EXPECT_EQ(fn(0, ones.data(), ones.size()), 0x62A8AB43u);
  std::vector<unsigned char> up(32), down(32);
  for (int i = 0; i < 32; ++i) {
    up[i] = static_cast<unsigned char>(i);
    down[i] = static_cast<unsigned char>(31 - i);
  }
  EXPECT_EQ(fn(0, up.data(), up.size()), 0x46DD794Eu);
  EXPECT_EQ(fn(0, down.data(), down.size()), 0x113FDB5Cu);
  EXPECT_EQ(fn(0, "123456789", 9), 0xE3069283u);
  EXPECT_EQ(fn(0, "", 0), 0u);
}

TEST(Crc32cTest, PublishedVectorsPortable) { CheckPublishedVectors(&Crc32cPortable); }

TEST(Crc32cTest, PublishedVectorsHardware) {
  if (!Crc32cHardwareAvailable()) GTEST_SKIP() << "no SSE4.2/PCLMUL on this CPU";
  CheckPublishedVectors(&Crc32cHardware);
}

TEST(Crc32cTest, PublishedVectorsDispatch) {
  CheckPublishedVectors(&Crc32cExtend);
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
}

// Known TFRecord bytes: beam_foo.tfrecord stores length 3 with masked CRC b0 99 49 0e and "foo" with
// masked CRC 61 8a be fe (both little-endian).
TEST(Crc32cTest, TFRecordMaskedValues) {
  const unsigned char length[8] = {3, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(MaskCrc(Crc32c(length, 8)), 0x0e4999b0u);
  EXPECT_EQ(MaskCrc(Crc32c("foo", 3)), 0xfebe8a61u);
}

TEST(Crc32cTest, MaskRoundTripsAndChangesValue) {
  std::mt19937 rng(7);
  for (int i = 0; i < 1000; ++i) {
    const uint32_t v = rng();
    EXPECT_EQ(UnmaskCrc(MaskCrc(v)), v);
    EXPECT_NE(MaskCrc(v), v);
  }
}

// Lengths around every boundary of the hardware path: byte alignment prologue, 8-byte words, the
// three-lane short (3*256) and long (3*8192) blocks, and their remainders.
std::vector<size_t> InterestingLengths() {
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 80; ++n) lengths.push_back(n);
  for (size_t base : {768u, 1536u, 3 * 8192u, 2 * 3 * 8192u, 65536u}) {
    for (size_t d = 0; d < 20; ++d) {
      lengths.push_back(base + d);
      if (base > d) lengths.push_back(base - d);
    }
  }
  std::mt19937 rng(11);
  for (int i = 0; i < 60; ++i) lengths.push_back(rng() % 70001);
  return lengths;
}

TEST(Crc32cTest, HardwareMatchesPortableOnRandomBuffers) {
  if (!Crc32cHardwareAvailable()) GTEST_SKIP() << "no SSE4.2/PCLMUL on this CPU";
  std::mt19937 rng(1234);
  std::vector<unsigned char> buf(70000 + 64);
  for (auto& b : buf) b = static_cast<unsigned char>(rng());
  for (size_t n : InterestingLengths()) {
    for (size_t align = 0; align < 8; ++align) {
      ASSERT_LE(align + n, buf.size());
      const uint32_t seed = (align % 2 == 0) ? 0 : rng();
      ASSERT_EQ(Crc32cHardware(seed, buf.data() + align, n), Crc32cPortable(seed, buf.data() + align, n))
          << "length " << n << " alignment " << align << " seed " << seed;
    }
  }
}

TEST(Crc32cTest, ExtendEqualsOneShotAtSplitPoints) {
  std::mt19937 rng(99);
  std::vector<unsigned char> buf(30000);
  for (auto& b : buf) b = static_cast<unsigned char>(rng());
  const uint32_t whole = Crc32c(buf.data(), buf.size());
  EXPECT_EQ(Crc32cPortable(0, buf.data(), buf.size()), whole);
  for (size_t split : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{769}, size_t{24576},
                       size_t{29999}, size_t{30000}}) {
    const uint32_t head = Crc32c(buf.data(), split);
    EXPECT_EQ(Crc32cExtend(head, buf.data() + split, buf.size() - split), whole) << split;
    EXPECT_EQ(Crc32cPortable(Crc32cPortable(0, buf.data(), split), buf.data() + split, buf.size() - split),
              whole)
        << split;
  }
  // Three-way random splits.
  for (int i = 0; i < 50; ++i) {
    size_t a = rng() % buf.size(), b = rng() % buf.size();
    if (a > b) std::swap(a, b);
    uint32_t c = Crc32c(buf.data(), a);
    c = Crc32cExtend(c, buf.data() + a, b - a);
    c = Crc32cExtend(c, buf.data() + b, buf.size() - b);
    EXPECT_EQ(c, whole);
  }
}

TEST(Crc32cTest, DetectsSingleBitFlips) {
  std::vector<unsigned char> buf(4096, 0x5a);
  const uint32_t base = Crc32c(buf.data(), buf.size());
  for (size_t i = 0; i < buf.size(); i += 97) {
    buf[i] ^= 0x10;
    EXPECT_NE(Crc32c(buf.data(), buf.size()), base) << i;
    buf[i] ^= 0x10;
  }
}

}  // namespace
}  // namespace crc32c_test_file
}  // namespace sluice::io
