#include "sluice/io/record_readers.h"

#include <algorithm>
#include <coroutine>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "io/memory_limit.h"
#include "io/tfrecord_format.h"
#include "io/zlib_stream.h"
#include "sluice/engine/async_event.h"
#include "sluice/engine/async_scope.h"
#include "sluice/engine/executor.h"
#include "sluice/engine/task.h"
#include "sluice/engine/thread_pool.h"

namespace sluice {
namespace {

// `start` is where the file is read from: the start offset for uncompressed files, else 0.
SequentialReadOptions BlockOptions(const ReadOptions& io, Compression compression, uint64_t start) {
  SequentialReadOptions options;
  options.start_offset = compression == Compression::kNone ? start : 0;
  options.block_size = io.block_size;
  options.blocks_in_flight = io.blocks_in_flight;
  options.direct = io.direct;
  options.mode = io.mode;
  options.mmap_window = io.mmap_window;
  options.prefault = io.prefault;
  options.resume_on = io.parse_on != nullptr ? io.parse_on : &ThreadPool::Default();
  return options;
}

bool Contains(std::span<const std::byte> outer, std::span<const std::byte> inner) {
  // std::less gives a total order on pointers into different objects.
  std::less<const std::byte*> less;
  return !less(inner.data(), outer.data()) && !less(outer.data() + outer.size(), inner.data() + inner.size());
}

// A view into `owner_range` (kept alive by `owner`) when large enough to be worth pinning, else a copy;
// ResourceExhausted naming `path` and the offset when the copy cannot be allocated.
absl::StatusOr<Record> MakeRecord(std::span<const std::byte> data, uint64_t offset,
                                  const std::shared_ptr<const std::byte>& owner,
                                  std::span<const std::byte> owner_range, size_t min_zero_copy_bytes,
                                  const std::string& path) {
  Record record;
  record.offset = offset;
  if (owner != nullptr && data.size() >= min_zero_copy_bytes && Contains(owner_range, data)) {
    record.owner = owner;
    record.data = data;
    return record;
  }
  std::shared_ptr<std::byte[]> copy;
  try {
    copy = std::make_shared_for_overwrite<std::byte[]>(data.size());
  } catch (const std::bad_alloc&) {
    return io::OutOfMemory(path, offset, "record", data.size(), "copying it out of the read buffer failed");
  }
  if (!data.empty()) std::memcpy(copy.get(), data.data(), data.size());
  record.data = std::span<const std::byte>(copy.get(), data.size());
  record.owner = std::move(copy);
  return record;
}

// s += bytes, or false (s unchanged) when the allocator refuses: the caller reports where.
bool TryAppend(std::string& s, const char* data, size_t n) {
  try {
    s.append(data, n);
  } catch (const std::bad_alloc&) {
    return false;
  } catch (const std::length_error&) {
    return false;
  }
  return true;
}

absl::StatusOr<Record> RecordFailure(absl::Status status) { return status; }

// Tells the consumer, when it asked (ReadOptions::position), where the element after this one starts.
void NotePosition(const ReadOptions& io, uint64_t next_offset, bool ended) {
  if (io.position != nullptr) {
    io.position->next_offset = next_offset;
    io.position->ended = ended;
  }
}

// A piece of the (decompressed) stream. `owner` is set when `data` lies in a block buffer it owns;
// otherwise `data` is valid until the next Next() on the chunk generator.
struct Chunk {
  std::shared_ptr<const std::byte> owner;
  std::span<const std::byte> data;
  uint64_t offset = 0;  // in the decompressed stream
};

io::ZlibFormat FormatOf(Compression compression) {
  return compression == Compression::kZlib ? io::ZlibFormat::kZlib : io::ZlibFormat::kGzip;
}

// The file's bytes from stream offset `start`, decompressed when asked (from the file's start, dropping
// what comes before `start`). An error is the last element.
AsyncGenerator<absl::StatusOr<Chunk>> ReadChunks(Reactor& reactor, std::string path, Compression compression,
                                                 ReadOptions io, uint64_t start) {
  AsyncGenerator<absl::StatusOr<Block>> blocks = ReadBlocks(reactor, path, BlockOptions(io, compression, start));
  std::optional<io::Inflater> inflater;
  if (compression != Compression::kNone) inflater.emplace(FormatOf(compression), path);
  uint64_t produced = 0;
  for (;;) {
    std::optional<absl::StatusOr<Block>> block = co_await blocks.Next();
    if (!block.has_value()) break;
    if (!block->ok()) {
      absl::StatusOr<Chunk> error(block->status());
      co_yield std::move(error);
      co_return;
    }
    if (!inflater.has_value()) {
      Chunk chunk;
      chunk.data = (*block)->data;
      chunk.offset = (*block)->offset;
      chunk.owner = std::move((*block)->buffer);
      absl::StatusOr<Chunk> out(std::move(chunk));
      co_yield std::move(out);
      continue;
    }
    inflater->Feed((*block)->data);
    for (;;) {
      absl::StatusOr<std::span<const std::byte>> piece = inflater->Next();
      if (!piece.ok()) {
        absl::StatusOr<Chunk> error(piece.status());
        co_yield std::move(error);
        co_return;
      }
      if (piece->empty()) break;
      const uint64_t piece_offset = produced;
      produced += piece->size();
      if (produced <= start) continue;
      const size_t skip = static_cast<size_t>(std::max(piece_offset, start) - piece_offset);
      Chunk chunk;
      chunk.data = piece->subspan(skip);
      chunk.offset = piece_offset + skip;
      absl::StatusOr<Chunk> out(std::move(chunk));
      co_yield std::move(out);
    }
  }
  if (inflater.has_value()) {
    absl::Status finished = inflater->Finish();
    if (finished.ok() && produced < start) {
      finished = absl::OutOfRangeError(absl::StrCat(path, " (decompressed): start offset ", start,
                                                    " is past the end of the data (", produced, " bytes)"));
    }
    if (!finished.ok()) {
      absl::StatusOr<Chunk> error(std::move(finished));
      co_yield std::move(error);
    }
  }
}

// Blocks at least this large get their data CRCs checked on two threads (mmap windows are 32 MiB, read
// blocks 1 MiB: splitting those would cost more in hand-offs than it saves).
constexpr size_t kParallelCrcMinBlockBytes = size_t{4} << 20;

// The second half of one block's records, checked on the reactor's thread.
struct CrcCheck {
  explicit CrcCheck(Executor* resume_on) : done(false, resume_on) {}
  std::shared_ptr<const std::byte> keep;  // the block `records` point into
  std::vector<io::FramedRecord> records;
  uint64_t trusted_begin = 0;
  uint64_t trusted_end = 0;
  AsyncEvent done;
};

// Records smaller than this on average are not worth it: the per-record work (parsing, copying, the
// consumer) dominates, not the CRC, and walking them costs what the split saves.
constexpr size_t kParallelCrcMinAverageRecordBytes = 4096;

// Finds the block's complete records from `first` on and gives the second half (by bytes) to `check`;
// returns the block-relative split offset, or 0 when there is nothing worth splitting.
size_t PlanCrcCheck(const Block& block, uint64_t first, uint64_t max_record_bytes, CrcCheck& check) {
  const size_t max_records = block.data.size() / kParallelCrcMinAverageRecordBytes + 1;
  std::vector<io::FramedRecord> records =
      io::WalkTFRecords(block.data, block.offset, first, max_record_bytes, max_records);
  if (records.size() < 2 || records.size() == max_records) return 0;
  const uint64_t begin = records.front().offset;
  const uint64_t end = records.back().offset + io::kTFRecordHeaderBytes + records.back().length +
                       io::kTFRecordFooterBytes;
  const uint64_t middle = begin + (end - begin) / 2;
  size_t k = 1;
  while (k + 1 < records.size() && records[k].offset < middle) ++k;
  records.erase(records.begin(), records.begin() + static_cast<std::ptrdiff_t>(k));
  check.records = std::move(records);
  check.trusted_begin = check.records.front().offset;
  check.trusted_end = check.trusted_begin;  // nothing trusted until the check is done
  check.keep = block.buffer;
  check.done.Reset();
  return static_cast<size_t>(check.trusted_begin - block.offset);
}

Task<absl::Status> CheckOnReactor(Reactor* reactor, CrcCheck* check) {
  ResumeOn hop{reactor};
  co_await hop;
  check->trusted_end = io::VerifyDataCrcs(check->records);
  check->done.Set();  // last touch of *check
  co_return absl::OkStatus();
}

// After a framing error in a compressed file: inflates the rest of it, discarding the output, and returns
// the compressed stream's own error (or OK). `blocks` and `decoder` live in the caller's frame, which
// awaits this task in the statement that calls it.
Task<absl::Status> SkipCompressedRest(AsyncGenerator<absl::StatusOr<Block>>* blocks, io::TFRecordDecoder* decoder) {
  absl::Status damage = decoder->SkipCompressed();  // the rest of the block being decoded
  while (damage.ok() && !decoder->skip_gave_up()) {
    std::optional<absl::StatusOr<Block>> block = co_await blocks->Next();
    if (!block.has_value()) co_return decoder->FinishCompressed();
    if (!block->ok()) co_return block->status();
    decoder->Feed((*block)->data);
    damage = decoder->SkipCompressed();
  }
  co_return damage;
}

}  // namespace

AsyncGenerator<absl::StatusOr<Record>> ReadTFRecords(Reactor& reactor, std::string path,
                                                     TFRecordReaderOptions options, ReadOptions io) {
  AsyncGenerator<absl::StatusOr<Block>> blocks =
      ReadBlocks(reactor, path, BlockOptions(io, options.compression, options.start_offset));
  io::TFRecordDecoder decoder(options.compression, io::ParserOptionsFor(options, path));
  Executor* resume_on = io.parse_on != nullptr ? io.parse_on : &ThreadPool::Default();
  // Declared after everything a check reads: destroyed (and so joined) first.
  std::unique_ptr<CrcCheck> check;
  AsyncScope checks;
  bool parallel_crc = true;  // false once a check was abandoned (it may still run; the scope joins it)
  // The decoder repeats an unrecoverable error on every call: seeing the same error twice ends the stream.
  absl::Status last_error;
  for (;;) {
    std::optional<absl::StatusOr<Block>> block = co_await blocks.Next();
    if (!block.has_value()) break;
    if (!block->ok()) {
      absl::StatusOr<Record> error = RecordFailure(block->status());
      NotePosition(io, decoder.parser().record_start(), /*ended=*/true);
      co_yield std::move(error);
      co_return;
    }
    const Block& current = **block;
    // Large uncompressed blocks (mmap windows): the data CRCs of the block's second half are checked on
    // the reactor's thread while this one checks the first half as it decodes.
    std::span<const std::byte> parts[2] = {current.data, {}};
    if (parallel_crc && options.verify_crc && current.data.size() >= kParallelCrcMinBlockBytes) {
      if (io::TFRecordParser* parser = decoder.uncompressed_parser()) {
        if (std::optional<uint64_t> first = parser->NextUnstartedRecord()) {
          if (check == nullptr) check = std::make_unique<CrcCheck>(resume_on);
          if (size_t split = PlanCrcCheck(current, *first, options.max_record_bytes, *check); split != 0) {
            parts[0] = current.data.first(split);
            parts[1] = current.data.subspan(split);
            checks.Spawn(CheckOnReactor(&reactor, check.get()));
          }
        }
      }
    }
    for (int part = 0; part < 2; ++part) {
      if (part == 1) {
        if (parts[1].empty()) break;
        absl::Status waited = co_await check->done.Wait();
        if (waited.ok()) {
          decoder.uncompressed_parser()->TrustDataCrcs(check->trusted_begin, check->trusted_end);
          check->keep.reset();
        } else {
          parallel_crc = false;  // cancelled: nothing is trusted and the parser checks the rest itself
        }
      }
      decoder.Feed(parts[part]);
      for (;;) {
        absl::StatusOr<std::optional<io::TFRecordView>> next = decoder.Next();
        if (!next.ok()) {
          if (next.status() == last_error) {
            if (!decoder.framing_lost_in_compressed()) co_return;
            // The framing broke inside a GZIP/ZLIB stream: name the compressed damage too, if there is any.
            absl::Status damage = co_await SkipCompressedRest(&blocks, &decoder);
            if (!damage.ok()) {
              absl::StatusOr<Record> error = RecordFailure(std::move(damage));
              NotePosition(io, decoder.parser().record_start(), /*ended=*/true);
              co_yield std::move(error);
            }
            co_return;
          }
          last_error = next.status();
          absl::StatusOr<Record> error = RecordFailure(next.status());
          // After a data CRC mismatch the parser is past the bad record and reading goes on.
          NotePosition(io, decoder.parser().record_start(), decoder.failed());
          co_yield std::move(error);
          continue;
        }
        if (!next->has_value()) break;
        last_error = absl::OkStatus();
        absl::StatusOr<Record> out =
            MakeRecord((*next)->data, (*next)->offset, current.buffer, current.data, io.min_zero_copy_bytes, path);
        NotePosition(io, decoder.parser().record_start(), /*ended=*/false);
        co_yield std::move(out);
      }
    }
  }
  absl::Status finished = decoder.Finish();
  if (!finished.ok() && finished != last_error) {
    absl::StatusOr<Record> error = RecordFailure(std::move(finished));
    NotePosition(io, decoder.parser().record_start(), /*ended=*/true);
    co_yield std::move(error);
  }
}

AsyncGenerator<absl::StatusOr<Record>> ReadTextLines(Reactor& reactor, std::string path, TextLineOptions options) {
  AsyncGenerator<absl::StatusOr<Chunk>> chunks =
      ReadChunks(reactor, path, options.compression, options.io, options.start_offset);
  std::string pending;  // the start of a line that continues in a later chunk
  uint64_t line_start = options.start_offset;
  bool have_pending = false;
  for (;;) {
    std::optional<absl::StatusOr<Chunk>> chunk = co_await chunks.Next();
    if (!chunk.has_value()) break;
    if (!chunk->ok()) {
      absl::StatusOr<Record> error = RecordFailure(chunk->status());
      NotePosition(options.io, line_start, /*ended=*/true);
      co_yield std::move(error);
      co_return;
    }
    const Chunk& current = **chunk;
    const char* const begin = reinterpret_cast<const char*>(current.data.data());
    const size_t size = current.data.size();
    size_t pos = 0;
    while (pos < size) {
      const void* found = std::memchr(begin + pos, '\n', size - pos);
      const size_t end = found != nullptr ? static_cast<size_t>(static_cast<const char*>(found) - begin) : size;
      if ((have_pending ? pending.size() : 0) + (end - pos) > options.max_line_bytes) {
        absl::StatusOr<Record> error = RecordFailure(absl::DataLossError(
            absl::StrCat(path, ": line at offset ", line_start, " is longer than max_line_bytes (",
                         options.max_line_bytes, "); the rest of the file is skipped")));
        NotePosition(options.io, line_start, /*ended=*/true);
        co_yield std::move(error);
        co_return;
      }
      // A line that continues in a later chunk is assembled in `pending`.
      if ((found == nullptr || have_pending) && !TryAppend(pending, begin + pos, end - pos)) {
        absl::StatusOr<Record> error = RecordFailure(io::OutOfMemory(
            path, line_start, "line", pending.size() + (end - pos),
            "buffering that much of it failed, and the line goes on; the rest of the file is skipped"));
        NotePosition(options.io, line_start, /*ended=*/true);
        co_yield std::move(error);
        co_return;
      }
      if (found == nullptr) {
        have_pending = true;
        break;
      }
      std::span<const std::byte> line;
      if (have_pending) {
        line = std::span<const std::byte>(reinterpret_cast<const std::byte*>(pending.data()), pending.size());
      } else {
        line = current.data.subspan(pos, end - pos);
      }
      if (!line.empty() && line.back() == std::byte{'\r'}) line = line.first(line.size() - 1);
      absl::StatusOr<Record> out =
          MakeRecord(line, line_start, current.owner, current.data, options.io.min_zero_copy_bytes, path);
      pending.clear();
      have_pending = false;
      pos = end + 1;
      line_start = current.offset + pos;
      NotePosition(options.io, line_start, /*ended=*/false);
      co_yield std::move(out);
    }
  }
  if (have_pending) {
    // A last line without a newline is a line (a '\r' there is kept: only "\r\n" ends a line).
    absl::StatusOr<Record> out = MakeRecord(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(pending.data()), pending.size()), line_start,
        nullptr, {}, options.io.min_zero_copy_bytes, path);
    NotePosition(options.io, line_start + pending.size(), /*ended=*/false);
    co_yield std::move(out);
  }
}

