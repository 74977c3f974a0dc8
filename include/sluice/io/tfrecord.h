// TFRecord files: compression types, reader options and a synchronous writer.
//
// Format (TensorFlow's, byte for byte): each record is
//   uint64 little-endian length | uint32 masked CRC32C of those 8 bytes | data | uint32 masked CRC32C of data
// with mask(crc) = rotate_right(crc, 15) + 0xA282EAD8. A GZIP or ZLIB file is that stream compressed as a
// whole (not per record), which is what tf.io.TFRecordWriter and tf.data.TFRecordDataset write and read.
//
// Compression: ParseCompression accepts TensorFlow's compression_type strings "" (or "NONE"), "GZIP" and
// "ZLIB" in any letter case ("gzip", "Zlib", "none"); anything else is InvalidArgument.
//
// TFRecordWriter: writes records in order to one file through a large user-space buffer and plain POSIX
// write(2). Errors are absl::Status values naming the path and the errno text; after a failed call the
// writer is broken and every later call returns the same error. A writer is used by one thread at a time
// (no internal locking); it is movable. Destroying an open writer closes it and drops any error; call
// Close() to see it. Not a hot-path component: it is for tools, tests and conversion.
//
//   TFRecordWriterOptions options;
//   options.compression = Compression::kGzip;
//   SLUICE_ASSIGN_OR_RETURN(TFRecordWriter w, TFRecordWriter::Open("/tmp/x.tfrecord.gz", options));
//   SLUICE_RETURN_IF_ERROR(w.Write("payload"));
//   SLUICE_RETURN_IF_ERROR(w.Close());
#ifndef SLUICE_IO_TFRECORD_H_
#define SLUICE_IO_TFRECORD_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sluice/export.h"

namespace sluice {

enum class Compression { kNone, kGzip, kZlib };

// "" / "NONE" -> kNone, "GZIP" -> kGzip, "ZLIB" -> kZlib, ignoring ASCII case (so command lines and config
// files may say "gzip"); no trimming, so " gzip" is InvalidArgument, as is any other name.
SLUICE_EXPORT absl::StatusOr<Compression> ParseCompression(absl::string_view name);
// TensorFlow's spelling: "", "GZIP" or "ZLIB".
SLUICE_EXPORT absl::string_view CompressionName(Compression compression);

inline constexpr uint64_t kDefaultMaxRecordBytes = uint64_t{256} << 20;

// How a TFRecord stream is read (used by the readers in io/ and by dataset sources).
struct TFRecordReaderOptions {
  Compression compression = Compression::kNone;
  // Verify both the length CRC and the data CRC of every record (TensorFlow always does).
  bool verify_crc = true;
  // A record whose stated length exceeds this is DataLoss (the length is never allocated); the rest of
  // the file is unreadable, since record boundaries are lost.
  uint64_t max_record_bytes = kDefaultMaxRecordBytes;
  // When a record's data CRC mismatches, skip it silently (counted) instead of returning DataLoss.
  // Without it the error is returned and reading may continue with the next record.
  bool skip_corrupt_records = false;
  // Where reading starts: the byte offset of a record's header in the (decompressed) stream, as
  // Record::offset reports it; 0 is the start. See "Starting at an offset" in sluice/io/record_readers.h.
  uint64_t start_offset = 0;
};

struct TFRecordWriterOptions {
  Compression compression = Compression::kNone;
  // zlib level 0..9, or -1 for zlib's default (6), the same as TensorFlow's default.
  int compression_level = -1;
  // Bytes collected in memory before a write(2).
  size_t buffer_bytes = size_t{4} << 20;
};

class SLUICE_EXPORT TFRecordWriter {
 public:
  // Creates or truncates `path`. Errors: InvalidArgument for a bad option, the errno mapping of open(2).
  static absl::StatusOr<TFRecordWriter> Open(std::string path, TFRecordWriterOptions options = {});

  TFRecordWriter(TFRecordWriter&&) noexcept;
  TFRecordWriter& operator=(TFRecordWriter&&) noexcept;
  ~TFRecordWriter();

  // Appends one record (any bytes, including empty).
  absl::Status Write(absl::string_view record);
  absl::Status Write(std::span<const std::byte> record);
  // Pushes everything written so far to the file; for GZIP/ZLIB a zlib sync flush, so a reader of the
  // partial file sees every record written so far (the stream trailer is still missing).
  absl::Status Flush();
  // Finishes the compressed stream, writes and closes the file. Idempotent; later Write() fails.
  absl::Status Close();

  const std::string& path() const;
  uint64_t records_written() const;

 private:
  class SLUICE_NO_EXPORT Impl;
  explicit TFRecordWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice

#endif  // SLUICE_IO_TFRECORD_H_
