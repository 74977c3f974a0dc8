// StandardizeBytes: unsigned 8-bit values (image pixels) to standardised floats, the decode step of image
// pipelines: out[i] = (float(in[i]) * scale - mean) * inv_std, each operation rounded as that scalar
// expression is (no fused multiply-add on baseline x86-64), so results equal a plain loop's bit for bit.
// It runs four values per SSE2 instruction where the target has SSE2 (every x86-64): GCC 12 at -O2 leaves
// the plain loop scalar (its "very cheap" vectorisation cost model).
//
//   StandardizeBytes(bytes, 1.0f / 255.0f, 0.2860f, 1.0f / 0.3530f, pixels.data<float>());
#ifndef SLUICE_IO_STANDARDIZE_H_
#define SLUICE_IO_STANDARDIZE_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "sluice/export.h"

namespace sluice {

// Writes in.size() floats to out (which must have room for them; the ranges must not overlap).
SLUICE_EXPORT void StandardizeBytes(std::span<const uint8_t> in, float scale, float mean, float inv_std,
                                    float* out);

// The same over a byte string (a bytes feature of a tf.train.Example).
inline void StandardizeBytes(std::string_view in, float scale, float mean, float inv_std, float* out) {
  StandardizeBytes(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(in.data()), in.size()), scale,
                   mean, inv_std, out);
}

}  // namespace sluice

#endif  // SLUICE_IO_STANDARDIZE_H_
