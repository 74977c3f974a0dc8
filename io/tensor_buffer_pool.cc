#include "io/tensor_buffer_pool.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <mutex>
#include <new>

#include "engine/sanitizers.h"

namespace sluice::detail {
namespace {

constexpr bool kPooled = !kAddressSanitizer;

// Classes: 64, 128, 192, 256, then 2^k * (1.25, 1.5, 1.75, 2) for 2^k from 256 to kMaxPooledBytes / 2.
constexpr size_t kSmallStep = 64;
constexpr size_t kSmallClasses = 4;
constexpr int kFirstShift = 8;
constexpr int kLastShift = std::bit_width(kMaxPooledBytes) - 1;
constexpr size_t kClasses = kSmallClasses + static_cast<size_t>(kLastShift - kFirstShift) * 4;
// Bytes one thread keeps per class (within the block-count clamp below).
constexpr size_t kThreadCacheBytesPerClass = size_t{64} << 10;

static_assert(std::has_single_bit(kMaxPooledBytes));

// Requires bytes <= kMaxPooledBytes.
size_t ClassIndex(size_t bytes) {
  if (bytes <= kSmallClasses * kSmallStep) return bytes == 0 ? 0 : (bytes - 1) / kSmallStep;
  const int k = std::bit_width(bytes - 1) - 1;  // 2^k < bytes <= 2^(k+1)
  const size_t step = size_t{1} << (k - 2);
  const size_t quarters = (bytes + step - 1) / step;  // 5..8
  return kSmallClasses + static_cast<size_t>(k - kFirstShift) * 4 + (quarters - 5);
}

constexpr size_t ClassSize(size_t index) {
  if (index < kSmallClasses) return (index + 1) * kSmallStep;
  const size_t rel = index - kSmallClasses;
  const size_t k = kFirstShift + rel / 4;
  return (size_t{1} << k) + (rel % 4 + 1) * (size_t{1} << (k - 2));
}

static_assert(ClassSize(kClasses - 1) == kMaxPooledBytes);

constexpr size_t ClassLimit(size_t index) {
  return std::clamp<size_t>(kThreadCacheBytesPerClass / ClassSize(index), 2, 64);
}

// How many blocks move between a thread's list and the shared one at a time.
constexpr size_t ClassRun(size_t index) { return ClassLimit(index) / 2; }

void* SystemAllocate(size_t bytes) { return ::operator new (bytes, std::align_val_t{kTensorBlockAlignment}); }

// The unsized aligned delete: clang does not declare the sized forms without -fsized-deallocation.
void SystemFree(void* block, size_t /*bytes*/) noexcept {
  ::operator delete (block, std::align_val_t{kTensorBlockAlignment});
}

// A free block's first word links it to the next one.
struct FreeBlock {
  FreeBlock* next;
};

struct FreeList {
  FreeBlock* head = nullptr;
  size_t count = 0;

  void Push(void* block) {
    auto* b = static_cast<FreeBlock*>(block);
    b->next = head;
    head = b;
    ++count;
  }
  void* Pop() {
    FreeBlock* b = head;
    head = b->next;
    --count;
    return b;
  }
};

// The lists every thread hands runs of blocks to and takes them from. Never destroyed: blocks may be
// freed by static destructors that run after any destructor of this.
class SharedLists {
 public:
  // Moves up to `max` blocks of class `index` to `out`; returns how many moved.
  size_t Take(size_t index, size_t max, FreeList& out) {
    std::lock_guard<std::mutex> lock(mu_);
    FreeList& list = lists_[index];
    size_t moved = 0;
    for (; moved < max && list.head != nullptr; ++moved) out.Push(list.Pop());
    bytes_ -= moved * ClassSize(index);
    return moved;
  }

  // Keeps the blocks of `in` (class `index`) up to the byte bound and returns the others to the system.
  void Put(size_t index, FreeList& in) {
    const size_t size = ClassSize(index);
    {
      std::lock_guard<std::mutex> lock(mu_);
      while (in.head != nullptr && bytes_ + size <= kSharedCacheBytes) {
        lists_[index].Push(in.Pop());
        bytes_ += size;
      }
    }
    while (in.head != nullptr) SystemFree(in.Pop(), size);
  }

