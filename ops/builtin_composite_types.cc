// The standard ops over the compositions a standard op makes of a built-in (Batch, Enumerate, Zip).
// The built-in registrations are split over a few files so that they compile in parallel: each type
// instantiates every generic op (sluice/ops/registration.h).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ops/builtin_registrations.h"
#include "sluice/ops/registration.h"

namespace sluice {
void RegisterBuiltinCompositeTypes() {
  registration_detail::RegisterTypeAtStartup<std::vector<int64_t>>();
  registration_detail::RegisterTypeAtStartup<std::vector<std::string>>();
  registration_detail::RegisterTypeAtStartup<std::pair<int64_t, int64_t>>();
  registration_detail::RegisterTypeAtStartup<std::pair<int64_t, Tensor>>();
  registration_detail::RegisterTypeAtStartup<std::pair<Tensor, Tensor>>();
}

}  // namespace sluice
