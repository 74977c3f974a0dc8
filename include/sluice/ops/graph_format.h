// The graph format: canonical bytes of an untyped pipeline graph (GraphNode, sluice/ops/op_builder_registry.h),
// bounded parsing, the fingerprint and a text form. Schema and rules: docs/graph-format.md. Building and
// serializing datasets: sluice/ops/graph.h.
#ifndef SLUICE_OPS_GRAPH_FORMAT_H_
#define SLUICE_OPS_GRAPH_FORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "sluice/export.h"
#include "sluice/ops/op_builder_registry.h"

namespace sluice {

inline constexpr int64_t kGraphFormatVersion = 1;
inline constexpr int kMaxGraphDepth = 200;
inline constexpr int64_t kMaxGraphNodes = 100000;

// Canonical bytes of a graph, and back.
SLUICE_EXPORT std::string EncodeGraph(const GraphNode& root);
SLUICE_EXPORT absl::StatusOr<GraphNode> ParseGraph(std::string_view bytes);

// XXH64 of EncodeGraph(root).
SLUICE_EXPORT uint64_t Fingerprint(const GraphNode& root);
// 16 lower-case hex digits.
SLUICE_EXPORT std::string FingerprintHex(uint64_t fingerprint);

// One node per line: path, op, element type, params ("/0/1  Map -> Tensor  f=normalize(mean=0.5)").
SLUICE_EXPORT std::string GraphText(const GraphNode& root);

}  // namespace sluice

#endif  // SLUICE_OPS_GRAPH_FORMAT_H_
