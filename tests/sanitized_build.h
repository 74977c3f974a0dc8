// Whether the tests run under ASan/UBSan or TSan. Those builds look for thread and lifetime bugs, which the
// same bytes pushed through every parameter again would not add, so stress loops run fewer rounds there.
#ifndef SLUICE_TESTS_SANITIZED_BUILD_H_
#define SLUICE_TESTS_SANITIZED_BUILD_H_

namespace sluice::testing_util {

#if defined(SLUICE_SANITIZED_BUILD)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif

// Divides a stress loop's round count under sanitizers.
inline constexpr int kSanitizerSlowdown = kSanitizedBuild ? 4 : 1;

}  // namespace sluice::testing_util

#endif  // SLUICE_TESTS_SANITIZED_BUILD_H_
