// TFRecord framing: encoding one record, and a streaming parser fed byte chunks.
//
// Record layout (TensorFlow's): u64 LE length | u32 LE masked CRC32C(length bytes) | data |
// u32 LE masked CRC32C(data); 16 bytes of framing per record.
//
// TFRecordParser contract:
//   - Feed(chunk) hands the next chunk of the (uncompressed) stream. The caller keeps the chunk alive and
//     unchanged until Next() returns std::nullopt, which means every byte of it has been consumed (the
//     tail of a record that continues in the next chunk is copied into an internal reused buffer). Feed()
//     before that is a precondition violation (the unconsumed rest would be lost; it is detected and
//     reported by the next Next() as FailedPrecondition).
//   - Next() returns the records in file order: a TFRecordView whose `data` points into the fed chunk when
//     the whole record lies inside it (zero copy) or into the parser's buffer otherwise. A view is valid
//     until the next call to Next(), Feed() or Finish(); call ToOwned() (or copy) to keep it.
//     std::nullopt means "feed more, or Finish() at end of input".
//   - Finish() at end of input: OK at a record boundary, else DataLoss
//     "FILE: truncated record at offset N: expected X bytes, file ends after Y".
//   - Errors, DataLoss unless said otherwise, all naming options.file_name and the record's byte offset:
//       length CRC mismatch: "...: corrupted record at offset N: length CRC mismatch (...); the rest of the
//         file is unreadable" (sticky: every later call returns it);
//       length over options.max_record_bytes: names the length and the limit, never allocates it (sticky);
//       a length that cannot be allocated (more than AllocationCeiling(), io/memory_limit.h, or the
//         allocator refused to grow the buffer of a record that straddles chunks): ResourceExhausted
//         naming the record's offset and length (sticky);
//       data CRC mismatch: "...: corrupted record at offset N: data CRC mismatch (...)". Framing is intact,
//         so the next Next() continues with the following record; with skip_corrupt_records the record is
//         skipped without an error and counted in skipped_records().
//   - Offsets are in the bytes given to the parser: for a compressed file that is the decompressed stream,
//     so a reader that decompresses should say so in file_name (TFRecordDecoder does).
//   - Not thread-safe; one parser per stream. Cost per record: two CRCs and at most one copy of the bytes.
//
//   TFRecordParserOptions options;
//   options.file_name = "/data/train.tfrecord";
//   TFRecordParser parser(options);
//   while (ReadChunk(&chunk)) {
//     parser.Feed(chunk);
//     for (;;) {
//       SLUICE_ASSIGN_OR_RETURN(std::optional<TFRecordView> record, parser.Next());
//       if (!record) break;
//       Use(record->data);
//     }
//   }
//   SLUICE_RETURN_IF_ERROR(parser.Finish());
//
// TFRecordDecoder: the same contract for a possibly compressed file: it owns an Inflater for GZIP/ZLIB and
// a TFRecordParser; Feed() takes raw file chunks. Corrupt or truncated compressed data is DataLoss naming
// the compressed offset. With options.start_offset on a compressed file, Finish() on a stream that ends
// before it is OutOfRange naming the offset and the decompressed size.
#ifndef SLUICE_IO_TFRECORD_FORMAT_H_
#define SLUICE_IO_TFRECORD_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
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

inline constexpr size_t kTFRecordHeaderBytes = 12;
inline constexpr size_t kTFRecordFooterBytes = 4;

// Writes the 12 header bytes for a record of `length` bytes.
void EncodeTFRecordHeader(uint64_t length, std::byte header[kTFRecordHeaderBytes]);
// Writes the 4 footer bytes (masked CRC32C of `data`).
void EncodeTFRecordFooter(std::span<const std::byte> data, std::byte footer[kTFRecordFooterBytes]);
// Appends a whole framed record to *out.
void AppendTFRecord(std::span<const std::byte> data, std::string* out);
void AppendTFRecord(absl::string_view data, std::string* out);

