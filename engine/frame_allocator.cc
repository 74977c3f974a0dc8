#include "sluice/engine/detail/frame_allocator.h"

#include <cstdint>
#include <new>

#include "engine/sanitizers.h"

namespace sluice::detail {
namespace {

// Under ASan every frame goes back to the global allocator, so a use of a destroyed frame is reported.
constexpr bool kRecycleFrames = !kAddressSanitizer;

constexpr std::size_t kGranule = 64;
constexpr std::size_t kSizeClasses = 16;  // frames up to 1 KiB
constexpr std::size_t kFramesPerClass = 4;

struct FrameCache {
  void* frames[kSizeClasses][kFramesPerClass] = {};
  std::uint8_t counts[kSizeClasses] = {};

  ~FrameCache();
};

// Trivially destructible, so it can be read after the cache's destructor ran (frames freed by other
// thread_local objects' destructors).
thread_local bool tls_cache_gone = false;
thread_local FrameCache tls_cache;

FrameCache::~FrameCache() {
  tls_cache_gone = true;
  for (std::size_t c = 0; c < kSizeClasses; ++c) {
    for (std::uint8_t i = 0; i < counts[c]; ++i) ::operator delete(frames[c][i]);
    counts[c] = 0;
  }
}

// 0 for 1..64 bytes, 1 for 65..128, ...; kSizeClasses and above are not cached.
std::size_t SizeClass(std::size_t size) { return (size - 1) / kGranule; }

}  // namespace

void* AllocateFrame(std::size_t size) {
  const std::size_t size_class = SizeClass(size);
  if (!kRecycleFrames || size_class >= kSizeClasses) return ::operator new(size);
  if (!tls_cache_gone) {
    FrameCache& cache = tls_cache;
    if (cache.counts[size_class] != 0) return cache.frames[size_class][--cache.counts[size_class]];
  }
  // Always the class's full size: whichever thread frees it may hand it to any frame of the class.
  return ::operator new((size_class + 1) * kGranule);
}

void FreeFrame(void* frame, std::size_t size) noexcept {
  const std::size_t size_class = SizeClass(size);
  if (!kRecycleFrames || size_class >= kSizeClasses) {
    ::operator delete(frame);
    return;
  }
  if (!tls_cache_gone) {
    FrameCache& cache = tls_cache;
    if (cache.counts[size_class] < kFramesPerClass) {
      cache.frames[size_class][cache.counts[size_class]++] = frame;
      return;
    }
  }
  ::operator delete(frame);
}

bool RecyclesFrames() noexcept { return kRecycleFrames; }

}  // namespace sluice::detail
