// From a definition to its untyped graph (checking that it can cross a process boundary), and back.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ops/builtin_registrations.h"
#include "sluice/ops/element_type_registry.h"
#include "sluice/ops/function_registry.h"
#include "sluice/ops/graph.h"
#include "sluice/ops/node_path.h"

namespace sluice {
namespace {

absl::Status NotPortable(const OpNode& node, const std::string& path, absl::string_view why) {
  return absl::FailedPreconditionError(absl::StrCat(std::string(node.op_name()), " at ", path, " cannot be serialized: ", why));
}

absl::Status CheckParam(const OpNode& node, const std::string& path, const Param& param) {
  const auto* function = std::get_if<FunctionParam>(&param.value);
  if (function == nullptr || function->registered) return absl::OkStatus();
  return NotPortable(node, path,
                     absl::StrCat(param.name, "=\"", function->name,
                                  "\" is a lambda, not a registered function; register it with "
                                  "SLUICE_REGISTER_FUNCTION and pass its handle (sluice/ops/function_registry.h)"));
}

absl::StatusOr<GraphNode> Describe(const OpNode& node, const std::string& path, int depth) {
  if (depth >= kMaxGraphDepth) return NotPortable(node, path, absl::StrCat("the graph is deeper than ", kMaxGraphDepth));
  GraphNode out;
  out.op = std::string(node.op_name());
  out.op_version = node.op_version();
  out.element_type = node.element_type_name();
  if (out.element_type.empty()) {
    return NotPortable(node, path,
                       "its element type has no name; declare SLUICE_ELEMENT_TYPE_NAME next to it "
                       "(sluice/ops/element_type.h)");
  }
  if (std::string why = node.not_portable_reason(); !why.empty()) return NotPortable(node, path, why);
  out.params = node.params();
  for (const Param& param : out.params) {
    if (absl::Status s = CheckParam(node, path, param); !s.ok()) return s;
  }
  std::vector<std::shared_ptr<const OpNode>> inputs = node.inputs();
  for (size_t i = 0; i < inputs.size(); ++i) {
    absl::StatusOr<GraphNode> input = Describe(*inputs[i], ChildNodePath(path, i), depth + 1);
    if (!input.ok()) return input.status();
    out.inputs.push_back(std::move(*input));
  }
  return out;
}

absl::Status Missing(const GraphNode& node, const std::string& path, absl::string_view what) {
  return absl::FailedPreconditionError(absl::StrCat(node.op, " at ", path, ": ", what));
}

const FunctionParam* FindFunctionParam(const GraphNode& node) {
  for (const Param& p : node.params) {
    if (const auto* function = std::get_if<FunctionParam>(&p.value)) return function;
  }
  return nullptr;
}

absl::StatusOr<std::shared_ptr<const OpNode>> Build(const GraphNode& node, const std::string& path) {
  OpBuildInput input;
  input.node = &node;
  input.path = path;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    absl::StatusOr<std::shared_ptr<const OpNode>> built = Build(node.inputs[i], ChildNodePath(path, i));
    if (!built.ok()) return built.status();
    input.inputs.push_back(std::move(*built));
  }
  absl::StatusOr<std::shared_ptr<const OpNode>> built;
  if (const FunctionParam* function = FindFunctionParam(node)) {
    const FunctionInfo* info = FindFunction(function->name);
    if (info == nullptr) {
      return Missing(node, path, absl::StrCat("function '", function->name,
                                              "' is not registered in this process (SLUICE_REGISTER_FUNCTION)"));
    }
    auto builder = info->op_builders.find(node.op);
    if (builder == info->op_builders.end()) {
      return Missing(node, path, absl::StrCat("function '", function->name, "' (", info->signature_name,
                                              ") cannot be used by ", node.op));
    }
    absl::StatusOr<std::any> callable = info->make(FunctionArgs(*function->args));
    if (!callable.ok()) {
      return absl::Status(callable.status().code(), absl::StrCat(node.op, " at ", path, ": function '", function->name,
                                                                 "': ", callable.status().message()));
    }
    built = builder->second(input, std::move(*callable));
  } else {
    const std::string first_input = input.inputs.empty() ? "" : input.inputs[0]->element_type_name();
    const OpBuilder* builder = FindOpBuilder(node.op, node.element_type, first_input);
    if (builder == nullptr) {
      // The op builders of a type come with its SLUICE_REGISTER_ELEMENT_TYPE (the built-in record of a type
      // like float has none until a program registers it).
      std::string hint = absl::StrCat("; register element type ", first_input.empty() ? node.element_type : first_input,
                                      " with SLUICE_REGISTER_ELEMENT_TYPE in this program (sluice/ops/registration.h)");
      return Missing(node, path,
                     absl::StrCat("no builder for ", node.op, " yielding ", node.element_type,
                                  first_input.empty() ? "" : absl::StrCat(" from ", first_input), hint));
    }
    built = (*builder)(input);
  }
  if (!built.ok()) return built.status();
  if ((*built)->element_type_name() != node.element_type) {
    return absl::InvalidArgumentError(absl::StrCat(node.op, " at ", path, ": the graph says it yields ",
                                                   node.element_type, ", rebuilt it yields ",
                                                   (*built)->element_type_name()));
  }
  if ((*built)->op_version() != node.op_version) {
    return Missing(node, path, absl::StrCat("the graph has version ", node.op_version, " of the op, this process ",
                                            (*built)->op_version()));
  }
  return built;
}

}  // namespace

absl::StatusOr<GraphNode> DescribeGraph(const OpNode& root) { return Describe(root, "/", 0); }

absl::StatusOr<AnyDataset> BuildGraph(const GraphNode& root) {
  EnsureBuiltinOpBuilders();
  absl::StatusOr<std::shared_ptr<const OpNode>> node = Build(root, "/");
  if (!node.ok()) return node.status();
  return AnyDataset(std::move(*node));
}

absl::StatusOr<std::string> Serialize(const OpNode& root) {
  absl::StatusOr<GraphNode> graph = DescribeGraph(root);
  if (!graph.ok()) return graph.status();
  return EncodeGraph(*graph);
}

absl::StatusOr<AnyDataset> Deserialize(std::string_view bytes) {
  absl::StatusOr<GraphNode> graph = ParseGraph(bytes);
  if (!graph.ok()) return graph.status();
  return BuildGraph(*graph);
}

}  // namespace sluice
