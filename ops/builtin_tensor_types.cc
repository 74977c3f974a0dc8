// The standard ops over Tensors, parsed Examples and (features, label) pairs of Tensors.
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

void RegisterBuiltinTensorTypes() {
  registration_detail::RegisterTypeAtStartup<Tensor>();
  registration_detail::RegisterTypeAtStartup<ParsedExample>();
  registration_detail::RegisterTypeAtStartup<std::pair<Tensor, Tensor>>();
}

}  // namespace sluice
