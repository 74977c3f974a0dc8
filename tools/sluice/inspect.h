// `sluice inspect`: describes TFRecord files, as text, as JSON Lines, or as a dump of their records.
//
// Contract:
// - Input: every FILE of options.files in order; "-" is options.stdin_fd, read as a stream (a pipe, or a
//   FIFO redirected to stdin); a path must be a regular file: a FIFO or device by path is refused at once,
//   without waiting for a writer or reading its data (TFRecordSource). Compression is detected per file
//   unless options.compression is set.
// - kText: per file, its name, then "compression:", the first record decoded ("first record:", see
//   RecordDisplay), each error as it is met ("error:"), "records:", "bytes:", "decoded:" with --all, a
//   "crc:" line ("ok"; "FAILED (N bad records)" when data or length CRCs mismatched; "unchecked" when
//   another error left no record to check) and, when anything failed, "errors: N (counts by cause: bad
//   CRC, truncated, corrupt data, unreadable, out of memory)". A truncated, unreadable or corrupt-stream
//   file is labelled as such, not as a CRC failure.
// - kJson: one JSON object per file, one per line, with the keys
//     file, compression ("NONE"/"GZIP"/"ZLIB", null if the file could not be opened), compression_detected,
//     records, bytes (of the file or stream read), record_bytes (payloads), crc ("ok", "bad" when a CRC
//     mismatched, or "unchecked" when no record could be read: the file could not be opened or read),
//     bad_records (error elements: corrupt records and the truncated or unreadable tail), errors (counts by
//     cause: {crc, truncated, corrupt, unreadable, out_of_memory}; an open failure counts), first_error
//     (null, or {offset, code, message}: offset is where the failing record starts in the record stream,
//     decompressed for GZIP/ZLIB as Record::offset; null when the file could not be opened), first_record
//     (null when there is none, else {type, bytes, ...}: for an Example features {name: {kind, values}},
//     for a SequenceExample context and feature_lists {name: {kind, steps, values}}, for "unknown" or
//     "too_large" a reason), and with --all examples (records that decode as an Example or
//     SequenceExample).
// - kDump: per file, its name and compression, then for every record in options.records: "record I
//   offset O  length L" and the record decoded (up to 16 values per feature, bytes escaped and cut after 32
//   bytes); reading stops after the range's end. Then "records:" (read and shown) and the "crc:" line for
//   what was read.
// - Errors are printed once, on `out`, as part of the file's report; only the first
//   options.max_errors_shown are (the rest are counted), so memory stays flat whatever the file holds. One
//   record at a time is decoded for display, within options.budget.
// - Exit status: 0 when every file was read without an error; 1 when any could not be opened or had a
//   corrupt, truncated or unreadable record (the report names the file and byte offset); 2 for bad options
//   (message on `err`).
//
//   InspectOptions options;
//   options.files = {"train.tfrecord.gz"};
//   options.format = InspectFormat::kJson;
//   int status = RunInspect(options, std::cout, std::cerr);
#ifndef SLUICE_TOOLS_SLUICE_INSPECT_H_
#define SLUICE_TOOLS_SLUICE_INSPECT_H_

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "sluice/io/tfrecord.h"
#include "tools/sluice/record_display.h"

namespace sluice::tools {

// Record indices [begin, end); no end means to the last record.
struct RecordRange {
  uint64_t begin = 0;
  std::optional<uint64_t> end;

  bool Contains(uint64_t index) const { return index >= begin && (!end || index < *end); }
  std::string ToString() const;
};

// "A:B", "A:", ":B" or ":" (decimal indices, B >= A). Else InvalidArgument saying what is accepted.
absl::StatusOr<RecordRange> ParseRecordRange(std::string_view text);

enum class InspectFormat { kText, kJson, kDump };

inline constexpr size_t kMaxErrorsShown = 10;

struct InspectOptions {
  std::vector<std::string> files;
  std::optional<Compression> compression;  // unset: detect per file
  InspectFormat format = InspectFormat::kText;
  bool all = false;     // decode every record (kText, kJson)
  RecordRange records;  // kDump
  DisplayBudget budget;
  size_t max_errors_shown = kMaxErrorsShown;
  int stdin_fd = STDIN_FILENO;  // what "-" reads
};

int RunInspect(const InspectOptions& options, std::ostream& out, std::ostream& err);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_SLUICE_INSPECT_H_