AsyncGenerator<absl::StatusOr<Record>> ReadFixedLengthRecords(Reactor& reactor, std::string path,
                                                              FixedLengthRecordOptions options) {
  const uint64_t record_bytes = options.record_bytes;
  absl::Status bad_options;
  uint64_t sum = 0;
  if (record_bytes == 0) {
    bad_options = absl::InvalidArgumentError(absl::StrCat(path, ": record_bytes must be positive"));
  } else if (__builtin_add_overflow(options.header_bytes, options.footer_bytes, &sum) ||
             __builtin_add_overflow(record_bytes, options.footer_bytes, &sum) ||
             __builtin_add_overflow(sum, options.header_bytes, &sum)) {
    // Every size below is computed from these sums: refuse them rather than wrap around.
    bad_options = absl::InvalidArgumentError(absl::StrCat(
        path, ": header_bytes (", options.header_bytes, ") + record_bytes (", record_bytes, ") + footer_bytes (",
        options.footer_bytes, ") is more than any file can hold (2^64 - 1 bytes)"));
  } else if (options.start_offset != 0 && (options.start_offset < options.header_bytes ||
                                           (options.start_offset - options.header_bytes) % record_bytes != 0)) {
    bad_options = absl::InvalidArgumentError(absl::StrCat(
        path, ": start offset ", options.start_offset, " is not a record boundary (header_bytes ",
        options.header_bytes, " + k * record_bytes ", record_bytes, ")"));
  }
  if (!bad_options.ok()) {
    absl::StatusOr<Record> error = RecordFailure(std::move(bad_options));
    NotePosition(options.io, options.start_offset, /*ended=*/true);
    co_yield std::move(error);
    co_return;
  }
  // Start 0 reads the header too, so a file shorter than it is the same DataLoss as ever.
  const uint64_t start = options.start_offset;
  AsyncGenerator<absl::StatusOr<Chunk>> chunks = ReadChunks(reactor, path, options.compression, options.io, start);
  // A record is only known not to be footer once record_bytes + footer_bytes bytes follow its start.
  const uint64_t needed = record_bytes + options.footer_bytes;
  uint64_t header_left = start == 0 ? options.header_bytes : 0;
  uint64_t total = start;   // stream bytes seen, counting the ones before `start`
  uint64_t next_offset = start == 0 ? options.header_bytes : start;  // of the next record
  std::string carry;        // bytes after the last record returned, before the end of what was seen
  for (;;) {
    std::optional<absl::StatusOr<Chunk>> chunk = co_await chunks.Next();
    if (!chunk.has_value()) break;
    if (!chunk->ok()) {
      absl::StatusOr<Record> error = RecordFailure(chunk->status());
      NotePosition(options.io, next_offset, /*ended=*/true);
      co_yield std::move(error);
      co_return;
    }
    const Chunk& current = **chunk;
    total += current.data.size();
    std::span<const std::byte> data = current.data;
    const uint64_t skip = std::min<uint64_t>(header_left, data.size());
    header_left -= skip;
    data = data.subspan(skip);
    bool from_carry = false;
    if (!carry.empty()) {
      if (!TryAppend(carry, reinterpret_cast<const char*>(data.data()), data.size())) {
        absl::StatusOr<Record> error = RecordFailure(
            io::OutOfMemory(path, next_offset, "record", record_bytes,
                            absl::StrCat("buffering the ", carry.size() + data.size(),
                                         " bytes from there failed; the rest of the file is skipped")));
        NotePosition(options.io, next_offset, /*ended=*/true);
        co_yield std::move(error);
        co_return;
      }
      data = std::span<const std::byte>(reinterpret_cast<const std::byte*>(carry.data()), carry.size());
      from_carry = true;
    }
    size_t pos = 0;
    while (data.size() - pos >= needed) {
      absl::StatusOr<Record> out = MakeRecord(data.subspan(pos, record_bytes), next_offset,
                                              from_carry ? nullptr : current.owner, current.data,
                                              options.io.min_zero_copy_bytes, path);
      pos += record_bytes;
      next_offset += record_bytes;
      NotePosition(options.io, next_offset, /*ended=*/false);
      co_yield std::move(out);
    }
    if (from_carry) {
      carry.erase(0, pos);
    } else if (carry.clear(); !TryAppend(carry, reinterpret_cast<const char*>(data.data()) + pos, data.size() - pos)) {
      absl::StatusOr<Record> error = RecordFailure(
          io::OutOfMemory(path, next_offset, "record", record_bytes,
                          absl::StrCat("buffering the ", data.size() - pos,
                                       " bytes from there failed; the rest of the file is skipped")));
      NotePosition(options.io, next_offset, /*ended=*/true);
      co_yield std::move(error);
      co_return;
    }
  }
  absl::Status failure;
  if (total < options.header_bytes + options.footer_bytes) {
    failure = absl::DataLossError(
        absl::StrCat(path, ": file has ", total, " bytes, fewer than header_bytes + footer_bytes (",
                     options.header_bytes, " + ", options.footer_bytes, ")"));
  } else if (start > total - options.footer_bytes) {
    failure = absl::OutOfRangeError(absl::StrCat(path, ": start offset ", start,
                                                 " is past the end of the records (the footer starts at ",
                                                 total - options.footer_bytes, ")"));
  } else if (const uint64_t leftover = carry.size() - options.footer_bytes; leftover != 0) {
    failure = absl::DataLossError(absl::StrCat(
        path, ": excluding the header (", options.header_bytes, " bytes) and footer (", options.footer_bytes,
        " bytes), the body has ", total - options.header_bytes - options.footer_bytes,
        " bytes, not a multiple of record_bytes (", record_bytes, "): ", leftover, " bytes at offset ",
        next_offset, " are not a whole record"));
  }
  if (!failure.ok()) {
    absl::StatusOr<Record> error = RecordFailure(std::move(failure));
    NotePosition(options.io, next_offset, /*ended=*/true);
    co_yield std::move(error);
  }
}

}  // namespace sluice
