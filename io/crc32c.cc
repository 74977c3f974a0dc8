#include "io/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#include <wmmintrin.h>
#endif

namespace sluice::io {
namespace {

constexpr uint32_t kPoly = 0x82f63b78u;  // reflected Castagnoli polynomial

// tables[k][b] is the CRC register after feeding byte b followed by k zero bytes (slicing-by-8).
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1) ? kPoly : 0);
    t[0][b] = c;
  }
  for (uint32_t b = 0; b < 256; ++b) {
    for (int k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  }
  return t;
}

constexpr Tables kTables = MakeTables();

inline uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;  // little-endian host assumed (x86-64, aarch64 LE)
}

// Polynomials mod P in the reflected representation: bit 31 is x^0, bit 0 is x^31.
// Product of a and b mod P, one bit of a at a time; only used to derive constants.
constexpr uint32_t MulModP(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (int i = 0; i < 32; ++i) {
    if (a & (0x80000000u >> i)) product ^= b;
    b = (b >> 1) ^ ((b & 1) ? kPoly : 0);  // b *= x
  }
  return product;
}

// x^n mod P by square-and-multiply.
constexpr uint32_t XPowModP(uint64_t n) {
  uint32_t result = 0x80000000u;  // x^0
  uint32_t base = 0x40000000u;    // x^1
  while (n != 0) {
    if (n & 1) result = MulModP(result, base);
    base = MulModP(base, base);
    n >>= 1;
  }
  return result;
}

static_assert(MulModP(0x80000000u, 0x12345678u) == 0x12345678u, "x^0 is the identity");

#if defined(__x86_64__)

// Lane lengths for the three-stream loops. Long lanes amortise the two combine steps; the short lanes
// keep medium buffers (a few KiB) on the fast path. Both are multiples of 8.
constexpr size_t kLongLane = 8192;
constexpr size_t kShortLane = 256;

// Shifting a CRC register over L zero bytes multiplies it by x^(8L) mod P. A 32x32 carry-less product
// of reflected values carries an extra factor x, and crc32_u64(0, v) multiplies a 64-bit value by x^32,
// so multiplying by the constant x^(8L-33) before the reduction yields crc * x^(8L).
constexpr uint32_t ShiftConstant(size_t lane_bytes) { return XPowModP(8 * lane_bytes - 33); }

constexpr uint32_t kLong1 = ShiftConstant(kLongLane);
constexpr uint32_t kLong2 = ShiftConstant(2 * kLongLane);
constexpr uint32_t kShort1 = ShiftConstant(kShortLane);
constexpr uint32_t kShort2 = ShiftConstant(2 * kShortLane);

__attribute__((target("sse4.2,pclmul"))) inline uint32_t Shift(uint32_t crc, uint32_t constant) {
  const __m128i product = _mm_clmulepi64_si128(_mm_cvtsi32_si128(static_cast<int>(crc)),
                                               _mm_cvtsi32_si128(static_cast<int>(constant)), 0);
  return static_cast<uint32_t>(_mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(product))));
}

// Three independent crc32 chains over consecutive lanes hide the instruction's 3-cycle latency.
template <size_t kLane>
__attribute__((target("sse4.2,pclmul"))) inline uint64_t ThreeLanes(uint64_t crc,
                                                                    const unsigned char*& p, size_t& n,
                                                                    uint32_t k1, uint32_t k2) {
  while (n >= 3 * kLane) {
    uint64_t c0 = crc, c1 = 0, c2 = 0;
    for (size_t i = 0; i < kLane; i += 8) {
      c0 = _mm_crc32_u64(c0, Load64(p + i));
      c1 = _mm_crc32_u64(c1, Load64(p + kLane + i));
      c2 = _mm_crc32_u64(c2, Load64(p + 2 * kLane + i));
    }
    crc = Shift(static_cast<uint32_t>(c0), k2) ^ Shift(static_cast<uint32_t>(c1), k1) ^ c2;
    p += 3 * kLane;
    n -= 3 * kLane;
  }
  return crc;
}

#endif  // __x86_64__

}  // namespace

uint32_t Crc32cPortable(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  while (n != 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xff];
    --n;
  }
  while (n >= 8) {
    const uint64_t v = Load64(p) ^ c;
    c = kTables[7][v & 0xff] ^ kTables[6][(v >> 8) & 0xff] ^ kTables[5][(v >> 16) & 0xff] ^
        kTables[4][(v >> 24) & 0xff] ^ kTables[3][(v >> 32) & 0xff] ^ kTables[2][(v >> 40) & 0xff] ^
        kTables[1][(v >> 48) & 0xff] ^ kTables[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n != 0) {
    c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xff];
    --n;
  }
  return ~c;
}

#if defined(__x86_64__)

__attribute__((target("sse4.2,pclmul"))) uint32_t Crc32cHardware(uint32_t crc, const void* data,
                                                                  size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t c = static_cast<uint32_t>(~crc);
  while (n != 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
    --n;
  }
  c = ThreeLanes<kLongLane>(c, p, n, kLong1, kLong2);
  c = ThreeLanes<kShortLane>(c, p, n, kShort1, kShort2);
  while (n >= 8) {
    c = _mm_crc32_u64(c, Load64(p));
    p += 8;
    n -= 8;
  }
  while (n != 0) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
    --n;
  }
  return ~static_cast<uint32_t>(c);
}

bool Crc32cHardwareAvailable() {
  // __builtin_cpu_init makes the answer right even when the first call comes from a static initialiser.
  static const bool available = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul");
  }();
  return available;
}

#else

uint32_t Crc32cHardware(uint32_t crc, const void* data, size_t n) { return Crc32cPortable(crc, data, n); }
bool Crc32cHardwareAvailable() { return false; }

#endif

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n) {
  return Crc32cHardwareAvailable() ? Crc32cHardware(crc, data, n) : Crc32cPortable(crc, data, n);
}

}  // namespace sluice::io
