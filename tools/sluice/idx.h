// IDX files (the MNIST / Fashion-MNIST array format): a synchronous reader that validates the header.
//
// Format: bytes 0-1 are zero; byte 2 is the element type (0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32,
// 0x0D float32, 0x0E float64); byte 3 is the number of dimensions; then one big-endian uint32 per
// dimension; then the elements in row-major order, big-endian for multi-byte types. So the classic
// "magic numbers" are 2049 (0x00000801: uint8, 1 dim, labels) and 2051 (0x00000803: uint8, 3 dims, images).
//
// Contract of ReadIdxFile:
//   - Reads the whole file into memory (tens of MB for MNIST; this is a conversion-time tool, not a hot
//     path). A gzip-compressed file (detected from its first two bytes 1F 8B, whatever its name) is
//     decompressed transparently; concatenated gzip members count as one stream, as gzip(1) reads them.
//   - IdxArray::bytes holds the element bytes exactly as stored (multi-byte types stay big-endian; use
//     the Element*() helpers to read them as host values).
//   - Errors (absl::Status, every message names the path):
//       open/read failures: the errno mapping (NotFound for a missing file, ...);
//       InvalidArgument: not an IDX file (first two bytes not zero), unknown type byte, zero dimensions,
//         or a size that overflows 64 bits;
//       DataLoss: file shorter than its header, or total size != header + product(dims) * element size
//         (truncated data or trailing bytes), naming the expected and actual sizes; a corrupt gzip stream.
//     Decompression stops once the output exceeds the expected size by a chunk, so a gzip bomb costs no
//     more memory than the array it claims to be; the rest is inflated into a scratch buffer only to
//     report the actual size.
//   - Threading: pure function of the file; call it from any thread.
//
//   SLUICE_ASSIGN_OR_RETURN(io::IdxArray images, io::ReadIdxFile("/data/train-images-idx3-ubyte.gz"));
//   // images.type == IdxType::kUint8, images.dims == {60000, 28, 28}, images.bytes.size() == 47040000
#ifndef SLUICE_TOOLS_SLUICE_IDX_H_
#define SLUICE_TOOLS_SLUICE_IDX_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sluice::io {

enum class IdxType : uint8_t {
  kUint8 = 0x08,
  kInt8 = 0x09,
  kInt16 = 0x0B,
  kInt32 = 0x0C,
  kFloat32 = 0x0D,
  kFloat64 = 0x0E,
};

// Bytes per element of `type` (1, 1, 2, 4, 4, 8).
size_t IdxElementSize(IdxType type);
// "uint8", "int8", "int16", "int32", "float32", "float64".
absl::string_view IdxTypeName(IdxType type);

struct IdxArray {
  IdxType type = IdxType::kUint8;
  std::vector<uint32_t> dims;
  std::string bytes;  // row-major elements as stored in the file (big-endian for multi-byte types)

  // The 32-bit magic number as the file states it, e.g. 2051 for uint8 images with 3 dims.
  uint32_t magic() const {
    return (uint32_t{static_cast<uint8_t>(type)} << 8) | static_cast<uint32_t>(dims.size());
  }
  // Product of dims.
  uint64_t num_elements() const;
  size_t element_size() const { return IdxElementSize(type); }
  // Element i converted to a host value; i < num_elements() is the caller's precondition.
  int64_t ElementAsInt64(uint64_t i) const;
  double ElementAsDouble(uint64_t i) const;
};

absl::StatusOr<IdxArray> ReadIdxFile(std::string path);

// Parses an IDX file already in memory (the decompressed bytes); `name` is used in error messages.
absl::StatusOr<IdxArray> ParseIdx(std::string bytes, absl::string_view name);

}  // namespace sluice::io

#endif  // SLUICE_TOOLS_SLUICE_IDX_H_
