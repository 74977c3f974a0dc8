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
//   InvalidArgument, telling the user to use DATA. No file source is InvalidArgument too.
// - kData: every worker reads everything and keeps its share of the rebatched pieces: the pieces of
//   global step k are cut from the k-th global batch, and worker w keeps those of its replicas
//   (w * replicas_per_worker ... + replicas_per_worker - 1).
// - kAuto: kFile when a file-based source exists, else kData; the choice is reported by
//   DistributedDataset::applied_shard_policy() and its stats string.
// - WorkerAgreement: once per global step, in order, every worker's fan-out says whether it has data for
//   the step and learns whether any worker has; when none has, every replica of every worker sees the end
//   together; a worker without data gives its replicas empty batches meanwhile. A real deployment
//   implements it with its all-reduce (a logical OR over one bit); InProcessWorkerAgreement serves workers
//   that are threads of one process.
// - Threading: everything here is thread-safe.
//
//   auto agreement = std::make_shared<InProcessWorkerAgreement>(/*num_workers=*/2);
//   MirroredStrategy worker0(/*replicas_per_worker=*/2, /*num_workers=*/2, /*worker_index=*/0, agreement);
//   MirroredStrategy worker1(2, 2, 1, agreement);   // each driven from its own thread
#ifndef SLUICE_AUTO_SHARD_H_
#define SLUICE_AUTO_SHARD_H_

#include <cstdint>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sluice/detail/waiter_list.h"
#include "sluice/executor.h"
#include "sluice/op_node.h"
#include "sluice/task.h"

namespace sluice {

enum class AutoShardPolicy { kOff, kFile, kData, kAuto };

// "OFF", "FILE", "DATA", "AUTO" (TensorFlow's names).
const char* AutoShardPolicyName(AutoShardPolicy policy);

class WorkerAgreement {
 public:
  virtual ~WorkerAgreement() = default;
  // Called by worker `worker` once per global step, steps in order (0, 1, ... for each new iterator),
  // with `mine` = whether it has data for `step`. Completes with whether any worker has. Cancelled when
  // the caller's stop token fires while waiting. A worker must not call again before this completes.
  virtual Task<absl::StatusOr<bool>> AnyWorkerHasData(int worker, int64_t step, bool mine) = 0;
};

// The agreement for `num_workers` workers that are threads (or coroutines) of this process: a reusable
// barrier per step that ORs the workers' bits. Rounds are matched by order, so every worker must make the
// same sequence of iterators. A worker that gives up while waiting (its iterator is destroyed mid-epoch)
// aborts the agreement: every pending and later call fails with Cancelled naming that worker, rather
// than waiting forever for it. Waiters resume through `executor` (default: ThreadPool::Default()).
class InProcessWorkerAgreement final : public WorkerAgreement {
 public:
  explicit InProcessWorkerAgreement(int num_workers, Executor* executor = nullptr);
  Task<absl::StatusOr<bool>> AnyWorkerHasData(int worker, int64_t step, bool mine) override;

  int num_workers() const { return num_workers_; }
  // Rounds completed so far (a snapshot, for tests).
  int64_t rounds() const;

 private:
  class Arrive;
  void AbortLocked(absl::Status cause, detail::WakeList& wake);

  const int num_workers_;
  Executor* const executor_;
  mutable std::mutex mutex_;
  detail::WaiterList waiters_;
  std::vector<bool> arrived_;  // this round
  int arrivals_ = 0;
  bool any_ = false;
  int64_t round_ = 0;          // rounds completed
  bool last_result_ = false;   // the result of round round_ - 1
  absl::Status aborted_;
};

namespace distribute {

// The static global batch size of a pipeline, as tf.distribute's compute_batch_size finds it: the last
// Batch op (walking back through ops that keep the batch size: Prefetch, Take, Skip, Shard, Repeat,
// Shuffle, Filter, TakeWhile) has drop_remainder=true. std::nullopt when unknown.
std::optional<int64_t> FindStaticBatchSize(const OpNode& root);

// The file-based source FILE sharding would cut, or nullptr: the first node (depth first from the root)
// that is a FileListSource (ListFiles, TFRecord, TextLines over a list of files).
const OpNode* FindFileSource(const OpNode& root);

// The policy that applies, and for FILE the node to shard: kOff for one worker; kAuto resolved; kFile
// with too few files or no file source -> InvalidArgument.
struct ShardDecision {
  AutoShardPolicy applied = AutoShardPolicy::kOff;
  const OpNode* file_source = nullptr;
  int64_t num_files = 0;
};
absl::StatusOr<ShardDecision> DecideShardPolicy(const OpNode& root, AutoShardPolicy requested, int num_workers);

}  // namespace distribute
}  // namespace sluice

#endif  // SLUICE_AUTO_SHARD_H_
