#include "sluice/io/sequential_reader.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "io/mapped_blocks.h"
#include "io/read_buffer_cache.h"
#include "sluice/engine/async_event.h"
#include "sluice/engine/async_scope.h"
#include "sluice/engine/executor.h"
#include "sluice/engine/task.h"

namespace sluice {
namespace {

size_t RoundUp(size_t n, size_t alignment) { return (n + alignment - 1) / alignment * alignment; }

// Aligned buffers of one size, recycled when the last Block referencing one is dropped. The mutex (not a
// bare use_count check) orders a consumer's last reads of a buffer before the next read into it, on
// whatever thread the consumer drops it.
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  // The free list is reserved here so that Release, which runs in a Block's deleter, never allocates.
  BufferPool(size_t capacity, size_t max_free) : capacity_(capacity), max_free_(max_free) {
    free_.reserve(max_free);
  }
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  ~BufferPool() {
    for (std::byte* p : free_) Free(p);
  }

  // nullptr when out of memory (the caller reports it with the file and offset).
  std::shared_ptr<std::byte> Acquire() {
    std::byte* p = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        p = free_.back();
        free_.pop_back();
      }
    }
    if (p == nullptr) p = detail::TakeCachedReadBuffer(capacity_);
    if (p == nullptr) {
      p = static_cast<std::byte*>(::operator new(capacity_, std::align_val_t(kDirectIoAlignment), std::nothrow));
      if (p == nullptr) return nullptr;
    }
    try {
      return std::shared_ptr<std::byte>(p, Returner{shared_from_this()});
    } catch (const std::bad_alloc&) {
      return nullptr;  // the control block: shared_ptr has handed `p` back to Release already
    }
  }

  size_t capacity() const { return capacity_; }

 private:
  struct Returner {
    std::shared_ptr<BufferPool> pool;
    void operator()(std::byte* p) const { pool->Release(p); }
  };

  void Release(std::byte* p) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (free_.size() < max_free_) {
        free_.push_back(p);
        return;
      }
    }
    Free(p);
  }
  // To the process-wide cache while it has room: the next reader's reads land in mapped pages.
  void Free(std::byte* p) const {
    if (!detail::CacheReadBuffer(p, capacity_)) ::operator delete(p, std::align_val_t(kDirectIoAlignment));
  }

  const size_t capacity_;
  const size_t max_free_;
  std::mutex mu_;
  std::vector<std::byte*> free_;
};

// One read in flight: written by its read task, read by the generator once `done` is set.
struct Slot {
  explicit Slot(Executor* resume_on) : done(false, resume_on) {}
  std::shared_ptr<std::byte> buffer;
  uint64_t offset = 0;
  size_t length = 0;       // bytes expected (less than the buffer at end of file)
  size_t read_length = 0;  // bytes asked for (length rounded up for direct reads)
  absl::StatusOr<size_t> result = size_t{0};
  AsyncEvent done;
};

Task<absl::Status> ReadIntoSlot(File* file, Slot* slot, std::atomic<std::thread::id>* completion_thread) {
  std::span<std::byte> buf(slot->buffer.get(), slot->read_length);
  slot->result = co_await file->ReadAt(buf, slot->offset);
  completion_thread->store(std::this_thread::get_id(), std::memory_order_relaxed);
  slot->done.Set();  // last touch of *slot: the generator may free it once it sees the event set
  co_return absl::OkStatus();
}

void StartRead(AsyncScope& scope, File& file, BufferPool& pool, Slot& slot, uint64_t offset, size_t length,
               std::atomic<std::thread::id>& completion_thread) {
  slot.buffer = pool.Acquire();
  slot.offset = offset;
  slot.length = length;
  // Always ask for the aligned length: File refuses unaligned direct reads, and a read past the end of
  // the file simply returns less.
  slot.read_length = std::min(RoundUp(length, kDirectIoAlignment), pool.capacity());
  slot.result = size_t{0};
  slot.done.Reset();
  if (slot.buffer == nullptr) {
    slot.result = absl::ResourceExhaustedError(absl::StrCat(file.path(), ": read buffer for offset ", offset,
                                                            " needs ", pool.capacity(), " bytes: out of memory"));
    slot.done.Set();
    return;
  }
  scope.Spawn(ReadIntoSlot(&file, &slot, &completion_thread));
}

