// In-memory TFRecord writer: builds a TFRecord byte stream (optionally GZIP/ZLIB compressed) in a string.
// TFRecordWriter (include/sluice/io/tfrecord.h) is this plus write(2); tests use it directly to build inputs.
//
// Contract: Write() appends one framed record; output() holds the bytes produced so far (for compressed
// streams zlib may hold some back until Flush() or Finish()). Finish() ends the stream (gzip/zlib
// trailer); afterwards Write() is FailedPrecondition. TakeOutput() moves the bytes out so a caller can
// write them and keep the memory bounded. Errors: InvalidArgument for bad options, FailedPrecondition on
// use after Finish(). One thread at a time; movable.
//
//   SLUICE_ASSIGN_OR_RETURN(TFRecordBufferWriter w, TFRecordBufferWriter::Create(Compression::kGzip));
//   SLUICE_RETURN_IF_ERROR(w.Write("a"));
//   SLUICE_RETURN_IF_ERROR(w.Finish());
//   std::string file_bytes = w.TakeOutput();
#ifndef SLUICE_IO_TFRECORD_WRITER_H_
#define SLUICE_IO_TFRECORD_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "io/zlib_stream.h"
#include "sluice/io/tfrecord.h"

namespace sluice::io {

class TFRecordBufferWriter {
 public:
  static absl::StatusOr<TFRecordBufferWriter> Create(Compression compression, int compression_level = -1);

  absl::Status Write(std::span<const std::byte> record);
  absl::Status Write(absl::string_view record);
  absl::Status Flush();
  absl::Status Finish();

  const std::string& output() const { return output_; }
  std::string TakeOutput();
  uint64_t records_written() const { return records_written_; }
  bool finished() const { return finished_; }
  Compression compression() const { return compression_; }

 private:
  explicit TFRecordBufferWriter(Compression compression) : compression_(compression) {}

  Compression compression_;
  std::optional<Deflater> deflater_;
  std::string output_;
  std::string scratch_;  // one framed small record, so it reaches zlib in a single call
  uint64_t records_written_ = 0;
  bool finished_ = false;
};

// Encodes `records` as one complete TFRecord stream with the given compression.
absl::StatusOr<std::string> EncodeTFRecords(std::span<const std::string> records,
                                            Compression compression = Compression::kNone,
                                            int compression_level = -1);

}  // namespace sluice::io

#endif  // SLUICE_IO_TFRECORD_WRITER_H_
