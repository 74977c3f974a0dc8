#include "sluice/engine/detail/status_traits.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace sluice::detail {

absl::Status StatusFromCurrentException(std::string_view where) {
  std::string prefix = where.empty() ? std::string() : absl::StrCat(absl::string_view(where.data(), where.size()), ": ");
  try {
    throw;
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(prefix, "exception thrown: ", e.what()));
  } catch (...) {
    return absl::InternalError(absl::StrCat(prefix, "unknown exception thrown"));
  }
}

}  // namespace sluice::detail
