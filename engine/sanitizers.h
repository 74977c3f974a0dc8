// Which sanitizer this translation unit is built with, as macros (0 or 1) for code that must differ at
// the preprocessor level, and as a constant: GCC's __SANITIZE_*__ macros, or clang's feature tests.
// Memory caches hand every block back to the system under ASan, so use after free stays visible; the
// pool swaps its lock-free shared queue for a locked one under TSan; a benchmark's allocation counter
// replaces nothing under either (their runtimes bring their own operator new).
#ifndef SLUICE_ENGINE_SANITIZERS_H_
#define SLUICE_ENGINE_SANITIZERS_H_

#if defined(__SANITIZE_ADDRESS__)
#define SLUICE_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLUICE_ADDRESS_SANITIZER 1
#endif
#endif
#if !defined(SLUICE_ADDRESS_SANITIZER)
#define SLUICE_ADDRESS_SANITIZER 0
#endif

#if defined(__SANITIZE_THREAD__)
#define SLUICE_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SLUICE_THREAD_SANITIZER 1
#endif
#endif
#if !defined(SLUICE_THREAD_SANITIZER)
#define SLUICE_THREAD_SANITIZER 0
#endif

namespace sluice::detail {

inline constexpr bool kAddressSanitizer = SLUICE_ADDRESS_SANITIZER == 1;

}  // namespace sluice::detail

#endif  // SLUICE_ENGINE_SANITIZERS_H_
