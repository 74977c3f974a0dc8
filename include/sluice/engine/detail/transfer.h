// Symmetric transfer that keeps the stack bounded on every compiler and build.
//
// Optimised GCC and Clang builds compile `return handle;` from await_suspend as a tail call, so chains
// of coroutines resuming each other use constant stack. GCC does not at -O0 or under ASan/TSan
// (PR 100897): every transfer then nests a call, and a 32-deep generator chain overflows within a few
// thousand elements. In those builds TransferTo() parks the next handle in a thread-local slot and
// returns to the nearest Resume() on this thread, which runs it: a trampoline. The slot is only
// touched between an await_suspend and the driver loop on the same thread, never across a co_await.
//
// Every place that starts or restarts a coroutine from ordinary code (SyncWait, pool and reactor
// loops, executors, scopes) calls Resume(), never handle.resume(); Resume() always drains the slot,
// so translation units built in either mode can be mixed.
#ifndef SLUICE_ENGINE_DETAIL_TRANSFER_H_
#define SLUICE_ENGINE_DETAIL_TRANSFER_H_

#include <coroutine>
#include <utility>

#include "sluice/export.h"

#if !defined(SLUICE_TRAMPOLINE_TRANSFER)
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || !defined(__OPTIMIZE__)
#define SLUICE_TRAMPOLINE_TRANSFER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SLUICE_TRAMPOLINE_TRANSFER 1
#endif
#endif
#endif
#if !defined(SLUICE_TRAMPOLINE_TRANSFER)
#define SLUICE_TRAMPOLINE_TRANSFER 0
#endif

namespace sluice::detail {

// One slot per thread for the whole process, defined once in the library (engine/transfer.cc) and
// exported. It must not be an inline variable: libsluice.so is built with hidden visibility and
// optimised (no trampoline), so the library and a program built at -O0 would each get a copy of their
// own, and a handle the program parks in its copy (TransferTo in one of its awaiters) would never be run
// by the Resume() in the library's pool or reactor loop that drives it: the coroutine chain would stall.
// constinit: the slot is constant-initialised, so no thread_local wrapper call guards each access.
SLUICE_EXPORT extern constinit thread_local std::coroutine_handle<> pending_transfer;

// Use as `return TransferTo(next);` in await_suspend.
inline std::coroutine_handle<> TransferTo(std::coroutine_handle<> next) noexcept {
#if SLUICE_TRAMPOLINE_TRANSFER
  pending_transfer = next;
  return std::noop_coroutine();
#else
  return next;
#endif
}

// Resumes `handle` and every coroutine it transfers to, until control comes back to ordinary code.
inline void Resume(std::coroutine_handle<> handle) {
  handle.resume();
  while (std::coroutine_handle<> next = std::exchange(pending_transfer, nullptr)) next.resume();
}

}  // namespace sluice::detail

#endif  // SLUICE_ENGINE_DETAIL_TRANSFER_H_
