// Mix64: splitmix64's finaliser, the one bit mixer behind sluice's seeds (SplitMix64's outputs, Shuffle's
// and ListFiles' pass seeds, nested datasets' slot seeds, IteratorState's pass numbers). One definition,
// so that the orders they produce cannot drift apart between copies.
#ifndef SLUICE_OPS_DETAIL_MIX64_H_
#define SLUICE_OPS_DETAIL_MIX64_H_

#include <cstdint>

namespace sluice::ops::detail_mix {

// splitmix64's increment (2^64 divided by the golden ratio, odd).
inline constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ULL;

// A well-mixed 64-bit value of x (a bijection).
constexpr uint64_t Mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace sluice::ops::detail_mix

#endif  // SLUICE_OPS_DETAIL_MIX64_H_
