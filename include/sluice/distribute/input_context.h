// InputContext and ValueContext: what a user's input function learns about its place in a distributed run.
//
// Contract (mirrors tf.distribute.InputContext / tf.distribute.experimental.ValueContext):
// - InputContext describes one input pipeline: there are `num_input_pipelines` of them (usually one per
//   worker), this one is `input_pipeline_id` (0-based), and `num_replicas_in_sync` replicas in all
//   consume one global batch per step. An input function uses it to shard its source and to size its
//   per-replica batches.
// - GetPerReplicaBatchSize(G) is G / num_replicas_in_sync when that division is exact; otherwise
//   InvalidArgument with tf.distribute's message ("The `global_batch_size` 10 is not divisible by
//   `num_replicas_in_sync` 3"). A non-positive num_replicas_in_sync or a negative G is InvalidArgument too
//   (TF would divide by zero there).
// - ValueContext tells a per-replica value function which replica it builds a value for.
// - Threading: plain values; const members may be called from any thread.
//
//   InputContext ctx{.num_input_pipelines = 2, .input_pipeline_id = 1, .num_replicas_in_sync = 8};
//   absl::StatusOr<int64_t> per_replica = ctx.GetPerReplicaBatchSize(64);  // 8
#ifndef SLUICE_DISTRIBUTE_INPUT_CONTEXT_H_
#define SLUICE_DISTRIBUTE_INPUT_CONTEXT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace sluice {

struct InputContext {
  int num_input_pipelines = 1;
  int input_pipeline_id = 0;
  int num_replicas_in_sync = 1;

  absl::StatusOr<int64_t> GetPerReplicaBatchSize(int64_t global_batch_size) const {
    if (num_replicas_in_sync <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "InputContext: `num_replicas_in_sync` must be positive, got ", num_replicas_in_sync));
    }
    if (global_batch_size < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "InputContext: `global_batch_size` must be non-negative, got ", global_batch_size));
    }
    if (global_batch_size % num_replicas_in_sync != 0) {
      return absl::InvalidArgumentError(absl::StrCat("The `global_batch_size` ", global_batch_size,
                                                     " is not divisible by `num_replicas_in_sync` ",
                                                     num_replicas_in_sync));
    }
    return global_batch_size / num_replicas_in_sync;
  }
};

struct ValueContext {
  int replica_id_in_sync_group = 0;
  int num_replicas_in_sync = 1;
};

}  // namespace sluice

#endif  // SLUICE_DISTRIBUTE_INPUT_CONTEXT_H_
