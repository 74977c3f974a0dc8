// Counts calls to the global operator new (every form), so a benchmark can report allocations per
// element. It replaces the global operators for the whole program: include it from exactly one .cc of a
// benchmark binary (or the `sluice` tool's main), never from the library or a test.
//
// Each thread counts in one of 64 cache-line slots (relaxed atomics), so threads allocating at once do not
// pass one counter's line between their cores; the count is the slots' sum.
//
// Under a sanitizer nothing is replaced and kCountsAllocations is false: the runtime brings its own
// operator new (TSan's static runtime collides with a replacement at link time; ASan's checks that new and
// delete pair up).
//
//   const uint64_t before = sluice::bench::AllocationCount();
//   ... work ...
//   const uint64_t allocations = sluice::bench::AllocationCount() - before;
#ifndef SLUICE_BENCHMARKS_ALLOCATION_COUNTER_H_
#define SLUICE_BENCHMARKS_ALLOCATION_COUNTER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "engine/sanitizers.h"

namespace sluice::bench {

inline constexpr bool kCountsAllocations = !(SLUICE_ADDRESS_SANITIZER || SLUICE_THREAD_SANITIZER);

namespace counter_detail {

inline constexpr unsigned kSlots = 64;
struct alignas(64) Slot {
  std::atomic<uint64_t> calls{0};
};
inline Slot slots[kSlots];
inline std::atomic<unsigned> next_slot{0};

inline void CountOne() noexcept {
  thread_local const unsigned slot = next_slot.fetch_add(1, std::memory_order_relaxed) % kSlots;
  slots[slot].calls.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace counter_detail

// Calls to operator new since the program started, over all threads (0 when !kCountsAllocations).
inline uint64_t AllocationCount() {
  uint64_t total = 0;
  for (const counter_detail::Slot& slot : counter_detail::slots) {
    total += slot.calls.load(std::memory_order_relaxed);
  }
  return total;
}

namespace counter_detail {

inline void* Allocate(std::size_t bytes, std::size_t alignment) noexcept {
  CountOne();
  if (bytes == 0) bytes = 1;
  if (alignment <= alignof(std::max_align_t)) return std::malloc(bytes);
  void* p = nullptr;
  return ::posix_memalign(&p, alignment, bytes) == 0 ? p : nullptr;
}

inline void* AllocateOrThrow(std::size_t bytes, std::size_t alignment) {
  void* p = Allocate(bytes, alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace counter_detail
}  // namespace sluice::bench

#if !(SLUICE_ADDRESS_SANITIZER || SLUICE_THREAD_SANITIZER)
// Replacement functions ([new.delete]); the nothrow and sized forms too, so that nothing bypasses the count.
void* operator new(std::size_t n) { return sluice::bench::counter_detail::AllocateOrThrow(n, 0); }
void* operator new[](std::size_t n) { return sluice::bench::counter_detail::AllocateOrThrow(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) {
  return sluice::bench::counter_detail::AllocateOrThrow(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return sluice::bench::counter_detail::AllocateOrThrow(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return sluice::bench::counter_detail::Allocate(n, 0);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return sluice::bench::counter_detail::Allocate(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return sluice::bench::counter_detail::Allocate(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return sluice::bench::counter_detail::Allocate(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

#endif  // no sanitizer

#endif  // SLUICE_BENCHMARKS_ALLOCATION_COUNTER_H_
