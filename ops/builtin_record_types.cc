// The standard ops over records, Tensors and parsed Examples.
// The built-in registrations are split over a few files so that they compile in parallel: each type
// instantiates every generic op (sluice/ops/registration.h).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ops/builtin_registrations.h"
#include "sluice/ops/registration.h"

namespace sluice {
void RegisterBuiltinRecordTypes() {
  registration_detail::RegisterTypeAtStartup<std::string>();
  registration_detail::RegisterTypeAtStartup<Tensor>();
  registration_detail::RegisterTypeAtStartup<ParsedExample>();
}

}  // namespace sluice
