// Multi-worker input: how workers agree on the end of the data (WorkerAgreement). The auto-shard policies
// are in sluice/distribute/shard_policy.h.
//
// Contract:
// - WorkerAgreement: once per global step, in order, every worker's fan-out says whether it has data for
//   the step (of its epoch: its k-th iterator) and learns whether any worker has; when none has, every
//   replica of every worker sees the end together; a worker without data gives its replicas empty batches
//   meanwhile. A real deployment implements it with its all-reduce (a logical OR over one bit);
//   InProcessWorkerAgreement serves workers that are threads of one process.
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
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sluice/distribute/shard_policy.h"
#include "sluice/engine/detail/waiter_list.h"
#include "sluice/engine/executor.h"
#include "sluice/engine/task.h"
#include "sluice/export.h"

namespace sluice {

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

}  // namespace sluice

#endif  // SLUICE_DISTRIBUTE_AUTO_SHARD_H_
