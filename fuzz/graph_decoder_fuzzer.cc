// libFuzzer target for the pipeline graph decoder (sluice/ops/graph_format.h).
//
// The input is a serialized graph. ParseGraph must return (never crash, hang or allocate beyond a small
// multiple of the input); on failure the code is DataLoss or InvalidArgument. On success the graph is the
// oracle: its canonical encoding parses again to a graph with the same encoding (canonical bytes are a
// fixed point), the same fingerprint, and GraphText of both is equal.
// A violated invariant is __builtin_trap(), which libFuzzer reports as a crash.
//
// Build: see fuzz/README.md (scripts/fuzz builds and runs it).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sluice/ops/graph_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<sluice::GraphNode> graph = sluice::ParseGraph(bytes);
  if (!graph.ok()) {
    const absl::StatusCode code = graph.status().code();
    if (code != absl::StatusCode::kDataLoss && code != absl::StatusCode::kInvalidArgument) __builtin_trap();
    return 0;
  }
  const std::string canonical = sluice::EncodeGraph(*graph);
  absl::StatusOr<sluice::GraphNode> again = sluice::ParseGraph(canonical);
  if (!again.ok()) __builtin_trap();
  if (sluice::EncodeGraph(*again) != canonical) __builtin_trap();
  if (sluice::Fingerprint(*again) != sluice::Fingerprint(*graph)) __builtin_trap();
  if (sluice::GraphText(*again) != sluice::GraphText(*graph)) __builtin_trap();
  return 0;
}
