// Internal: XXH64 (Yann Collet's xxHash, 64-bit variant), written from its published specification.
// A fixed, unseeded-by-process hash: the same bytes give the same value in every process, on every run
// and build, which is what a pipeline fingerprint needs (absl::Hash is reseeded per process).
#ifndef SLUICE_ENGINE_XXHASH64_H_
#define SLUICE_ENGINE_XXHASH64_H_

#include <cstdint>
#include <string_view>

namespace sluice {

uint64_t XxHash64(std::string_view bytes, uint64_t seed = 0);

}  // namespace sluice

#endif  // SLUICE_ENGINE_XXHASH64_H_
