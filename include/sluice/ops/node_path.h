// Node paths: the name of a node in a pipeline's graph that every process agrees on. A path lists the
// input indices (OpNode::inputs()) from the root: "/" is the root, "/0" its first input, "/0/2/1" input 1
// of input 2 of input 0. A path depends only on the graph's shape, never on addresses, so per-node
// injections (the auto-shard target, later splits and saved iterator state) survive a rebuild of the
// definition in another process.
//
// Contract:
// - Canonical form: "/" or one or more "/<index>" with decimal indices without sign or leading zeros.
//   Anything else is InvalidArgument naming the path; a well-formed path that leaves the graph is
//   NotFound naming the deepest node it reached and how many inputs that node has.
// - A node that is the input of several ops (a DAG: Zip(ds, ds)) has one path per way to reach it;
//   ForEachNodePath visits it once per path.
// - Walking is iterative (no recursion), so deep pipelines cannot overflow the stack.
// - Threading: pure functions of an immutable graph.
//
//   absl::StatusOr<const OpNode*> node = FindNodeByPath(*ds.node(), "/0/1");
//   ForEachNodePath(*ds.node(), [](const OpNode& node, const std::string& path) {
//     std::cout << path << " " << node.op_name() << "\n";
//     return true;  // false stops the walk
//   });
#ifndef SLUICE_OPS_NODE_PATH_H_
#define SLUICE_OPS_NODE_PATH_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "sluice/export.h"

namespace sluice {

class OpNode;

inline constexpr std::string_view kRootNodePath = "/";

// "/" for no indices, "/0/2/1" for {0, 2, 1}.
SLUICE_EXPORT std::string FormatNodePath(const std::vector<size_t>& indices);
// The path of input `input_index` of the node at `parent` (a canonical path).
SLUICE_EXPORT std::string ChildNodePath(std::string_view parent, size_t input_index);
// The indices of a canonical path; InvalidArgument otherwise.
SLUICE_EXPORT absl::StatusOr<std::vector<size_t>> ParseNodePath(std::string_view path);

// The node at `path` below `root`.
SLUICE_EXPORT absl::StatusOr<const OpNode*> FindNodeByPath(const OpNode& root, std::string_view path);

// Calls visit(node, path) for every node, depth first, a node before its inputs, inputs in order.
// Stops when visit returns false.
SLUICE_EXPORT void ForEachNodePath(const OpNode& root,
                                   absl::FunctionRef<bool(const OpNode& node, const std::string& path)> visit);

}  // namespace sluice

#endif  // SLUICE_OPS_NODE_PATH_H_
