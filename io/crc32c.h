// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), as used by TFRecord framing.
//
// Contract: Crc32c(data, n) is the standard CRC-32C of n bytes (initial value and final xor 0xFFFFFFFF),
// e.g. Crc32c("123456789", 9) == 0xE3069283. Crc32cExtend(crc, data, n) continues a CRC returned by an
// earlier call, so Crc32cExtend(Crc32c(a), b) == Crc32c(a ++ b); Crc32cExtend(0, d, n) == Crc32c(d, n).
// The dispatching functions use SSE4.2 `crc32` (three interleaved streams, combined with PCLMULQDQ) when
// the CPU has SSE4.2 and PCLMUL, decided once at run time, and the portable slicing-by-8 code otherwise.
// Crc32cPortable / Crc32cHardware are exposed for tests and benchmarks; Crc32cHardware must only be called
// when Crc32cHardwareAvailable() is true. All functions are pure and thread-safe; no errors.
//
// MaskCrc / UnmaskCrc implement TFRecord's masking (rotate right by 15, then add 0xA282EAD8), which keeps
// a CRC of data that itself contains CRCs from being degenerate.
//
//   uint32_t stored = io::MaskCrc(io::Crc32c(bytes.data(), bytes.size()));
//   bool ok = io::UnmaskCrc(stored) == io::Crc32c(bytes.data(), bytes.size());
#ifndef SLUICE_IO_CRC32C_H_
#define SLUICE_IO_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace sluice::io {

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n);
inline uint32_t Crc32c(const void* data, size_t n) { return Crc32cExtend(0, data, n); }

// Explicit implementations; same contract as Crc32cExtend.
uint32_t Crc32cPortable(uint32_t crc, const void* data, size_t n);
uint32_t Crc32cHardware(uint32_t crc, const void* data, size_t n);
bool Crc32cHardwareAvailable();

inline constexpr uint32_t kCrcMaskDelta = 0xa282ead8u;

inline constexpr uint32_t MaskCrc(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + kCrcMaskDelta;
}

inline constexpr uint32_t UnmaskCrc(uint32_t masked) {
  const uint32_t rot = masked - kCrcMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace sluice::io

#endif  // SLUICE_IO_CRC32C_H_
