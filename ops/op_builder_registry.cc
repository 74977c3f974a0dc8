#include "sluice/ops/op_builder_registry.h"

#include <map>
#include <mutex>
#include <tuple>

namespace sluice {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::tuple<std::string, std::string, std::string>, std::unique_ptr<OpBuilder>, std::less<>> builders;
};

Registry& GetRegistry() {
  static Registry* registry = new Registry();  // never destroyed: used by static initialisers and at exit
  return *registry;
}

}  // namespace

void RegisterOpBuilder(std::string op, std::string element_type, std::string first_input_type, OpBuilder builder) {
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  auto key = std::make_tuple(std::move(op), std::move(element_type), std::move(first_input_type));
  if (registry.builders.find(key) == registry.builders.end()) {
    registry.builders.emplace(std::move(key), std::make_unique<OpBuilder>(std::move(builder)));
  }
}

const OpBuilder* FindOpBuilder(std::string_view op, std::string_view element_type, std::string_view first_input_type) {
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  auto it = registry.builders.find(std::make_tuple(std::string(op), std::string(element_type),
                                                   std::string(first_input_type)));
  return it == registry.builders.end() ? nullptr : it->second.get();
}

}  // namespace sluice
