#include "io/memory_limit.h"

#include <sys/resource.h>
#include <sys/sysinfo.h>

#include <algorithm>
#include <limits>
#include <new>

#include "absl/strings/str_cat.h"

namespace sluice::io {
namespace {

uint64_t ComputeCeiling() {
  uint64_t ceiling = std::numeric_limits<uint64_t>::max();
  struct sysinfo info;
  if (::sysinfo(&info) == 0) {
    const uint64_t unit = info.mem_unit == 0 ? 1 : info.mem_unit;
    ceiling = (static_cast<uint64_t>(info.totalram) + static_cast<uint64_t>(info.totalswap)) * unit;
  }
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit limit;
    if (::getrlimit(resource, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
      ceiling = std::min<uint64_t>(ceiling, limit.rlim_cur);
    }
  }
  // Never above what a size_t (and operator new) can express.
  return std::min<uint64_t>(ceiling, std::numeric_limits<std::ptrdiff_t>::max());
}

}  // namespace

uint64_t AllocationCeiling() {
  static const uint64_t ceiling = ComputeCeiling();
  return ceiling;
}

std::unique_ptr<std::byte[]> TryAllocateBytes(size_t n) {
  return std::unique_ptr<std::byte[]>(new (std::nothrow) std::byte[n]);
}

absl::Status OutOfMemory(absl::string_view file, uint64_t offset, absl::string_view what, uint64_t bytes,
                         absl::string_view detail) {
  return absl::ResourceExhaustedError(absl::StrCat(file, ": ", what, " at offset ", offset, " needs ", bytes,
                                                   " bytes: out of memory", detail.empty() ? "" : " (", detail,
                                                   detail.empty() ? "" : ")"));
}

}  // namespace sluice::io
