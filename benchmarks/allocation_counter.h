// Counts calls to the global operator new (every form) with relaxed atomics, so a benchmark can report
// allocations per element. It replaces the global operators for the whole program: include it from
// exactly one .cc of a benchmark binary, never from the library or a test.
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

namespace sluice::bench {

inline std::atomic<uint64_t> allocation_calls{0};

// Calls to operator new since the program started, over all threads.
inline uint64_t AllocationCount() { return allocation_calls.load(std::memory_order_relaxed); }

namespace counter_detail {

inline void* Allocate(std::size_t bytes, std::size_t alignment) noexcept {
  allocation_calls.fetch_add(1, std::memory_order_relaxed);
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

#endif  // SLUICE_BENCHMARKS_ALLOCATION_COUNTER_H_
