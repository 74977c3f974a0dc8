// Auto-shard policies: how each worker's pipeline is sharded (AutoShardPolicy) and what the distribution
// layer reads from a pipeline's graph to decide it. Used by MirroredStrategy and Dataset::AutoShard.
//
// Contract (tf.distribute.experimental.AutoShardPolicy; see docs/distribute.md):
// - Only several workers shard; with one worker every policy reads the whole dataset.
// - Rebatch comes first, then auto-shard, as in tf.distribute.
// - kOff: every worker reads the whole dataset and splits its own global batches (workers see the same
//   elements, as with TensorFlow's OFF).
// - kFile: every file-based source of the graph (a ListFiles node, or a TFRecord / TextLines /
//   FixedLengthRecords source over a list of files) keeps files i with i mod num_workers == worker_index.
//   The sources are found by tf.data's walk (auto_shard.cc) from the root: ops that pass elements through
//   (Batch, PaddedBatch, Cache, Filter, Map, ParallelMap, ParseExample, Prefetch, Rebatch, Repeat, Shard,
//   Shuffle, Skip, Take, Interleave, FlatMap, ParallelInterleave) lead to their first input; Zip and
//   Concatenate to every input, each of which must reach a file source; anything else (Range, FromVector,
//   FromGenerator, Enumerate, which tf.data builds as a zip with a range, SampleFromDatasets, Scan, ...)
//   means there is no way to shard that branch by file: InvalidArgument naming the op and its path. A
//   source with fewer files than workers is InvalidArgument, telling the user to use DATA. The decision
//   names the sources by node path (sluice/ops/node_path.h), which another process can resolve in its own
//   rebuild of the graph; each iterator resolves them against its root when it is made.
// - kData: every worker reads everything and keeps its share of the rebatched pieces: the pieces of
//   global step k are cut from the k-th global batch, and worker w keeps those of its replicas
//   (w * replicas_per_worker ... + replicas_per_worker - 1).
// - kHint: every Shard(kShardHint, ...) placeholder of the graph keeps share worker_index of num_workers
//   (its own index argument is ignored, as tf.data's SHARD_HINT); nothing else is sharded, so a graph
//   without a placeholder is read whole by every worker (the decision's reason says so).
// - kAuto: kFile when the walk shards every branch by file, else kData with the reason (the op that
//   stopped the walk); as in tf.data, a source with fewer files than workers is still InvalidArgument. The
//   choice is reported by DistributedDataset::applied_shard_policy() and its stats string.
// - Threading: everything here is thread-safe.
#ifndef SLUICE_DISTRIBUTE_SHARD_POLICY_H_
#define SLUICE_DISTRIBUTE_SHARD_POLICY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sluice/export.h"
#include "sluice/ops/op_node.h"

namespace sluice {

enum class AutoShardPolicy { kOff, kFile, kData, kAuto, kHint };

// "OFF", "FILE", "DATA", "AUTO", "HINT" (TensorFlow's names).
SLUICE_EXPORT const char* AutoShardPolicyName(AutoShardPolicy policy);
// The policy of that name (any case), or InvalidArgument listing the names.
SLUICE_EXPORT absl::StatusOr<AutoShardPolicy> AutoShardPolicyFromName(std::string_view name);

namespace distribute {

// The static global batch size of a pipeline, as tf.distribute's compute_batch_size finds it: the last
// Batch op (walking back through ops that keep the batch size: Prefetch, Take, Skip, Shard, Repeat,
// Shuffle, Filter, TakeWhile) has drop_remainder=true. std::nullopt when unknown.
SLUICE_EXPORT std::optional<int64_t> FindStaticBatchSize(const OpNode& root);

// One file-based source FILE sharding cuts: its node path, op name and number of files.
struct FileShardTarget {
  std::string path;
  std::string op;
  int64_t num_files = 0;
  friend bool operator==(const FileShardTarget&, const FileShardTarget&) = default;
};

// Every file-based source FILE sharding cuts, by tf.data's walk (see kFile above), in depth-first order;
// NotFound naming the op and path where a branch has no shardable file source.
SLUICE_EXPORT absl::StatusOr<std::vector<FileShardTarget>> FindFileShardTargets(const OpNode& root);

// The first file-based source of the graph (depth first from the root, inputs in order), whether or not
// the walk above reaches it, or nullopt: a FileListSource (ListFiles, TFRecord, TextLines over files).
SLUICE_EXPORT std::optional<std::string> FindFileSourcePath(const OpNode& root);
// That node itself, or nullptr.
SLUICE_EXPORT const OpNode* FindFileSource(const OpNode& root);

// The node at `path` below `root` when it is a file-based source: NotFound / InvalidArgument for a bad
// path (FindNodeByPath), FailedPrecondition naming the op when the node there is not a file source.
SLUICE_EXPORT absl::StatusOr<const OpNode*> ResolveFileSource(const OpNode& root, std::string_view path);

// The IteratorContext::FileShard that makes worker `index` of `num_workers` read its share of `sources`,
// each path resolved against `root` (ResolveFileSource's errors).
SLUICE_EXPORT absl::StatusOr<IteratorContext::FileShard> MakeFileShard(
    const OpNode& root, const std::vector<FileShardTarget>& sources, int64_t num_workers, int64_t index);

// The policy that applies, and for FILE the nodes to shard, by path: kOff for one worker; kAuto resolved;
// kFile with too few files or a branch without a file source -> InvalidArgument. A pipeline reading a
// shared data-service job (Distribute with a job_name) is never sharded again: AUTO applies OFF (with
// `reason`), FILE and DATA are InvalidArgument.
struct ShardDecision {
  AutoShardPolicy applied = AutoShardPolicy::kOff;
  std::vector<FileShardTarget> file_sources;  // empty unless applied is kFile
  // Why AUTO chose what it did when that was not FILE for several workers (a shared data-service job,
  // the op that stopped the file walk), or that HINT found no placeholder, else "".
  std::string reason;
};
// The node paths of the graph's Shard(kShardHint, ...) placeholders, depth first.
SLUICE_EXPORT std::vector<std::string> FindShardHints(const OpNode& root);
SLUICE_EXPORT absl::StatusOr<ShardDecision> DecideShardPolicy(const OpNode& root, AutoShardPolicy requested,
                                                              int64_t num_workers);

}  // namespace distribute
}  // namespace sluice

#endif  // SLUICE_DISTRIBUTE_SHARD_POLICY_H_
