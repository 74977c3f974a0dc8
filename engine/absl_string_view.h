// Debian's Abseil is built with its own string_view, not std's, so absl::StrCat and friends do not take
// a std::string_view; this hands them one without a copy.
#pragma once

#include <string_view>

#include "absl/strings/string_view.h"

namespace sluice {

inline absl::string_view AbslView(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace sluice
