// Functions the library registers itself, so that any program, and the stock `sluice worker`, can build
// and rebuild pipelines that use them with no registration of its own (docs/portable-pipelines.md).
//
//   auto ds = sluice::ListFiles({"train-*.tfrecord"}, /*shuffle=*/true, /*seed=*/1)
//                 .Interleave(sluice::kReadTFRecord.With(), /*cycle_length=*/4)
//                 .ParseExample(spec)   // spec: image (string, []), label (int64, [])
//                 .Map(sluice::kExampleToPair.With({{"decode_raw", std::string("uint8")},
//                                                   {"cast", std::string("float")}, {"scale", 1 / 255.0}}));
//
// Contract:
// - kReadTFRecord (path -> its records): argument `compression` ("auto" by default: ".gz" is GZIP,
//   ".zlib" ZLIB, anything else uncompressed; or "", "NONE", "GZIP", "ZLIB"), `read_mode` ("auto",
//   "read", "mmap") and `buffer_size` (bytes per read, 0 = the default). For Interleave over ListFiles, as
//   tf.data's TFRecordDataset over a file list; TFRecord(files, {.num_parallel_reads = N}) builds that.
// - kDecodeRaw (bytes -> 1-D tensor), tf.io.decode_raw: `dtype` (a DTypeName, or "float32"/"float64"/
//   "float16"; not string), `little_endian` (default true), optional `shape` (a list of ints; -1 once for
//   "the rest"). A byte count that is not a multiple of the element size, or does not fit the shape, is
//   InvalidArgument naming both.
// - kExampleToPair (parsed Example -> (first, second) tensors): the fixed features at indices `first`
//   (default 0) and `second` (default 1) of the ParseSpec, or named by them (strings: "image"). `decode_raw`
//   (a dtype) decodes a scalar string `first` as kDecodeRaw does; `cast` converts `first` to another numeric
//   dtype, then `scale` and `offset` (defaults 1 and 0; needs a floating dtype) give first * scale + offset.
//   Bad indices or arguments are InvalidArgument when the op is defined; bad records are the element's error.
// - Names starting "sluice." are the library's; a user registration of one aborts at startup.
#ifndef SLUICE_OPS_LIBRARY_FUNCTIONS_H_
#define SLUICE_OPS_LIBRARY_FUNCTIONS_H_

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "sluice/export.h"
#include "sluice/io/example.h"
#include "sluice/io/tensor.h"
#include "sluice/ops/dataset.h"
#include "sluice/ops/function_registry.h"

namespace sluice {

inline constexpr Function<Dataset<std::string>(std::string)> kReadTFRecord{"sluice.read_tfrecord"};
inline constexpr Function<absl::StatusOr<Tensor>(std::string)> kDecodeRaw{"sluice.decode_raw"};
inline constexpr Function<absl::StatusOr<std::pair<Tensor, Tensor>>(ParsedExample)> kExampleToPair{
    "sluice.example_to_pair"};

// Registers the functions above, once. FindFunction calls it, so handles work without it; a program
// listing RegisteredFunctionNames() gets them too.
SLUICE_EXPORT void EnsureLibraryFunctions();

// The dtype named by DTypeName (or "float32", "float64", "float16"); InvalidArgument naming `name` else.
SLUICE_EXPORT absl::StatusOr<DType> ParseDTypeName(std::string_view name);

}  // namespace sluice

#endif  // SLUICE_OPS_LIBRARY_FUNCTIONS_H_
