// Op builders: how a process rebuilds a node of a serialized graph (sluice/ops/graph.h) as a typed
// Node<T>. A builder is registered per (op, element type, element type of the first input): Take over
// int64, Batch from int64 to vector<int64>, ParseExample from string or from vector<string>. Ops that hold
// a function are rebuilt by the function's own builders (sluice/ops/function_registry.h).
//
// Registration is done for you: SLUICE_REGISTER_ELEMENT_TYPE(T) registers the standard ops over T and
// SLUICE_REGISTER_FUNCTION the ops that can hold the function (sluice/ops/registration.h); the library
// registers its sources and the built-in types. RegisterOpBuilder is for ops a user defines.
#ifndef SLUICE_OPS_OP_BUILDER_REGISTRY_H_
#define SLUICE_OPS_OP_BUILDER_REGISTRY_H_

#include <any>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/export.h"
#include "sluice/ops/op_node.h"

namespace sluice {

// One node of the untyped graph: what the wire carries (see docs/graph-format.md).
struct GraphNode {
  std::string op;
  int64_t op_version = 1;
  std::string element_type;
  std::vector<Param> params;
  std::vector<GraphNode> inputs;
};

// What a builder gets: the node, its path ("/0/1"), and its inputs already built.
struct OpBuildInput {
  const GraphNode* node = nullptr;
  std::string path;
  std::vector<std::shared_ptr<const OpNode>> inputs;

  // "Shuffle at /0/1: ..." as InvalidArgument.
  absl::Status Error(absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat(node->op, " at ", path, ": ", message));
  }
  const ParamValue* Find(absl::string_view name) const {
    for (const Param& p : node->params) {
      if (p.name == name) return &p.value;
    }
    return nullptr;
  }
  template <class V>
  absl::StatusOr<V> Get(absl::string_view name) const {
    const ParamValue* value = Find(name);
    if (value == nullptr) return Error(absl::StrCat("param '", name, "' is missing"));
    if (const V* typed = std::get_if<V>(value)) return *typed;
    return Error(absl::StrCat("param '", name, "' has another type"));
  }
  template <class V>
  absl::StatusOr<std::optional<V>> GetOptional(absl::string_view name) const {
    if (Find(name) == nullptr) return std::optional<V>();
    absl::StatusOr<V> value = Get<V>(name);
    if (!value.ok()) return value.status();
    return std::optional<V>(std::move(*value));
  }
  // Input i as a Node<T>; InvalidArgument naming both types when it yields another.
  template <class T>
  absl::StatusOr<NodePtr<T>> Input(size_t i) const {
    if (i >= inputs.size()) return Error(absl::StrCat("needs input ", i, ", has ", inputs.size()));
    auto typed = std::dynamic_pointer_cast<const Node<T>>(inputs[i]);
    if (typed == nullptr) {
      return Error(absl::StrCat("input ", i, " yields ", inputs[i]->element_type_name(), ", the op needs ",
                                ElementTypeName<T>()));
    }
    return typed;
  }
};

using OpBuilder = std::function<absl::StatusOr<std::shared_ptr<const OpNode>>(const OpBuildInput&)>;
// For ops holding a function: also gets the callable (a std::any holding std::function<Sig>).
using FunctionOpBuilder =
    std::function<absl::StatusOr<std::shared_ptr<const OpNode>>(const OpBuildInput&, std::any callable)>;

// first_input_type "" for sources. Registering the same key twice keeps the first (the builders for one
// key are the same code instantiated in two places).
SLUICE_EXPORT void RegisterOpBuilder(std::string op, std::string element_type, std::string first_input_type,
                                     OpBuilder builder);
// nullptr when none is registered.
SLUICE_EXPORT const OpBuilder* FindOpBuilder(std::string_view op, std::string_view element_type,
                                             std::string_view first_input_type);

}  // namespace sluice

#endif  // SLUICE_OPS_OP_BUILDER_REGISTRY_H_