absl::StatusOr<Block> BlockFailure(absl::Status status) { return status; }

// Destroying the generator with reads in flight joins them, blocking the destroying thread. On the
// io_uring reactor's own thread no completion could ever arrive: fail loudly instead of hanging.
struct ReactorThreadCheck {
  ReactorThreadCheck(const AsyncScope* scope, const std::atomic<std::thread::id>* completion_thread, bool uring)
      : scope(scope), completion_thread(completion_thread), uring(uring) {}
  ReactorThreadCheck(const ReactorThreadCheck&) = delete;
  ReactorThreadCheck& operator=(const ReactorThreadCheck&) = delete;
  ~ReactorThreadCheck() {
    if (uring && scope->pending() > 0 &&
        completion_thread->load(std::memory_order_relaxed) == std::this_thread::get_id()) {
      // A crash path: straight to stderr, whatever the log level and sink (see sluice/engine/log.h).
      std::fprintf(stderr,
                   "sluice: a ReadBlocks generator was destroyed on the io_uring reactor thread with reads in "
                   "flight, which would deadlock; set SequentialReadOptions::resume_on\n");
      std::abort();
    }
  }
  const AsyncScope* scope;
  const std::atomic<std::thread::id>* completion_thread;
  bool uring;
};

}  // namespace

