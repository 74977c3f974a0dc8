// Record readers: TFRecord files, text lines and fixed-length records, each an async generator of Records
// read from one file through ReadBlocks (several large reads in flight) on a Reactor.
//
// Contract, common to the three readers:
// - Elements: the file's records in file order, then the end. A Record shares ownership of the memory its
//   `data` points into: records of at least ReadOptions::min_zero_copy_bytes that lie inside one block
//   of an uncompressed file are views into that block (no copy; the record pins the whole block buffer
//   while held, so the threshold keeps small records, which consumers may buffer by the thousand, from
//   pinning megabytes); every other record is copied once into its own allocation. `offset` is the
//   record's byte offset in the file, in the decompressed stream for GZIP/ZLIB files.
// - Blocks: ReadOptions::mode picks how ReadBlocks gets the bytes (sluice/io/sequential_reader.h). kAuto
//   (the default) and kRead read into pooled buffers; kMmap maps uncompressed and compressed regular files
//   (a block is then an mmap window of mmap_window bytes, so a zero-copy record pins its window's mapping,
//   not a copy). The elements and errors are the same either way, while nobody else changes the file.
// - Files changed while being read: by default no crash whatever another process does to the file; a
//   truncated file ends the stream with DataLoss naming the path and offset ("file shrank while being
//   read"), bytes rewritten in place are read as they are when their block is read (TFRecord's CRCs turn
//   most torn records into DataLoss; text and fixed-length records have no checksum), and a Record's
//   bytes never change after it was yielded. kMmap gives this up for speed: a
//   truncation raises SIGBUS, and a rewrite changes the bytes of records already yielded.
// - Errors are elements (a consumer may keep pulling after a recoverable one); all name the path and a
//   byte offset. NotFound / PermissionDenied / FailedPrecondition (directory) when the file cannot be
//   opened, read errors from the reactor, and DataLoss for bad content. A record (line, block) that
//   cannot be allocated is ResourceExhausted naming the path, its offset and the bytes it needs (a TFRecord
//   length header beyond what memory could ever hold, RAM + swap or the rlimits, is refused before any
//   allocation; never a std::bad_alloc). I/O errors, cancellation, running out of memory while assembling
//   a record and unrecoverable format errors end the stream; a record that fits but whose copy fails is
//   one error element, and reading goes on.
// - Cancellation: a stop requested on the consumer's token ends the stream with CancelledError at the
//   next block boundary at the latest; reads in flight are cancelled and awaited.
// - Threading: parsing runs on ReadOptions::parse_on (ThreadPool::Default() when null), never on the
//   reactor's thread; the consumer resumes there. Destroying a reader mid-stream cancels and joins its
//   reads (blocking briefly), so do it from the consumer's thread or any thread but the reactor's.
// - The reactor must outlive the generator.
//
// - Starting at an offset (the start_offset of TFRecordReaderOptions, TextLineOptions and
//   FixedLengthRecordOptions; 0, the default, is the start): reading starts at a record boundary given as
//   a byte offset in the (decompressed) stream, as Record::offset and ReaderPosition::next_offset report
//   it, and the first record's offset is the start offset. Uncompressed files are read (or mapped) from
//   there and the bytes before it are never read; GZIP/ZLIB files are decompressed from the start and the
//   bytes before the offset dropped (as TensorFlow does: a deflate stream cannot be entered in the
//   middle). The offset == the end of the data: no records. Past the end: OutOfRange naming the path,
//   the offset and the size, as the one element. Nothing before the offset is parsed, so a boundary is
//   trusted, not checked: a TFRecord start inside a record reads its bytes as a header and fails the
//   length CRC (or, near the end, as a truncated record): DataLoss, the rest unreadable; a text start
//   inside a line yields the rest of that line as a line; fixed-length records check it (see below).
// - Position (ReadOptions::position, optional): before yielding each element the reader stores in it
//   where the element after it starts (a start_offset that continues right after this one: after a
//   skipped-past data CRC error, the next record) and whether this element ends the stream (an error
//   after which nothing more comes from this file). The consumer reads it after Next() returned the
//   element; the reader touches it only inside Next().
//
// ReadTFRecords: TFRecord framing (see sluice/io/tfrecord.h), NONE/GZIP/ZLIB, both CRCs verified unless
//   options.verify_crc is false. A data CRC mismatch is a DataLoss element and reading continues with the
//   next record (or the record is skipped silently with skip_corrupt_records); a bad length CRC, a length
//   over max_record_bytes (never allocated), a corrupt compressed stream and a truncated record end the
//   stream with DataLoss ("the rest of the file is unreadable" where framing is lost).
// ReadTextLines: lines split at '\n'; a '\r' right before the '\n' is dropped as well; a last line
//   without a newline is a line; an empty file has no lines; lines may be empty. A line longer than
//   max_line_bytes ends the stream with DataLoss (never buffered past the limit). GZIP/ZLIB as TensorFlow's
//   TextLineDataset(compression_type=...).
// ReadFixedLengthRecords: as tf.data.FixedLengthRecordDataset: skip header_bytes, then records of
//   record_bytes until footer_bytes remain (the footer is skipped); with compression these apply to the
//   decompressed stream. A body that is not a multiple of record_bytes yields every whole record, then
//   DataLoss naming the leftover bytes (TensorFlow does that for compressed files and drops the leftover
//   silently for uncompressed ones; sluice never reads short silently). A file shorter than
//   header_bytes + footer_bytes is DataLoss. record_bytes == 0, and header_bytes + record_bytes +
//   footer_bytes past 2^64 - 1, are InvalidArgument naming the three. A start_offset other
//   than 0 (the first record) must be header_bytes + k * record_bytes, else InvalidArgument; past the last
//   record's end (the footer's start) is OutOfRange.
//
//   AsyncGenerator<absl::StatusOr<Record>> records = ReadTFRecords(reactor, "/data/train.tfrecord");
//   while (std::optional<absl::StatusOr<Record>> r = co_await records.Next()) {
//     if (!r->ok()) { LogError(r->status()); continue; }
//     Parse((*r)->str());
//   }
#ifndef SLUICE_IO_RECORD_READERS_H_
#define SLUICE_IO_RECORD_READERS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sluice/engine/async_generator.h"
#include "sluice/engine/executor.h"
#include "sluice/engine/reactor.h"
#include "sluice/export.h"
#include "sluice/io/sequential_reader.h"
#include "sluice/io/tfrecord.h"

