// Read buffers kept across readers: when a file's reader ends, its idle buffers wait here for the next
// reader (the next shard of an interleave, the next epoch's files) instead of going back to the system.
// A buffer fresh from the system faults its pages in during the read's copy: on a paravirtualised VM
// that was ~12 us per 4 KiB page, 6 ms for two 1 MiB reads against 0.2 ms into buffers already mapped,
// paid once per file at every epoch (docs/hot-path.md, "Read buffers").
//
// Contract:
// - TakeCachedReadBuffer(bytes) returns a cached buffer of exactly `bytes` bytes (allocated with
//   ::operator new(bytes, std::align_val_t(kDirectIoAlignment))), or nullptr when there is none.
// - CacheReadBuffer(buffer, bytes) keeps it and returns true, unless the cache would then hold more than
//   kReadBufferCacheBytes (or buffers are not cached, under AddressSanitizer): false, and the caller
//   frees it.
// - Thread-safe (one mutex; a reader takes or gives a handful of buffers per file, never per record).
#ifndef SLUICE_IO_READ_BUFFER_CACHE_H_
#define SLUICE_IO_READ_BUFFER_CACHE_H_

#include <cstddef>

namespace sluice::detail {

inline constexpr size_t kReadBufferCacheBytes = size_t{32} << 20;

// False under AddressSanitizer: every buffer then comes from and goes back to the system.
bool ReadBuffersAreCached();

std::byte* TakeCachedReadBuffer(size_t bytes);
bool CacheReadBuffer(std::byte* buffer, size_t bytes);

// Introspection for tests: the bytes held, and emptying the cache (every buffer freed).
size_t CachedReadBufferBytes();
void ReleaseCachedReadBuffers();

}  // namespace sluice::detail

#endif  // SLUICE_IO_READ_BUFFER_CACHE_H_
