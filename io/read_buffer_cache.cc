#include "io/read_buffer_cache.h"

#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "engine/sanitizers.h"
#include "sluice/io/file.h"

namespace sluice::detail {
namespace {

constexpr bool kCached = !kAddressSanitizer;

struct Cache {
  std::mutex mu;
  std::vector<std::pair<std::byte*, size_t>> buffers;  // most recently cached last
  size_t bytes = 0;
};

// Never destroyed: readers may end during static destruction (a Block held by a static).
Cache& TheCache() {
  static Cache* const cache = new Cache;
  return *cache;
}

void Free(std::byte* buffer) { ::operator delete(buffer, std::align_val_t(kDirectIoAlignment)); }

}  // namespace

bool ReadBuffersAreCached() { return kCached; }

std::byte* TakeCachedReadBuffer(size_t bytes) {
  if (!kCached) return nullptr;
  Cache& cache = TheCache();
  std::lock_guard<std::mutex> lock(cache.mu);
  for (size_t i = cache.buffers.size(); i-- > 0;) {
    if (cache.buffers[i].second != bytes) continue;
    std::byte* buffer = cache.buffers[i].first;
    cache.buffers.erase(cache.buffers.begin() + static_cast<std::ptrdiff_t>(i));
    cache.bytes -= bytes;
    return buffer;
  }
  return nullptr;
}

bool CacheReadBuffer(std::byte* buffer, size_t bytes) {
  if (!kCached || bytes > kReadBufferCacheBytes) return false;
  Cache& cache = TheCache();
  std::lock_guard<std::mutex> lock(cache.mu);
  if (cache.bytes + bytes > kReadBufferCacheBytes) return false;
  try {
    cache.buffers.emplace_back(buffer, bytes);
  } catch (const std::bad_alloc&) {
    return false;
  }
  cache.bytes += bytes;
  return true;
}

size_t CachedReadBufferBytes() {
  Cache& cache = TheCache();
  std::lock_guard<std::mutex> lock(cache.mu);
  return cache.bytes;
}

void ReleaseCachedReadBuffers() {
  std::vector<std::pair<std::byte*, size_t>> buffers;
  {
    Cache& cache = TheCache();
    std::lock_guard<std::mutex> lock(cache.mu);
    buffers.swap(cache.buffers);
    cache.bytes = 0;
  }
  for (const auto& [buffer, bytes] : buffers) Free(buffer);
}

}  // namespace sluice::detail
