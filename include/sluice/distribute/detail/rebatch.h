// The rebatch rule: how tf.distribute splits each global batch across the replicas in sync.
//
// Contract (tf.distribute's rule, see docs/distribute.md for the TensorFlow sources it follows):
// - N = num_workers * replicas_per_worker replicas consume one global batch of G elements per step.
//   Every worker's input pipeline yields batches of the global size G (each from its own shard) and
//   rebatches each of them into N pieces, handing R = replicas_per_worker of them out per step; so one
//   input batch feeds its worker's R replicas for W = num_workers consecutive steps.
// - Static G (the batch size is known, i.e. the batch op had drop_remainder): StaticBatchSizesForWorker
//   gives the N piece sizes. Worker 0's list is `G mod N` times ceil(G/N) followed by floor(G/N); worker
//   w's list is worker 0's rotated left by w * R. Then in every global step the R sizes each worker uses
//   sum, over the workers, to exactly G, and any two pieces differ by at most one element.
// - Unknown batch size (no drop_remainder): SplitDynamicBatch cuts each batch, in order, into N pieces
//   of ceil(b/N) elements, so trailing pieces may be short or empty: b=4, N=3 gives [0,1] [2,3] [];
//   b=2, N=2 gives [0] [1].
// - Errors: InvalidArgument naming the bad argument (non-positive sizes or counts, worker index out of
//   range, an input batch whose size is not the static G). Nothing here allocates per element.
// - Threading: pure functions; RebatchPlan is immutable after Create() and safe to share.
//
//   auto plan = RebatchPlan::Create(/*static_global_batch=*/7, /*num_workers=*/2,
//                                   /*replicas_per_worker=*/2, /*worker_index=*/1);
//   auto steps = plan->SplitInputBatch(7);
//   // (*steps)[0] == {{0, 2}, {2, 1}}, (*steps)[1] == {{3, 2}, {5, 2}}: [start, length) per replica.
#ifndef SLUICE_DISTRIBUTE_DETAIL_REBATCH_H_
#define SLUICE_DISTRIBUTE_DETAIL_REBATCH_H_

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "sluice/export.h"

namespace sluice::distribute {

// The num_workers * replicas_per_worker piece sizes that worker `worker_index` cuts each global batch of
// `global_batch` elements into, in order (tf.distribute's batch_sizes_for_worker). Requires
// global_batch >= 1, num_workers >= 1, replicas_per_worker >= 1, 0 <= worker_index < num_workers.
SLUICE_EXPORT absl::StatusOr<std::vector<int64_t>> StaticBatchSizesForWorker(int64_t global_batch, int num_workers,
                                                                             int replicas_per_worker,
                                                                             int worker_index);

// Cuts a batch of `batch_size` elements into `num_pieces` consecutive (start, length) pieces of
// ceil(batch_size / num_pieces) elements; the last non-empty one may be short, later ones are empty
// (start == batch_size, length 0). A negative batch_size counts as 0; num_pieces <= 0 gives no pieces.
SLUICE_EXPORT std::vector<std::pair<int64_t, int64_t>> SplitDynamicBatch(int64_t batch_size, int num_pieces);

// One worker's split of its input batches into per-step, per-replica ranges.
class SLUICE_EXPORT RebatchPlan {
 public:
  // (start, length) of one replica's piece inside the input batch.
  using Range = std::pair<int64_t, int64_t>;

  // `static_global_batch`: the global batch size when it is statically known, std::nullopt otherwise.
  static absl::StatusOr<RebatchPlan> Create(std::optional<int64_t> static_global_batch, int num_workers,
                                            int replicas_per_worker, int worker_index);

  int num_workers() const { return num_workers_; }
  int replicas_per_worker() const { return replicas_per_worker_; }
  int worker_index() const { return worker_index_; }
  int num_replicas_in_sync() const { return num_workers_ * replicas_per_worker_; }
  std::optional<int64_t> static_global_batch() const { return static_global_batch_; }
  // Global steps one input batch feeds on this worker (== num_workers).
  int steps_per_input_batch() const { return num_workers_; }
  // The static piece sizes (empty when the batch size is not static).
  const std::vector<int64_t>& static_sizes() const { return static_sizes_; }

  // Splits one input batch of `batch_size` elements: steps_per_input_batch() steps, each holding
  // replicas_per_worker() ranges, result[step][local_replica]. The ranges tile [0, batch_size) in order.
  // With a static plan, batch_size must equal the global batch (InvalidArgument otherwise).
  absl::StatusOr<std::vector<std::vector<Range>>> SplitInputBatch(int64_t batch_size) const;

 private:
  RebatchPlan() = default;

  std::optional<int64_t> static_global_batch_;
  int num_workers_ = 1;
  int replicas_per_worker_ = 1;
  int worker_index_ = 0;
  std::vector<int64_t> static_sizes_;
};

}  // namespace sluice::distribute

#endif  // SLUICE_DISTRIBUTE_DETAIL_REBATCH_H_
