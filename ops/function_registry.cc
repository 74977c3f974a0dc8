#include "sluice/ops/function_registry.h"

#include <map>
#include <memory>
#include <mutex>

#include "sluice/ops/library_functions.h"

namespace sluice {
namespace {

struct FunctionRegistry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<const FunctionInfo>, std::less<>> functions;
};

FunctionRegistry& GetFunctionRegistry() {
  static FunctionRegistry* registry =
      new FunctionRegistry();  // never destroyed: used by static initialisers and at exit
  return *registry;
}

}  // namespace

absl::Status RegisterFunction(FunctionInfo info) {
  if (info.name.empty()) return absl::InvalidArgumentError("RegisterFunction: empty name");
  FunctionRegistry& registry = GetFunctionRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  auto it = registry.functions.find(info.name);
  if (it != registry.functions.end()) {
    return absl::AlreadyExistsError(absl::StrCat("function '", info.name, "' is registered twice (as ",
                                                 it->second->signature_name, " and ", info.signature_name,
                                                 ")"));
  }
  std::string name = info.name;
  registry.functions.emplace(std::move(name), std::make_unique<const FunctionInfo>(std::move(info)));
  return absl::OkStatus();
}

const FunctionInfo* FindFunction(std::string_view name) {
  EnsureLibraryFunctions();
  FunctionRegistry& registry = GetFunctionRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  auto it = registry.functions.find(name);
  return it == registry.functions.end() ? nullptr : it->second.get();
}

std::vector<std::string> RegisteredFunctionNames() {
  EnsureLibraryFunctions();
  FunctionRegistry& registry = GetFunctionRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  std::vector<std::string> names;
  for (const auto& [name, info] : registry.functions) names.push_back(name);
  return names;
}

}  // namespace sluice
