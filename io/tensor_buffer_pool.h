// Tensor buffer memory: 64-byte aligned blocks recycled by size class, so that a pipeline in steady state
// makes no trip to malloc per tensor (glibc serves aligned requests on a slow path that splits chunks
// and takes the arena lock).
//
// Contract:
// - AllocateTensorBlock(bytes) returns a block of at least `bytes` bytes aligned to kTensorBlockAlignment
//   (throws std::bad_alloc like operator new); FreeTensorBlock(block, bytes) takes it back, with the same
//   `bytes`, from any thread.
// - Up to kMaxPooledBytes, sizes round up to a size class (64-byte steps to 256 B, then four classes per
//   power of two: at most 25% slack). Larger blocks come from and go back to the system each time.
// - Each thread caches freed blocks per class, at most ThreadCacheLimit(class) of them; beyond that a run
//   of half of them moves to a shared list (one lock per run). A thread with an empty list takes a run
//   from there before asking the system. The shared lists hold at most kSharedCacheBytes in all; beyond
//   that, blocks go back to the system. So a producer thread allocating and a consumer thread freeing
//   recycle each other's blocks.
// - A thread's cache moves to the shared lists when the thread exits; blocks freed after that (by
//   thread_local destructors that run later, or static ones) go to the shared lists directly.
// - Under AddressSanitizer every call goes to the system, so use after free stays detectable.
#ifndef SLUICE_IO_TENSOR_BUFFER_POOL_H_
#define SLUICE_IO_TENSOR_BUFFER_POOL_H_

#include <cstddef>

namespace sluice::detail {

inline constexpr size_t kTensorBlockAlignment = 64;
inline constexpr size_t kMaxPooledBytes = size_t{4} << 20;
inline constexpr size_t kSharedCacheBytes = size_t{64} << 20;

// False under AddressSanitizer: every block then comes from and goes back to the system.
bool TensorBlocksArePooled();

void* AllocateTensorBlock(size_t bytes);
void FreeTensorBlock(void* block, size_t bytes) noexcept;

// The size a request of `bytes` really occupies: its class size when pooled, else `bytes`.
size_t TensorBlockClassBytes(size_t bytes);
// How many freed blocks of `bytes`' class one thread keeps before handing a run to the shared lists.
size_t ThreadCacheLimit(size_t bytes);

// Introspection for tests: blocks of `bytes`' class cached by the calling thread, and in the shared lists.
size_t ThreadCachedTensorBlocks(size_t bytes);
size_t SharedCachedTensorBlocks(size_t bytes);
// Returns every block the shared lists hold to the system (tests start from a known state).
void ReleaseSharedTensorBlocks();

}  // namespace sluice::detail

#endif  // SLUICE_IO_TENSOR_BUFFER_POOL_H_