namespace sluice {

struct Record {
  std::shared_ptr<const void> owner;  // keeps `data` alive
  std::span<const std::byte> data;
  uint64_t offset = 0;

  absl::string_view str() const { return {reinterpret_cast<const char*>(data.data()), data.size()}; }
  size_t size() const { return data.size(); }
};

inline constexpr size_t kDefaultMinZeroCopyBytes = size_t{64} << 10;

// Where a reader is, for a consumer that resumes it later (see "Position" above).
struct ReaderPosition {
  // Where the element after the one just yielded starts: a start_offset that continues after it.
  uint64_t next_offset = 0;
  // The element just yielded is an error that ends the stream.
  bool ended = false;
};

// How a record reader reads its file.
struct ReadOptions {
  size_t block_size = kDefaultBlockSize;
  int blocks_in_flight = kDefaultBlocksInFlight;
  bool direct = false;
  // Where parsing runs and the consumer resumes; nullptr = ThreadPool::Default().
  Executor* parse_on = nullptr;
  // Records at least this large are views into the block (see above); SIZE_MAX = always copy.
  size_t min_zero_copy_bytes = kDefaultMinZeroCopyBytes;
  ReadMode mode = ReadMode::kAuto;
  size_t mmap_window = kDefaultMmapWindow;
  Prefault prefault = Prefault::kPopulate;
  // When set, updated before each element is yielded (see "Position" above).
  std::shared_ptr<ReaderPosition> position;
};

struct TextLineOptions {
  Compression compression = Compression::kNone;
  uint64_t max_line_bytes = kDefaultMaxRecordBytes;
  // The byte offset of a line's start in the (decompressed) stream; see "Starting at an offset".
  uint64_t start_offset = 0;
  ReadOptions io;
};

struct FixedLengthRecordOptions {
  uint64_t header_bytes = 0;
  uint64_t record_bytes = 0;
  uint64_t footer_bytes = 0;
  Compression compression = Compression::kNone;
  // 0 (the first record) or header_bytes + k * record_bytes; see "Starting at an offset".
  uint64_t start_offset = 0;
  ReadOptions io;
};

// In all three, `reactor` is not copied: it must outlive the generator.
SLUICE_EXPORT AsyncGenerator<absl::StatusOr<Record>> ReadTFRecords(Reactor& reactor, std::string path,
                                                                   TFRecordReaderOptions options = {},
                                                                   ReadOptions io = {});
SLUICE_EXPORT AsyncGenerator<absl::StatusOr<Record>> ReadTextLines(Reactor& reactor, std::string path,
                                                                   TextLineOptions options = {});
SLUICE_EXPORT AsyncGenerator<absl::StatusOr<Record>> ReadFixedLengthRecords(Reactor& reactor, std::string path,
                                                                            FixedLengthRecordOptions options);

}  // namespace sluice

#endif  // SLUICE_IO_RECORD_READERS_H_