  size_t Count(size_t index) {
    std::lock_guard<std::mutex> lock(mu_);
    return lists_[index].count;
  }

  void ReleaseAll() {
    std::array<FreeList, kClasses> taken;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::swap(taken, lists_);
      bytes_ = 0;
    }
    for (size_t i = 0; i < kClasses; ++i) {
      while (taken[i].head != nullptr) SystemFree(taken[i].Pop(), ClassSize(i));
    }
  }

 private:
  std::mutex mu_;
  std::array<FreeList, kClasses> lists_;
  size_t bytes_ = 0;
};

SharedLists& Shared() {
  static SharedLists* shared = new SharedLists;
  return *shared;
}

// Set once a thread's cache is destroyed; trivially destructible, so it stays readable until the thread
// is gone.
thread_local bool t_cache_gone = false;

class ThreadCache {
 public:
  ThreadCache() = default;
  ThreadCache(const ThreadCache&) = delete;
  ThreadCache& operator=(const ThreadCache&) = delete;
  ~ThreadCache() {
    t_cache_gone = true;
    for (size_t i = 0; i < kClasses; ++i) Shared().Put(i, lists_[i]);
  }

  void* Pop(size_t index) {
    FreeList& list = lists_[index];
    if (list.head == nullptr && Shared().Take(index, ClassRun(index), list) == 0) return nullptr;
    return list.Pop();
  }

  void Push(size_t index, void* block) {
    FreeList& list = lists_[index];
    list.Push(block);
    if (list.count < ClassLimit(index)) return;
    FreeList run;
    for (size_t i = ClassRun(index); i > 0; --i) run.Push(list.Pop());
    Shared().Put(index, run);
  }

  size_t Count(size_t index) const { return lists_[index].count; }

 private:
  std::array<FreeList, kClasses> lists_;
};

thread_local ThreadCache t_cache;

ThreadCache* LocalCache() { return t_cache_gone ? nullptr : &t_cache; }

}  // namespace

bool TensorBlocksArePooled() { return kPooled; }

void* AllocateTensorBlock(size_t bytes) {
  if (!kPooled || bytes > kMaxPooledBytes) return SystemAllocate(bytes);
  const size_t index = ClassIndex(bytes);
  if (ThreadCache* cache = LocalCache()) {
    if (void* block = cache->Pop(index)) return block;
  } else {
    FreeList one;
    if (Shared().Take(index, 1, one) == 1) return one.Pop();
  }
  return SystemAllocate(ClassSize(index));
}

void FreeTensorBlock(void* block, size_t bytes) noexcept {
  if (block == nullptr) return;
  if (!kPooled || bytes > kMaxPooledBytes) return SystemFree(block, bytes);
  const size_t index = ClassIndex(bytes);
  if (ThreadCache* cache = LocalCache()) return cache->Push(index, block);
  FreeList one;
  one.Push(block);
  Shared().Put(index, one);
}

size_t TensorBlockClassBytes(size_t bytes) {
  if (!kPooled || bytes > kMaxPooledBytes) return bytes;
  return ClassSize(ClassIndex(bytes));
}

size_t ThreadCacheLimit(size_t bytes) { return ClassLimit(ClassIndex(std::min(bytes, kMaxPooledBytes))); }

size_t ThreadCachedTensorBlocks(size_t bytes) {
  if (!kPooled || bytes > kMaxPooledBytes) return 0;
  ThreadCache* cache = LocalCache();
  return cache == nullptr ? 0 : cache->Count(ClassIndex(bytes));
}

size_t SharedCachedTensorBlocks(size_t bytes) {
  if (!kPooled || bytes > kMaxPooledBytes) return 0;
  return Shared().Count(ClassIndex(bytes));
}

void ReleaseSharedTensorBlocks() { Shared().ReleaseAll(); }

}  // namespace sluice::detail
