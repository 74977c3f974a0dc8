// Portable pipelines: a Dataset's definition as bytes another process rebuilds exactly.
//
//   absl::StatusOr<std::string> bytes = sluice::Serialize(ds);          // FailedPrecondition: what blocks it
//   absl::StatusOr<sluice::Dataset<Tensor>> same = sluice::BuildTyped<Tensor>(*bytes);   // anywhere
//   absl::StatusOr<sluice::AnyDataset> any = sluice::Deserialize(*bytes);               // type known later
//   uint64_t id = sluice::Fingerprint(*sluice::ParseGraph(*bytes));                     // same in every process
//
// Contract:
// - The format (docs/graph-format.md) is protobuf wire format: a Graph message holding the root GraphNode
//   (op, op version, element type, params, inputs). Serialize writes canonical bytes (fields in order, no
//   unknown fields), so equal definitions give equal bytes; Fingerprint is XXH64 of the canonical bytes of
//   a graph, identical across processes, runs and machines.
// - Serialize refuses, with FailedPrecondition naming the op, its node path ("/0/2") and the cause, a
//   pipeline holding a lambda (a FunctionParam that is only a label), an element type without a name, or a
//   node that says it is not portable (an ErrorCounter, values without a codec).
// - ParseGraph never crashes or allocates beyond a small multiple of its input on hostile bytes: malformed
//   wire data is DataLoss with the byte offset; a wrong format name, version, nesting deeper than
//   kMaxGraphDepth or more than kMaxGraphNodes nodes is InvalidArgument.
// - Building resolves each node with the op builders (sluice/ops/op_builder_registry.h) and registered
//   functions of this process; what is missing is FailedPrecondition naming the op, path and the
//   registration needed. BuildTyped<T> fails with InvalidArgument "graph yields Tensor, caller expects
//   ParsedExample" when the root's element type is not T's.
#ifndef SLUICE_OPS_GRAPH_H_
#define SLUICE_OPS_GRAPH_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/export.h"
#include "sluice/ops/dataset.h"
#include "sluice/ops/graph_format.h"
#include "sluice/ops/op_builder_registry.h"
#include "sluice/ops/op_node.h"

namespace sluice {

// The untyped graph of a definition, checked for portability (see the contract).
SLUICE_EXPORT absl::StatusOr<GraphNode> DescribeGraph(const OpNode& root);

// A rebuilt definition whose element type is known by name only.
class AnyDataset {
 public:
  explicit AnyDataset(std::shared_ptr<const OpNode> node) : node_(std::move(node)) {}
  const std::shared_ptr<const OpNode>& node() const { return node_; }
  std::string element_type_name() const { return node_->element_type_name(); }
  std::string DebugString() const { return sluice::DebugString(*node_); }

  template <class T>
  absl::StatusOr<Dataset<T>> As() const {
    auto typed = std::dynamic_pointer_cast<const Node<T>>(node_);
    if (typed == nullptr) {
      const std::string wanted = ElementTypeName<T>();
      return absl::InvalidArgumentError(absl::StrCat("graph yields ", element_type_name(), ", caller expects ",
                                                     wanted.empty() ? "an unnamed type" : wanted));
    }
    return Dataset<T>(std::move(typed));
  }

 private:
  std::shared_ptr<const OpNode> node_;
};

// Builds a parsed graph with this process's registries.
SLUICE_EXPORT absl::StatusOr<AnyDataset> BuildGraph(const GraphNode& root);

SLUICE_EXPORT absl::StatusOr<std::string> Serialize(const OpNode& root);
template <class T>
absl::StatusOr<std::string> Serialize(const Dataset<T>& dataset) {
  return Serialize(*dataset.node());
}

SLUICE_EXPORT absl::StatusOr<AnyDataset> Deserialize(std::string_view bytes);

template <class T>
absl::StatusOr<Dataset<T>> BuildTyped(std::string_view bytes) {
  absl::StatusOr<AnyDataset> any = Deserialize(bytes);
  if (!any.ok()) return any.status();
  return any->As<T>();
}

}  // namespace sluice

#endif  // SLUICE_OPS_GRAPH_H_
