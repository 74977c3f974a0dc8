// Streaming deflate (zlib, or ISA-L for inflating): an Inflater fed compressed chunks that hands out
// decompressed chunks, and a Deflater that appends compressed bytes to a string. Both are synchronous and
// allocation-bounded: one output buffer of `output_chunk_bytes` for the Inflater, whatever the input (no zip
// bomb can grow it).
//
// Inflater contract:
//   - Format kGzip reads gzip members (header fields such as mtime, OS, name are skipped, not checked);
//     several concatenated members are read as one stream, as gzip(1) does. kZlib reads one zlib stream
//     (RFC 1950). kAuto accepts either, detected from the first bytes. kRawDeflate reads RFC 1951 data.
//   - Feed(chunk) hands the next compressed chunk; the caller keeps it alive and unchanged until Next()
//     has returned an empty span (all of it consumed). Next() returns the next piece of decompressed
//     output (valid until the next call to Next()/Feed()/Finish()), or an empty span when it needs more
//     input. Finish() is called once at the end of the input.
//   - Errors: a corrupt stream is DataLoss "NAME: corrupt GZIP stream at compressed offset N: <cause>";
//     bytes after the end of a zlib stream, or after a gzip member that do not start another member, are
//     DataLoss naming their offset; Finish() in the middle of a stream is DataLoss "truncated". Errors are
//     sticky. Everything decompressed before an error is handed out first: the call that meets the damage
//     returns the output before it, and the next call (or Finish()) the error, so a stream whose trailer
//     CRC alone is bad yields all of its data, then DataLoss. (Bytes the decoder produced from the damaged
//     part before it noticed may be among that output: a checksum of the caller's, such as TFRecord's,
//     catches them.) An empty input is an empty stream (no error), as in TensorFlow.
//   - Library: kFastest decodes GZIP and ZLIB with Intel ISA-L's igzip when sluice was built with it
//     (about twice zlib's rate), zlib otherwise and for kAuto and kRawDeflate; kZlib and kIsal ask for
//     one (kIsal falls back to zlib where ISA-L cannot serve). library() says which one runs. The
//     environment variable SLUICE_INFLATE=zlib makes kFastest mean zlib (for side-by-side runs, or to
//     rule out a decoder). Output is the same bytes either way; errors have the same codes, offsets and,
//     where both libraries can tell, the same words (ISA-L's deflate errors are coarser than zlib's). From a
//     truncated stream ISA-L may decode a few bytes fewer before the error (it holds back a partial symbol).
//   - One thread at a time; movable.
//
//   Inflater inflater(ZlibFormat::kGzip, "/data/x.gz");
//   inflater.Feed(chunk);
//   for (;;) {
//     SLUICE_ASSIGN_OR_RETURN(std::span<const std::byte> out, inflater.Next());
//     if (out.empty()) break;  // feed the next chunk, or call Finish() at the end of the file
//     Consume(out);
//   }
#ifndef SLUICE_IO_ZLIB_STREAM_H_
#define SLUICE_IO_ZLIB_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "io/inflate_engine.h"

struct z_stream_s;

namespace sluice::io {

inline constexpr size_t kDefaultInflateChunkBytes = size_t{256} << 10;

enum class InflateLibrary { kFastest, kZlib, kIsal };

class Inflater {
 public:
  Inflater(ZlibFormat format, std::string name, size_t output_chunk_bytes = kDefaultInflateChunkBytes,
           InflateLibrary library = InflateLibrary::kFastest);
  Inflater(Inflater&&) noexcept;
  Inflater& operator=(Inflater&&) noexcept;
  ~Inflater();

  void Feed(std::span<const std::byte> chunk);
  absl::StatusOr<std::span<const std::byte>> Next();
  absl::Status Finish();

  // Compressed bytes consumed and decompressed bytes produced so far.
  uint64_t compressed_offset() const { return consumed_; }
  uint64_t decompressed_bytes() const { return produced_; }
  // kZlib or kIsal: the library that decodes this stream.
  InflateLibrary library() const { return library_; }

 private:
  absl::Status Error(absl::string_view what) const;
  absl::Status Init();

  ZlibFormat format_;
  std::string name_;
  InflateLibrary library_;
  std::unique_ptr<InflateEngine> engine_;
  bool initialized_ = false;
  bool in_stream_ = false;    // started a stream/member that has not ended yet
  bool ended_once_ = false;   // at least one stream/member ended
  bool output_was_full_ = false;
  std::span<const std::byte> input_;
  std::unique_ptr<std::byte[]> output_;
  size_t output_size_;
  uint64_t consumed_ = 0;
  uint64_t produced_ = 0;
  absl::Status status_;
};

// Deflater: Compress(data, out) appends compressed bytes for `data` to *out; Flush(out) is a zlib sync
// flush (everything so far becomes decodable); Finish(out) ends the stream (trailer included). Only
// kGzip and kZlib are accepted by Create(); level is -1 (default) or 0..9. Errors: InvalidArgument for bad
// options, Internal if zlib fails (it does not on valid use). One thread at a time; movable.
class Deflater {
 public:
  static absl::StatusOr<Deflater> Create(ZlibFormat format, int level = -1);
  Deflater(Deflater&&) noexcept;
  Deflater& operator=(Deflater&&) noexcept;
  ~Deflater();

  absl::Status Compress(std::span<const std::byte> data, std::string* out);
  absl::Status Flush(std::string* out);
  absl::Status Finish(std::string* out);

 private:
  Deflater() = default;
  absl::Status Run(std::span<const std::byte> data, int flush, std::string* out);

  std::unique_ptr<z_stream_s> stream_;
  bool finished_ = false;
};

}  // namespace sluice::io

#endif  // SLUICE_IO_ZLIB_STREAM_H_
