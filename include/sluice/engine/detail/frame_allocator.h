// Allocation of Task coroutine frames: a small per-thread cache of recently freed frames.
//
// A pipeline starts a Task per element in several places (a source's WaitReady per record, for one), so
// a frame of the same size is allocated and freed over and over. Each thread keeps up to a few freed
// frames per 64-byte size class up to 1 KiB and hands them out again; larger frames, a full cache and
// frames freed after the thread's cache is gone go to the global allocator. A frame freed on another
// thread than the one that made it goes to the freeing thread's cache. Asio's awaitable frames are
// recycled per thread the same way.
//
// In a library built with AddressSanitizer every frame comes from the global allocator, so a use of a
// destroyed frame is still reported. Defined in the library, so every frame of a process takes one path.
#ifndef SLUICE_ENGINE_DETAIL_FRAME_ALLOCATOR_H_
#define SLUICE_ENGINE_DETAIL_FRAME_ALLOCATOR_H_

#include <cstddef>

#include "sluice/export.h"

namespace sluice::detail {

// Throws std::bad_alloc as operator new does. `size` must be passed again to FreeFrame.
SLUICE_EXPORT void* AllocateFrame(std::size_t size);
SLUICE_EXPORT void FreeFrame(void* frame, std::size_t size) noexcept;
// False in a library built with AddressSanitizer (every frame from the global allocator).
SLUICE_EXPORT bool RecyclesFrames() noexcept;

}  // namespace sluice::detail

#endif  // SLUICE_ENGINE_DETAIL_FRAME_ALLOCATOR_H_
