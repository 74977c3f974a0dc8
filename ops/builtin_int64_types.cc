// The standard ops over int64 (Range) and what Batch, Enumerate and Zip make of it.
// The built-in registrations are split over a few files so that they compile in parallel, and kept to the
// types pipelines are commonly made of: each type instantiates every generic op (sluice/ops/registration.h),
// which is most of the library's compile time. Other types are one SLUICE_REGISTER_ELEMENT_TYPE away.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ops/builtin_registrations.h"
#include "sluice/ops/registration.h"

namespace sluice {

void RegisterBuiltinInt64Types() {
  registration_detail::RegisterTypeAtStartup<int64_t>();
  registration_detail::RegisterTypeAtStartup<std::vector<int64_t>>();
  registration_detail::RegisterTypeAtStartup<std::pair<int64_t, int64_t>>();
}

}  // namespace sluice
