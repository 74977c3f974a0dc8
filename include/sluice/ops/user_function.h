// Calling user functions from ops: results normalised to StatusOr, exceptions caught at the op boundary
// and turned into a Status that names the op and the element index.
#ifndef SLUICE_OPS_USER_FUNCTION_H_
#define SLUICE_OPS_USER_FUNCTION_H_

#include <cstdint>
#include <functional>
#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/engine/detail/status_traits.h"

namespace sluice::ops {

// The element type a function returning R produces: R itself, or U for absl::StatusOr<U>.
template <class R>
struct UnwrapStatusOr {
  using type = R;
};
template <class U>
struct UnwrapStatusOr<absl::StatusOr<U>> {
  using type = U;
};
template <class R>
using UnwrapStatusOrT = typename UnwrapStatusOr<std::remove_cvref_t<R>>::type;

// Prefixes an error with where it happened: "Map (element 12): <message>".
inline absl::Status AnnotateError(const absl::Status& status, std::string_view op, int64_t index) {
  return absl::Status(status.code(), absl::StrCat(absl::string_view(op.data(), op.size()), " (element ", index,
                                                  "): ", status.message()));
}

// Invokes f(args...) and returns its result as StatusOr; errors and exceptions are annotated.
template <class F, class... Args>
auto InvokeUserFunction(std::string_view op, int64_t index, F& f, Args&&... args)
    -> absl::StatusOr<UnwrapStatusOrT<std::invoke_result_t<F&, Args...>>> {
  try {
    if constexpr (detail::IsStatusOr<std::remove_cvref_t<std::invoke_result_t<F&, Args...>>>::value) {
      auto result = std::invoke(f, std::forward<Args>(args)...);
      if (!result.ok()) return AnnotateError(result.status(), op, index);
      return result;
    } else {
      return std::invoke(f, std::forward<Args>(args)...);
    }
  } catch (...) {
    return AnnotateError(detail::StatusFromCurrentException(), op, index);
  }
}

}  // namespace sluice::ops

#endif  // SLUICE_OPS_USER_FUNCTION_H_
