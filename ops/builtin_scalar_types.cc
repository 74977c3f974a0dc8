// The standard ops over the built-in scalar element types.
// The built-in registrations are split over a few files so that they compile in parallel: each type
// instantiates every generic op (sluice/ops/registration.h).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ops/builtin_registrations.h"
#include "sluice/ops/registration.h"

namespace sluice {
void RegisterBuiltinScalarTypes() {
  registration_detail::RegisterTypeAtStartup<bool>();
  registration_detail::RegisterTypeAtStartup<int32_t>();
  registration_detail::RegisterTypeAtStartup<int64_t>();
  registration_detail::RegisterTypeAtStartup<float>();
  registration_detail::RegisterTypeAtStartup<double>();
}

}  // namespace sluice
