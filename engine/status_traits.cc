#include "sluice/engine/detail/status_traits.h"

#include <exception>
#include <new>
#include <string>

#include "absl/strings/str_cat.h"

namespace sluice::detail {
namespace {

// Building the message may itself run out of memory (this is often called for a bad_alloc, inside a
// coroutine's noexcept unhandled_exception): then the status has its code and no message, which absl
// stores without allocating.
absl::Status WithMessage(absl::StatusCode code, std::string_view where, absl::string_view what,
                         absl::string_view detail = "") noexcept {
  try {
    std::string message = where.empty() ? std::string()
                                        : absl::StrCat(absl::string_view(where.data(), where.size()), ": ");
    absl::StrAppend(&message, what, detail);
    return absl::Status(code, message);
  } catch (...) {
    return absl::Status(code, "");
  }
}

}  // namespace

absl::Status StatusFromCurrentException(std::string_view where) {
  try {
    throw;
  } catch (const std::bad_alloc& e) {
    return WithMessage(absl::StatusCode::kResourceExhausted, where, "out of memory: ", e.what());
  } catch (const std::exception& e) {
    return WithMessage(absl::StatusCode::kInternal, where, "exception thrown: ", e.what());
  } catch (...) {
    return WithMessage(absl::StatusCode::kInternal, where, "unknown exception thrown");
  }
}

}  // namespace sluice::detail
