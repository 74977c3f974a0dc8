// Multi-worker input: how each worker's pipeline is sharded (AutoShardPolicy), what the distribution layer
// reads from a pipeline's graph, and how workers agree on the end of the data (WorkerAgreement).
//
// Contract (tf.distribute.experimental.AutoShardPolicy; see docs/distribute.md):
// - Only multi-worker strategies shard; with one worker every policy reads the whole dataset.
// - Rebatch comes first, then auto-shard, as in tf.distribute.
// - kOff: every worker reads the whole dataset and splits its own global batches (workers see the same
//   elements, as with TensorFlow's OFF).
// - kFile: the file-based source found in the graph (a ListFiles node, or a TFRecord / TextLines source over
//   a list of files) keeps files i with i mod num_workers == worker_index. Fewer files than workers is
//   InvalidArgument, telling the user to use DATA. No file source is InvalidArgument too. The decision
//   names the source by its node path (sluice/ops/node_path.h), which another process can resolve in its
//   own rebuild of the graph; each iterator resolves it against its root when it is made.
// - kData: every worker reads everything and keeps its share of the rebatched pieces: the pieces of
//   global step k are cut from the k-th global batch, and worker w keeps those of its replicas
//   (w * replicas_per_worker ... + replicas_per_worker - 1).
// - kAuto: kFile when a file-based source exists, else kData; the choice is reported by
//   DistributedDataset::applied_shard_policy() and its stats string.
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

// The path of the file-based source FILE sharding would cut, or nullopt: the first node (depth first from
// the root, inputs in order) that is a FileListSource (ListFiles, TFRecord, TextLines over a list of files).
SLUICE_EXPORT std::optional<std::string> FindFileSourcePath(const OpNode& root);
// That node itself, or nullptr.
SLUICE_EXPORT const OpNode* FindFileSource(const OpNode& root);

// The node at `path` below `root` when it is a file-based source: NotFound / InvalidArgument for a bad
// path (FindNodeByPath), FailedPrecondition naming the op when the node there is not a file source.
SLUICE_EXPORT absl::StatusOr<const OpNode*> ResolveFileSource(const OpNode& root, std::string_view path);

// The policy that applies, and for FILE the node to shard, by path: kOff for one worker; kAuto resolved;
// kFile with too few files or no file source -> InvalidArgument. A pipeline reading a shared data-service
// job (Distribute with a job_name) is never sharded again: AUTO applies OFF (with `reason`), FILE and
// DATA are InvalidArgument.
struct ShardDecision {
  AutoShardPolicy applied = AutoShardPolicy::kOff;
  std::string file_source_path;  // "" unless applied is kFile
  int64_t num_files = 0;
  std::string reason;  // why AUTO chose OFF for several workers (a shared data-service job), else ""
};
SLUICE_EXPORT absl::StatusOr<ShardDecision> DecideShardPolicy(const OpNode& root, AutoShardPolicy requested,
                                                              int num_workers);

}  // namespace distribute
}  // namespace sluice

#endif  // SLUICE_DISTRIBUTE_AUTO_SHARD_H_
