// The trampoline slot of sluice/engine/detail/transfer.h: defined here, once, so that every module of
// a process (libsluice.so and the programs and libraries built against it) shares one slot per thread.
#include "sluice/engine/detail/transfer.h"

namespace sluice::detail {

constinit thread_local std::coroutine_handle<> pending_transfer;

}  // namespace sluice::detail
