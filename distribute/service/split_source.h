// Internal: the splittable source of a pipeline graph, as the data service's distributed_epoch uses it.
// The dispatcher finds it and counts its splits without running anything; a worker finds the same node
// and reads it split by split (sluice/ops/split_reader.h).
//
// Contract:
// - Splittable sources: Range and FromVector (split into chunks of elements, many per worker) and the
//   file sources ListFiles, TFRecord, TextLines, FixedLengthRecords (one split per file of their `files`
//   param). FindSplittableSource refuses, with InvalidArgument naming the ops and their paths, a graph
//   with none (it names the leaves it found instead) or with several.
// - CheckClientGraph refuses a graph holding an internal op (name starting with '_').
// - WorkerGraph returns the graph a worker builds: the source at `source.path` wrapped in
//   _ReadSplits(feed) (when `source` is given), the root wrapped in _EncodeElements.
// - FileSplitSource returns the file source restricted to files [begin, end): the node a worker reads a
//   file split with.
#ifndef SLUICE_DISTRIBUTE_SERVICE_SPLIT_SOURCE_H_
#define SLUICE_DISTRIBUTE_SERVICE_SPLIT_SOURCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sluice/ops/op_builder_registry.h"

namespace sluice::service {

struct SplittableSource {
  std::vector<size_t> path;  // input indices from the root
  std::string path_text;     // "/0/1"
  std::string op;
  int64_t units = 0;   // elements (Range, FromVector) or files
  bool files = false;  // one split per file
  int64_t chunk = 1;   // units per split
};

absl::Status CheckClientGraph(const GraphNode& root);
absl::StatusOr<SplittableSource> FindSplittableSource(const GraphNode& root);
absl::StatusOr<GraphNode> WorkerGraph(GraphNode root, const SplittableSource* source,
                                      const std::string& feed_id);
absl::StatusOr<GraphNode> FileSplitSource(const GraphNode& source, int64_t begin, int64_t end);

}  // namespace sluice::service

#endif  // SLUICE_DISTRIBUTE_SERVICE_SPLIT_SOURCE_H_
