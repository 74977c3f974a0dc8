// Allocations sized by file contents: a ceiling no allocation can pass, and allocation that reports
// failure instead of throwing, so a reader can turn "out of memory" into a Status naming the file,
// the offset and the size asked (RESOURCE_EXHAUSTED) instead of a std::bad_alloc escaping as INTERNAL.
//
// Contract:
// - AllocationCeiling(): the most memory this process could ever be given: RAM + swap, lowered to
//   RLIMIT_AS and RLIMIT_DATA when those are set. Taken once (the first call) and cached. A record
//   larger than it can never be held, so readers refuse it before asking for any memory (a hostile
//   2^62-byte length header allocates nothing, which also keeps sanitizer allocators, which abort on
//   huge requests, out of it).
// - TryAllocateBytes(n): n uninitialised bytes, or nullptr when the allocator refuses (never throws).
// - OutOfMemory(file, offset, what, bytes, detail): RESOURCE_EXHAUSTED "FILE: <what> at offset OFFSET
//   needs BYTES bytes: out of memory" followed by " (<detail>)" when detail is not empty.
// Thread-safe.
#ifndef SLUICE_IO_MEMORY_LIMIT_H_
#define SLUICE_IO_MEMORY_LIMIT_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace sluice::io {

uint64_t AllocationCeiling();

std::unique_ptr<std::byte[]> TryAllocateBytes(size_t n);

absl::Status OutOfMemory(absl::string_view file, uint64_t offset, absl::string_view what, uint64_t bytes,
                         absl::string_view detail = {});

}  // namespace sluice::io

#endif  // SLUICE_IO_MEMORY_LIMIT_H_
