// TFRecordSource: the records of one FILE argument, a regular file by path or a stream on stdin ("-").
//
// Contract:
// - Open(path, compression, stdin_fd): "-" means the already open `stdin_fd`, read front to back with
//   read(2) in 1 MiB chunks through the same decoder ReadTFRecords uses (so the records and error
//   messages are the same), whatever it is: a pipe, a FIFO, a terminal, a file. Memory stays bounded by
//   one chunk, the inflater's window and the largest record, whatever the length of the stream. A path
//   must be a regular file (or block device), read later by the library's ReadTFRecords on
//   DefaultReactor() (its default read path). It is opened non-blocking and its type taken from the open
//   fd before anything is read, so a FIFO, a character device or a socket given by path is
//   FailedPrecondition at once, naming the path, its kind and how to stream it (`sluice inspect - <
//   PATH`): a FIFO without a writer used to block the open forever, one with a writer lost the data read
//   before the failure, and /dev/zero was read forever.
// - Compression: taken as given, or detected from the first 12 bytes (a valid uncompressed record header,
//   else the gzip magic, else a zlib header; an empty input is uncompressed). For a stream, the bytes read
//   to detect it are kept and decoded as the start of the stream.
// - Errors from Open: the open/stat/read error, naming the path (NotFound, PermissionDenied, ...;
//   FailedPrecondition for a symbolic link loop); FailedPrecondition for a directory or any other file
//   that is not regular (see above).
// - Scan(visitor) hands every record (payload, byte offset in the possibly decompressed stream) and every
//   error element to the visitor in stream order, as ReadTFRecords does; a data CRC mismatch is followed
//   by the next record, while truncation, a bad length CRC and I/O errors are the last element. The
//   visitor returns false to stop reading early. Scan is called at most once.
// - Threading: Scan blocks the caller; the visitor runs on the library's thread pool for regular files and
//   on the caller's thread for streams, one call at a time either way.
//
//   absl::StatusOr<TFRecordSource> source = TFRecordSource::Open("-", std::nullopt, STDIN_FILENO);
//   if (!source.ok()) return Report(source.status());
//   source->Scan(visitor);
#ifndef SLUICE_TOOLS_SLUICE_RECORD_SOURCE_H_
#define SLUICE_TOOLS_SLUICE_RECORD_SOURCE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sluice/io/tfrecord.h"

namespace sluice::tools {

// The compression that the first bytes of a TFRecord file suggest (see the contract above).
Compression DetectCompression(std::span<const unsigned char> head);

class RecordVisitor {
 public:
  virtual ~RecordVisitor() = default;
  // Each returns false to stop reading.
  virtual bool OnRecord(std::string_view data, uint64_t offset) = 0;
  virtual bool OnError(const absl::Status& error) = 0;
};

class TFRecordSource {
 public:
  static absl::StatusOr<TFRecordSource> Open(const std::string& path, std::optional<Compression> compression,
                                             int stdin_fd);

  TFRecordSource(TFRecordSource&& other) noexcept;
  TFRecordSource& operator=(TFRecordSource&&) = delete;
  TFRecordSource(const TFRecordSource&) = delete;
  ~TFRecordSource();

  // The bytes of the file or stream read (the whole size for a regular file).
  uint64_t Scan(RecordVisitor& visitor);

  // "<stdin>" for "-", else the path; used in messages.
  const std::string& name() const { return name_; }
  Compression compression() const { return compression_; }
  bool detected() const { return detected_; }
  bool is_stream() const { return fd_ >= 0; }

 private:
  TFRecordSource() = default;
  uint64_t ScanStream(RecordVisitor& visitor);

  std::string path_;
  std::string name_;
  Compression compression_ = Compression::kNone;
  bool detected_ = false;
  uint64_t file_bytes_ = 0;  // regular files
  int fd_ = -1;              // the stream (stdin, not owned)
  std::string head_;  // stream bytes read before Scan (to detect the compression)
};

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_SLUICE_RECORD_SOURCE_H_