inline std::span<const std::byte> AsBytes(absl::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}
inline absl::string_view AsStringView(std::span<const std::byte> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// An owned record.
struct TFRecord {
  std::string data;
  uint64_t offset = 0;
};

// A borrowed record: see TFRecordParser for how long `data` stays valid.
struct TFRecordView {
  std::span<const std::byte> data;
  uint64_t offset = 0;  // byte offset of the record's header in the stream
  TFRecord ToOwned() const { return {std::string(AsStringView(data)), offset}; }
  absl::string_view str() const { return AsStringView(data); }
};

struct TFRecordParserOptions {
  bool verify_crc = true;
  uint64_t max_record_bytes = kDefaultMaxRecordBytes;
  bool skip_corrupt_records = false;
  std::string file_name;  // for messages
  // The stream offset of the first byte the parser is fed (a record boundary): offsets count from it.
  // TFRecordDecoder over a compressed file is fed the file from its start and drops this many
  // decompressed bytes first; over an uncompressed one it is fed from this offset, like the parser.
  uint64_t start_offset = 0;
};

// The parser options for one file read with the public reader options.
TFRecordParserOptions ParserOptionsFor(const TFRecordReaderOptions& options, std::string file_name);

class TFRecordParser {
 public:
  explicit TFRecordParser(TFRecordParserOptions options = {});
  TFRecordParser(TFRecordParser&&) noexcept = default;
  TFRecordParser& operator=(TFRecordParser&&) noexcept = default;

  void Feed(std::span<const std::byte> chunk);
  absl::StatusOr<std::optional<TFRecordView>> Next();
  absl::Status Finish();

  // Offset of the first byte not yet returned as part of a record (the next record's header).
  uint64_t record_start() const { return record_start_; }
  // Once the fed chunk is consumed: the offset where the next record that has not begun yet starts (after
  // the record whose body is partly buffered, if any); nullopt while a header is partly assembled or after
  // an unrecoverable error.
  std::optional<uint64_t> NextUnstartedRecord() const;
  // Records that start at or after `begin` and end at or before `end` have data CRCs already checked by
  // the caller (in parallel, see ReadTFRecords), so Next() does not recompute them. Replaces the last call.
  void TrustDataCrcs(uint64_t begin, uint64_t end) {
    trusted_begin_ = begin;
    trusted_end_ = end;
  }
  uint64_t records_returned() const { return records_returned_; }
  uint64_t skipped_records() const { return skipped_records_; }
  // An unrecoverable error was returned: every later call returns it again.
  bool failed() const { return !sticky_.ok(); }
  const TFRecordParserOptions& options() const { return options_; }

 private:
  enum class State { kHeader, kBody };

  absl::Status ParseHeader(const std::byte* header);
  absl::Status Corrupted(uint64_t offset, absl::string_view cause) const;
  // ResourceExhausted when the buffer cannot grow (nothing changed then).
  absl::Status AppendToBuffer(const std::byte* data, size_t n, size_t total);

  TFRecordParserOptions options_;
  State state_ = State::kHeader;
  std::span<const std::byte> chunk_;   // unconsumed part of the fed chunk
  std::byte header_[kTFRecordHeaderBytes];
  size_t header_fill_ = 0;             // header bytes assembled in header_ (straddling header)
  uint64_t length_ = 0;                // data length of the current record
  std::unique_ptr<std::byte[]> buffer_;  // straddling record body (data + footer), reused
  size_t buffer_capacity_ = 0;
  size_t buffer_fill_ = 0;
  uint64_t record_start_ = 0;
  uint64_t records_returned_ = 0;
  uint64_t skipped_records_ = 0;
  uint64_t trusted_begin_ = 0;
  uint64_t trusted_end_ = 0;
  absl::Status sticky_;
};

// One complete record found by WalkTFRecords: header at `offset`, `length` data bytes at `data`, and the
// data CRC as stored (masked).
struct FramedRecord {
  uint64_t offset = 0;
  const std::byte* data = nullptr;
  uint64_t length = 0;
  uint32_t stored_crc = 0;
};

// The complete records of `bytes` (which start at stream offset `bytes_offset`), from the record header at
// stream offset `first` on, following the lengths: it stops before the first record that is cut off by
// the end of `bytes`, has a bad length CRC or a length over `max_record_bytes`, or after `max_records`.
// Data CRCs are not checked.
std::vector<FramedRecord> WalkTFRecords(std::span<const std::byte> bytes, uint64_t bytes_offset, uint64_t first,
                                        uint64_t max_record_bytes, size_t max_records);
// The records of `records` whose data CRC matches, from the first on, until the first that does not:
// returns the stream offset where trust ends (the bad record's header, or the end of the last record).
uint64_t VerifyDataCrcs(std::span<const FramedRecord> records);

class TFRecordDecoder {
 public:
  TFRecordDecoder(Compression compression, TFRecordParserOptions options);

  void Feed(std::span<const std::byte> chunk);
  absl::StatusOr<std::optional<TFRecordView>> Next();
  absl::Status Finish();

  const TFRecordParser& parser() const { return parser_; }
  // The parser of an uncompressed stream (whose offsets are the file's), else nullptr.
  TFRecordParser* uncompressed_parser() { return inflater_ ? nullptr : &parser_; }
  Compression compression() const { return compression_; }
  // An unrecoverable error (framing or decompression) was returned: the rest of the stream is lost.
  bool failed() const { return parser_.failed() || inflate_failed_; }

  // After a framing error in a GZIP/ZLIB file, the compressed stream itself may be what is damaged (zlib
  // can decode bytes from damaged data before it notices, and those break the framing first). The reader
  // then keeps feeding the file and calls SkipCompressed(), which inflates what was fed and discards it,
  // returning the stream's own error, naming the compressed offset, if there is one (at most
  // kMaxSkippedBytes are inflated; past that it gives up and returns OK); FinishCompressed() at the end
  // of the file reports a truncated stream.
  bool framing_lost_in_compressed() const {
    return inflater_.has_value() && parser_.failed() && !inflate_failed_;
  }
  absl::Status SkipCompressed();
  absl::Status FinishCompressed();
  static constexpr uint64_t kMaxSkippedBytes = uint64_t{1} << 30;
  bool skip_gave_up() const { return skipped_after_failure_ >= kMaxSkippedBytes; }

 private:
  Compression compression_;
  TFRecordParser parser_;
  std::optional<Inflater> inflater_;
  uint64_t skip_ = 0;  // decompressed bytes still to drop before options.start_offset
  bool inflate_failed_ = false;
  uint64_t skipped_after_failure_ = 0;  // SkipCompressed's output so far
};

}  // namespace sluice::io

#endif  // SLUICE_IO_TFRECORD_FORMAT_H_
