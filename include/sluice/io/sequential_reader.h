// ReadBlocks: a file read front to back in large blocks, with several reads in flight, as a generator.
//
// Contract:
// - Elements: the file's bytes in order from options.start_offset (0: the start), as Blocks of
//   options.block_size bytes (the first and the last one may be shorter; an empty file yields none).
//   Block::offset is the block's byte offset in the file. The file's size is
//   taken when it is opened; a file that shrinks while being read yields DataLoss (never a silent short
//   read), bytes appended after the open are not read. Except: a file whose size is 0 when opened (/proc
//   and /sys files stat as empty but read as text) is read to its end, one block at a time, without
//   read-ahead; a truly empty file yields no block. Block devices are sized with BLKGETSIZE64.
// - Read-ahead: up to options.blocks_in_flight reads are outstanding while the consumer holds a block, so
//   parsing block k overlaps reading blocks k+1..k+depth. The reads are started eagerly when the
//   generator first runs.
// - Buffers: a Block shares ownership of its buffer, so it stays valid for as long as the consumer holds
//   it, even after later Next() calls. Buffers come from a small per-generator pool (blocks_in_flight + 1
//   buffers, aligned to kDirectIoAlignment): a consumer that drops each Block before asking for the next
//   one makes the steady state allocation-free; one that keeps blocks costs one buffer allocation each.
// - Errors (each is the last element): InvalidArgument for bad options; the File::Open errors (NotFound,
//   PermissionDenied, FailedPrecondition for a directory) and read errors, all naming the path and, for
//   reads, the offset.
// - O_DIRECT (options.direct): see File; when refused the reader falls back to buffered reads silently.
// - Memory mapping (options.mode): only kMmap maps; kAuto and kRead read (see ReadMode for why). kMmap
//   maps a non-empty regular file opened without O_DIRECT in windows of options.mmap_window bytes
//   (rounded up to the page size) instead of reading it, so the kernel's page-cache copy disappears:
//   each Block is one window and its `buffer` owns the mapping (munmap when the reader and every holder
//   of the Block let go). The next window is mapped and prefaulted (options.prefault) on the reactor's
//   thread while the consumer works on the current one. Anything else (O_DIRECT honoured, block devices,
//   empty files, a refused mmap) takes the read path with the same elements and errors. The size is
//   taken at open and nothing past it is mapped; before each window is handed out the file is fstat'ed
//   again and a shrunken file yields DataLoss as on the read path.
// - Files changed by others while being read: the read path never crashes; a file that shrinks is
//   DataLoss, bytes rewritten in place are read as they are when each block is read (a record reader's
//   CRCs then catch most torn records), and a Block's bytes never change once handed out. The mmap path
//   (kMmap) gives none of that: a file truncated while a window is in use raises SIGBUS, which kills the
//   process, and bytes rewritten in place change under the Blocks (and zero-copy records) already handed
//   out, after their CRCs were checked. Use kMmap only for files nobody rewrites while they are read.
// - Cancellation: a stop requested on the consumer's token makes the next Next() yield CancelledError
//   (naming the path) as the last element; reads still in flight are cancelled and awaited first.
// - Threading: completions arrive on the reactor's thread. With options.resume_on set, the consumer is
//   resumed through it after each read it had to wait for (and after the final join), so parsing never
//   runs on, and never blocks, the reactor thread. With resume_on == nullptr the consumer runs on the
//   completion thread: keep that work short, and never destroy the generator there (see Lifetime).
// - Lifetime: the reactor must outlive the generator. Destroying the generator mid-stream requests stop
//   on the reads in flight and blocks the destroying thread until their completions arrived (so no
//   buffer is freed under the kernel); this must therefore not happen on the reactor's own thread, which
//   resume_on guarantees for consumers that only run where they are resumed. Doing it anyway on the
//   io_uring reactor thread with reads in flight aborts with a message rather than deadlocking.
//
//   SequentialReadOptions options;
//   options.resume_on = &ThreadPool::Default();
//   AsyncGenerator<absl::StatusOr<Block>> blocks = ReadBlocks(reactor, "/data/x.bin", options);
//   while (std::optional<absl::StatusOr<Block>> block = co_await blocks.Next()) {
//     if (!block->ok()) co_return block->status();
//     Consume((*block)->data);
//   }
#ifndef SLUICE_IO_SEQUENTIAL_READER_H_
#define SLUICE_IO_SEQUENTIAL_READER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "sluice/engine/async_generator.h"
#include "sluice/engine/executor.h"
#include "sluice/export.h"
#include "sluice/io/file.h"
#include "sluice/engine/reactor.h"

namespace sluice {

// Chosen by benchmarks/io/scan_benchmark (see docs/io.md).
inline constexpr size_t kDefaultBlockSize = size_t{1} << 20;
inline constexpr int kDefaultBlocksInFlight = 2;
inline constexpr size_t kDefaultMmapWindow = size_t{32} << 20;

enum class ReadMode {
  kAuto,  // the default: kRead. The mmap path scans 100 KiB records up to 2.7x faster (docs/io.md, "Read
          // modes") but a truncation by another process kills the reader with SIGBUS; no default may crash.
  kRead,  // read(2) / io_uring reads into pooled buffers: safe whatever others do to the file
  kMmap,  // mmap windows where the file allows (see the contract), else kRead. Opt-in, for files that
          // nobody truncates or rewrites while they are read.
};

// How a mapped window is brought into the page tables ahead of the consumer.
enum class Prefault {
  kPopulate,  // MAP_POPULATE: page tables filled by the mapping call, off the consumer's thread
  kWillNeed,  // madvise(MADV_WILLNEED) of the next window: readahead only, the consumer takes the faults
  kNone,      // MADV_SEQUENTIAL only
};

struct SequentialReadOptions {
  // Bytes per read (> 0). Rounded up to kDirectIoAlignment when the file is read with O_DIRECT.
  size_t block_size = kDefaultBlockSize;
  // Reads kept outstanding (>= 1).
  int blocks_in_flight = kDefaultBlocksInFlight;
  // Open with O_DIRECT (falls back to the page cache where refused).
  bool direct = false;
  // Where the consumer resumes after waiting for a read or a mapping (nullptr: on the completion thread).
  Executor* resume_on = nullptr;
  ReadMode mode = ReadMode::kAuto;
  // Bytes per mapping in the mmap path (> 0; rounded up to the page size).
  size_t mmap_window = kDefaultMmapWindow;
  Prefault prefault = Prefault::kPopulate;
  // The first byte read: blocks cover [start_offset, size) and nothing before it is read or mapped.
  // start_offset == size yields no blocks; past the size it is OutOfRange naming the path, the offset
  // and the size, as the one element.
  uint64_t start_offset = 0;
};

struct Block {
  std::shared_ptr<const std::byte> buffer;  // owns the memory `data` points into (a buffer or a mapping)
  std::span<const std::byte> data;
  uint64_t offset = 0;  // of data[0] in the file
};

// `reactor` is not copied: it must outlive the generator.
SLUICE_EXPORT AsyncGenerator<absl::StatusOr<Block>> ReadBlocks(Reactor& reactor, std::string path,
                                                               SequentialReadOptions options = {});

}  // namespace sluice

#endif  // SLUICE_IO_SEQUENTIAL_READER_H_
