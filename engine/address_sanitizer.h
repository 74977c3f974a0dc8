// Whether this translation unit is built with AddressSanitizer (GCC's macro, or clang's feature test).
// Memory caches use it to hand every block back to the system under ASan, so use after free stays
// visible.
#ifndef SLUICE_ENGINE_ADDRESS_SANITIZER_H_
#define SLUICE_ENGINE_ADDRESS_SANITIZER_H_

namespace sluice::detail {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace sluice::detail

#endif  // SLUICE_ENGINE_ADDRESS_SANITIZER_H_
