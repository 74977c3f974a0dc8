// Compile-time facts about absl::Status-like types, and the conversion of exceptions into Status.
#ifndef SLUICE_ENGINE_DETAIL_STATUS_TRAITS_H_
#define SLUICE_ENGINE_DETAIL_STATUS_TRAITS_H_

#include <exception>
#include <string_view>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sluice/export.h"

namespace sluice::detail {

template <class T>
struct IsStatusOr : std::false_type {};
template <class T>
struct IsStatusOr<absl::StatusOr<T>> : std::true_type {};

// True for absl::Status and absl::StatusOr<U>: results that can carry an error as a value.
template <class T>
inline constexpr bool kIsStatusLike =
    std::is_same_v<std::remove_cvref_t<T>, absl::Status> || IsStatusOr<std::remove_cvref_t<T>>::value;

// Whether `value` is an error; false for types that cannot carry one.
template <class T>
bool IsErrorValue(const T& value) {
  if constexpr (kIsStatusLike<T>) {
    return !value.ok();
  } else {
    return false;
  }
}

// Must be called inside a catch handler (or unhandled_exception): names the exception's message.
SLUICE_EXPORT absl::Status StatusFromCurrentException(std::string_view where = "");

}  // namespace sluice::detail

#endif  // SLUICE_ENGINE_DETAIL_STATUS_TRAITS_H_
