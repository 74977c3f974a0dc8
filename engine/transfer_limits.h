// What both I/O backends (engine/uring_reactor.cc, engine/thread_io_backend.cc) share about one file
// transfer: its size cap, its retry budget and how a statx result becomes a FileStat.
#ifndef SLUICE_ENGINE_TRANSFER_LIMITS_H_
#define SLUICE_ENGINE_TRANSFER_LIMITS_H_

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>

#include "sluice/engine/reactor.h"

namespace sluice::detail {

// The kernel caps one read/write at MAX_RW_COUNT (just under 2 GiB); staying below keeps `len` exact.
inline constexpr size_t kMaxTransferChunk = size_t{1} << 30;
// EINTR/EAGAIN retries in a row before a transfer gives up (an O_NONBLOCK fd could spin forever).
inline constexpr int kMaxTransferRetries = 64;

inline FileStat ToFileStat(const struct statx& st) {
  FileStat out;
  out.size = st.stx_size;
  out.mode = st.stx_mode;
  out.mtime_ns = static_cast<uint64_t>(st.stx_mtime.tv_sec) * 1000000000ull + st.stx_mtime.tv_nsec;
  out.block_size = st.stx_blksize;
  return out;
}

}  // namespace sluice::detail

#endif  // SLUICE_ENGINE_TRANSFER_LIMITS_H_