AsyncGenerator<absl::StatusOr<Block>> ReadBlocks(Reactor& reactor, std::string path,
                                                 SequentialReadOptions options) {
  if (options.block_size == 0 || options.blocks_in_flight < 1) {
    absl::StatusOr<Block> error = BlockFailure(absl::InvalidArgumentError(
        absl::StrCat(path, ": ReadBlocks needs block_size > 0 and blocks_in_flight >= 1, got ",
                     options.block_size, " and ", options.blocks_in_flight)));
    co_yield std::move(error);
    co_return;
  }
  OpenOptions open_options;
  open_options.direct = options.direct;
  absl::StatusOr<File> opened = co_await File::Open(reactor, path, open_options);
  if (!opened.ok()) {
    absl::StatusOr<Block> error = BlockFailure(opened.status());
    co_yield std::move(error);
    co_return;
  }
  File file = std::move(*opened);
  const uint64_t size = file.Size();
  const uint64_t start = options.start_offset;
  if (start > size) {
    absl::StatusOr<Block> error = BlockFailure(absl::OutOfRangeError(
        absl::StrCat(path, ": start offset ", start, " is past the end of the file (", size, " bytes)")));
    co_yield std::move(error);
    co_return;
  }
  if (size == 0) {
    // /proc and /sys files stat as empty but read as text, and a file opened empty may be written since:
    // read such a file to its end, a block at a time, rather than pass it off as empty.
    std::shared_ptr<BufferPool> pool =
        std::make_shared<BufferPool>(RoundUp(options.block_size, kDirectIoAlignment), 1);
    for (uint64_t pos = 0;;) {
      std::stop_token stop = co_await CurrentStopToken();
      if (stop.stop_requested()) {
        absl::StatusOr<Block> error =
            BlockFailure(absl::CancelledError(absl::StrCat(path, ": read cancelled at offset ", pos)));
        co_yield std::move(error);
        co_return;
      }
      std::shared_ptr<std::byte> buffer = pool->Acquire();
      if (buffer == nullptr) {
        absl::StatusOr<Block> error = BlockFailure(absl::ResourceExhaustedError(absl::StrCat(
            path, ": read buffer for offset ", pos, " needs ", pool->capacity(), " bytes: out of memory")));
        co_yield std::move(error);
        co_return;
      }
      const std::span<std::byte> into(buffer.get(), pool->capacity());  // GCC12 PR100611
      absl::StatusOr<size_t> got = co_await file.ReadAt(into, pos);
      ResumeOn hop{options.resume_on};  // the read completed on the reactor's thread
      co_await hop;
      if (!got.ok()) {
        absl::StatusOr<Block> error = BlockFailure(got.status());
        co_yield std::move(error);
        co_return;
      }
      if (*got == 0) co_return;
      Block block;
      block.data = std::span<const std::byte>(buffer.get(), *got);
      block.buffer = std::move(buffer);
      block.offset = pos;
      pos += *got;
      // A direct read past a short one would start unaligned: the end the file had is enough.
      const bool last = file.direct() && *got < into.size();
      absl::StatusOr<Block> out(std::move(block));
      co_yield std::move(out);
      if (last) co_return;
    }
  }
  if (start == size) co_return;
  if (io::ShouldMap(file, options)) {
    AsyncGenerator<absl::StatusOr<Block>> windows = io::MapBlocks(reactor, std::move(file), path, options);
    for (;;) {
      std::optional<absl::StatusOr<Block>> window = co_await windows.Next();
      if (!window.has_value()) break;
      co_yield std::move(*window);
    }
    co_return;
  }
  // Declaration order is destruction order in reverse: `scope` goes first, so a generator destroyed
  // mid-stream joins its reads before the slots, buffers and the fd they use are released.
  const size_t block_size = RoundUp(options.block_size, file.direct() ? kDirectIoAlignment : 1);
  const size_t depth = static_cast<size_t>(options.blocks_in_flight);
  std::shared_ptr<BufferPool> pool =
      std::make_shared<BufferPool>(RoundUp(block_size, kDirectIoAlignment), depth + 1);
  std::vector<std::unique_ptr<Slot>> slots;
  for (size_t i = 0; i < depth; ++i) slots.push_back(std::make_unique<Slot>(options.resume_on));
  std::atomic<std::thread::id> completion_thread{};
  AsyncScope scope;
  ReactorThreadCheck check(&scope, &completion_thread, reactor.backend() == IoBackend::kUring);

  // O_DIRECT reads start aligned; the bytes before `start` in the first block are not handed out.
  const uint64_t first = file.direct() ? start / kDirectIoAlignment * kDirectIoAlignment : start;
  const uint64_t num_blocks = (size - first + block_size - 1) / block_size;
  auto block_offset = [&](uint64_t k) { return first + k * block_size; };
  auto block_length = [&](uint64_t k) {
    return static_cast<size_t>(std::min<uint64_t>(block_size, size - block_offset(k)));
  };
  for (uint64_t k = 0; k < std::min<uint64_t>(depth, num_blocks); ++k) {
    StartRead(scope, file, *pool, *slots[k], block_offset(k), block_length(k), completion_thread);
  }

  absl::Status failure;
  for (uint64_t k = 0; k < num_blocks; ++k) {
    Slot& slot = *slots[k % depth];
    std::stop_token stop = co_await CurrentStopToken();
    if (stop.stop_requested()) {
      failure = absl::CancelledError(absl::StrCat(path, ": read cancelled at offset ", slot.offset));
      break;
    }
    absl::Status waited = co_await slot.done.Wait();
    if (!waited.ok()) {
      failure = absl::CancelledError(absl::StrCat(path, ": read cancelled at offset ", slot.offset));
      break;
    }
    if (!slot.result.ok()) {
      failure = slot.result.status();
      break;
    }
    if (*slot.result < slot.length) {
      failure = absl::DataLossError(absl::StrCat(path, ": file shrank while being read: expected ", slot.length,
                                                 " bytes at offset ", slot.offset, ", got ", *slot.result));
      break;
    }
    const size_t skip = static_cast<size_t>(std::max(slot.offset, start) - slot.offset);
    Block block;
    block.data = std::span<const std::byte>(slot.buffer.get() + skip, slot.length - skip);
    block.offset = slot.offset + skip;
    block.buffer = std::move(slot.buffer);
    // Refill the slot before handing the block out, so `depth` reads run while the consumer works.
    if (k + depth < num_blocks) {
      StartRead(scope, file, *pool, slot, block_offset(k + depth), block_length(k + depth), completion_thread);
    }
    absl::StatusOr<Block> out(std::move(block));
    co_yield std::move(out);
  }

  if (scope.pending() > 0) {
    scope.RequestStop();
    co_await scope.Join();
    // The last completion resumed us on the reactor's thread: leave it before the consumer runs.
    ResumeOn hop{options.resume_on};
    co_await hop;
  }
  if (!failure.ok()) {
    absl::StatusOr<Block> error = BlockFailure(std::move(failure));
    co_yield std::move(error);
  }
}

}  // namespace sluice
