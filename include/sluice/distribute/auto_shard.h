// Multi-worker input: how each worker's pipeline is sharded (AutoShardPolicy), what the distribution layer
// reads from a pipeline's graph, and how workers agree on the end of the data (WorkerAgreement).
//
// Contract (tf.distribute.experimental.AutoShardPolicy; see docs/distribute.md):
// - Only multi-worker strategies shard; with one worker every policy reads the whole dataset.
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
// - kAuto: kFile when the walk shards every branch by file, else kData with the reason (the op that
//   stopped the walk); as in tf.data, a source with fewer files than workers is still InvalidArgument. The
//   choice is reported by DistributedDataset::applied_shard_policy() and its stats string.
// - WorkerAgreement: once per global step, in order, every worker's fan-out says whether it has data for
//   the step (of its epoch: its k-th iterator) and learns whether any worker has; when none has, every replica of every worker sees the end
//   together; a worker without data gives its replicas empty batches meanwhile. A real deployment
//   implements it with its all-reduce (a logical OR over one bit); InProcessWorkerAgreement serves workers
//   that are threads of one process.
// - Threading: everything here is thread-safe.
//
//   auto agreement = std::make_shared<InProcessWorkerAgreement>(/*num_workers=*/2);
//   MirroredStrategy worker0(/*replicas_per_worker=*/2, /*num_workers=*/2, /*worker_index=*/0, agreement);
//   MirroredStrategy worker1(2, 2, 1, agreement);   // each driven from its own thread
#ifndef SLUICE_DISTRIBUTE_AUTO_SHARD_H_
#define SLUICE_DISTRIBUTE_AUTO_SHARD_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sluice/engine/detail/waiter_list.h"
#include "sluice/engine/executor.h"
#include "sluice/export.h"
#include "sluice/ops/op_node.h"
#include "sluice/engine/task.h"

namespace sluice {

enum class AutoShardPolicy { kOff, kFile, kData, kAuto };

// "OFF", "FILE", "DATA", "AUTO" (TensorFlow's names).
SLUICE_EXPORT const char* AutoShardPolicyName(AutoShardPolicy policy);

class WorkerAgreement {
 public:
  virtual ~WorkerAgreement() = default;
  // Called once per DistributedIterator a worker makes (its epoch); workers make iterators in the same
  // order, so the k-th iterator of every worker has the same epoch number.
  virtual int64_t BeginEpoch(int worker) = 0;
  // Called by worker `worker` once per global step of `epoch`, steps in order from 0, with `mine` =
  // whether it has data for `step`. Completes with whether any worker has. Cancelled when the caller's
  // stop token fires while waiting. A worker does not call again before this completes.
  virtual Task<absl::StatusOr<bool>> AnyWorkerHasData(int worker, int64_t epoch, int64_t step, bool mine) = 0;
  // Worker `worker` stops taking part in `epoch` before the end was agreed (its iterator was destroyed
  // mid-epoch, or never used): the other workers' pending and later calls for that epoch should fail
  // rather than wait for it. Other epochs are not affected.
  virtual void Abandon(int worker, int64_t epoch) = 0;
};

// The agreement for `num_workers` workers that are threads (or coroutines) of this process: a barrier per
// (epoch, step) that ORs the workers' bits. An abandoned epoch fails its pending and later calls with
// Cancelled naming the worker that left. Waiters resume through `executor` (default:
// ThreadPool::Default()).
class SLUICE_EXPORT InProcessWorkerAgreement final : public WorkerAgreement {
 public:
  explicit InProcessWorkerAgreement(int num_workers, Executor* executor = nullptr);
  int64_t BeginEpoch(int worker) override;
  Task<absl::StatusOr<bool>> AnyWorkerHasData(int worker, int64_t epoch, int64_t step, bool mine) override;
  void Abandon(int worker, int64_t epoch) override;

  int num_workers() const { return num_workers_; }
  // Rounds completed so far, and workers waiting in an unfinished round (snapshots, for tests).
  int64_t rounds() const;
  int waiting() const;

 private:
  class SLUICE_NO_EXPORT Arrive;
  struct Round {
    std::vector<bool> arrived;
    int arrivals = 0;
    int collected = 0;  // workers that took the result; the round is dropped when all have
    bool any = false;
    bool done = false;
    detail::WaiterList waiters;
  };
  void AbandonLocked(int worker, int64_t epoch, detail::WakeList& wake);

  const int num_workers_;
  Executor* const executor_;
  mutable std::mutex mutex_;
  std::map<std::pair<int64_t, int64_t>, Round> rounds_;  // (epoch, step) -> unfinished round
  std::map<int64_t, absl::Status> abandoned_;            // epoch -> why
  std::vector<int64_t> epochs_;                          // per worker: iterators begun
  int64_t completed_ = 0;
};

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
SLUICE_EXPORT absl::StatusOr<IteratorContext::FileShard> MakeFileShard(const OpNode& root,
                                                                       const std::vector<FileShardTarget>& sources,
                                                                       int64_t num_workers, int64_t index);

// The policy that applies, and for FILE the nodes to shard, by path: kOff for one worker; kAuto resolved;
// kFile with too few files or a branch without a file source -> InvalidArgument. A pipeline reading a
// shared data-service job (Distribute with a job_name) is never sharded again: AUTO applies OFF (with
// `reason`), FILE and DATA are InvalidArgument.
struct ShardDecision {
  AutoShardPolicy applied = AutoShardPolicy::kOff;
  std::vector<FileShardTarget> file_sources;  // empty unless applied is kFile
  // Why AUTO chose what it did when that was not FILE for several workers (a shared data-service job,
  // the op that stopped the file walk), else "".
  std::string reason;
};
SLUICE_EXPORT absl::StatusOr<ShardDecision> DecideShardPolicy(const OpNode& root, AutoShardPolicy requested,
                                                              int num_workers);

}  // namespace distribute
}  // namespace sluice

#endif  // SLUICE_DISTRIBUTE_AUTO_SHARD_H_
