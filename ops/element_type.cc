#include "sluice/ops/element_type_registry.h"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sluice/io/example.h"
#include "sluice/io/tensor.h"

namespace sluice {
namespace {

struct ElementTypeRegistry {
  std::mutex mu;
  // unique_ptr: FindElementType hands out pointers that must survive later insertions.
  std::map<std::string, std::unique_ptr<const ElementTypeInfo>, std::less<>> types;
};

absl::Status AddLocked(ElementTypeRegistry& registry, ElementTypeInfo info) {
  if (info.name.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("RegisterElementType: a type without a name cannot be registered (", info.type.name(), ")"));
  }
  auto it = registry.types.find(info.name);
  if (it != registry.types.end()) {
    if (it->second->type == info.type) return absl::OkStatus();
    return absl::AlreadyExistsError(absl::StrCat("RegisterElementType: the element type name '", info.name,
                                                 "' is registered for ", it->second->type.name(),
                                                 " and cannot also name ", info.type.name()));
  }
  std::string name = info.name;
  registry.types.emplace(std::move(name), std::make_unique<const ElementTypeInfo>(std::move(info)));
  return absl::OkStatus();
}

// Built on first use, so registrations from other translation units' static initialisers never run
// before it exists.
ElementTypeRegistry& GetElementTypeRegistry() {
  static ElementTypeRegistry* registry = [] {
    auto* r = new ElementTypeRegistry;  // never destroyed: static destructors may still look types up
    for (ElementTypeInfo info :
         {MakeElementTypeInfo<bool>(), MakeElementTypeInfo<int8_t>(), MakeElementTypeInfo<int16_t>(),
          MakeElementTypeInfo<int32_t>(), MakeElementTypeInfo<int64_t>(), MakeElementTypeInfo<uint8_t>(),
          MakeElementTypeInfo<uint16_t>(), MakeElementTypeInfo<uint32_t>(), MakeElementTypeInfo<uint64_t>(),
          MakeElementTypeInfo<Half>(), MakeElementTypeInfo<BFloat16>(), MakeElementTypeInfo<float>(),
          MakeElementTypeInfo<double>(), MakeElementTypeInfo<std::string>(), MakeElementTypeInfo<Tensor>(),
          MakeElementTypeInfo<ParsedExample>(), MakeElementTypeInfo<absl::Status>()}) {
      (void)AddLocked(*r, std::move(info));
    }
    return r;
  }();
  return *registry;
}

}  // namespace

absl::Status RegisterElementType(ElementTypeInfo info) {
  ElementTypeRegistry& registry = GetElementTypeRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  return AddLocked(registry, std::move(info));
}

const ElementTypeInfo* FindElementType(std::string_view name) {
  ElementTypeRegistry& registry = GetElementTypeRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  auto it = registry.types.find(name);
  return it == registry.types.end() ? nullptr : it->second.get();
}

std::vector<std::string> RegisteredElementTypeNames() {
  ElementTypeRegistry& registry = GetElementTypeRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  std::vector<std::string> names;
  names.reserve(registry.types.size());
  for (const auto& [name, info] : registry.types) names.push_back(name);
  return names;
}

namespace element_type_detail {

bool RegisterAtStartup(ElementTypeInfo info) {
  absl::Status status = RegisterElementType(std::move(info));
  if (!status.ok()) {
    // A name bound to two types would make every stream of either ambiguous; fail before main runs.
    std::fprintf(stderr, "SLUICE_REGISTER_ELEMENT_TYPE: %s\n", std::string(status.message()).c_str());
    std::abort();
  }
  return true;
}

}  // namespace element_type_detail
}  // namespace sluice
