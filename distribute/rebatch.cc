#include "sluice/distribute/detail/rebatch.h"

#include <algorithm>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sluice::distribute {
namespace {

absl::Status CheckTopology(int num_workers, int replicas_per_worker, int worker_index) {
  if (num_workers < 1) {
    return absl::InvalidArgumentError(absl::StrCat("rebatch: num_workers must be >= 1, got ", num_workers));
  }
  if (replicas_per_worker < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("rebatch: replicas_per_worker must be >= 1, got ", replicas_per_worker));
  }
  if (worker_index < 0 || worker_index >= num_workers) {
    return absl::InvalidArgumentError(absl::StrCat("rebatch: worker_index ", worker_index,
                                                   " out of range [0, ", num_workers, ")"));
  }
  // N must fit an int: the pieces are indexed by int.
  if (static_cast<int64_t>(num_workers) * replicas_per_worker > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(absl::StrCat("rebatch: num_workers ", num_workers, " * replicas_per_worker ",
                                                   replicas_per_worker, " replicas is too many"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> StaticBatchSizesForWorker(int64_t global_batch, int num_workers,
                                                               int replicas_per_worker, int worker_index) {
  if (global_batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("rebatch: global batch size must be >= 1, got ", global_batch));
  }
  if (absl::Status s = CheckTopology(num_workers, replicas_per_worker, worker_index); !s.ok()) return s;
  const int num_pieces = num_workers * replicas_per_worker;
  const int64_t floor = global_batch / num_pieces;
  const int64_t num_ceil = global_batch % num_pieces;
  std::vector<int64_t> worker_0(static_cast<size_t>(num_pieces), floor);
  std::fill(worker_0.begin(), worker_0.begin() + num_ceil, floor + 1);
  // Rotating left by w * R puts worker w's first R pieces (its step-0 pieces) at worker 0's positions
  // [w*R, (w+1)*R): across the workers, one step's pieces are worker 0's whole list, which sums to G.
  std::rotate(worker_0.begin(), worker_0.begin() + static_cast<int64_t>(worker_index) * replicas_per_worker,
              worker_0.end());
  return worker_0;
}

std::vector<std::pair<int64_t, int64_t>> SplitDynamicBatch(int64_t batch_size, int num_pieces) {
  std::vector<std::pair<int64_t, int64_t>> pieces;
  if (num_pieces <= 0) return pieces;
  if (batch_size < 0) batch_size = 0;
  pieces.reserve(static_cast<size_t>(num_pieces));
  const int64_t per_piece = batch_size / num_pieces + (batch_size % num_pieces != 0 ? 1 : 0);
  int64_t start = 0;
  for (int i = 0; i < num_pieces; ++i) {
    const int64_t length = std::min(per_piece, batch_size - start);
    pieces.emplace_back(start, length);
    start += length;
  }
  return pieces;
}

absl::StatusOr<RebatchPlan> RebatchPlan::Create(std::optional<int64_t> static_global_batch, int num_workers,
                                                int replicas_per_worker, int worker_index) {
  RebatchPlan plan;
  if (static_global_batch.has_value()) {
    absl::StatusOr<std::vector<int64_t>> sizes =
        StaticBatchSizesForWorker(*static_global_batch, num_workers, replicas_per_worker, worker_index);
    if (!sizes.ok()) return sizes.status();
    plan.static_sizes_ = *std::move(sizes);
  } else if (absl::Status s = CheckTopology(num_workers, replicas_per_worker, worker_index); !s.ok()) {
    return s;
  }
  plan.static_global_batch_ = static_global_batch;
  plan.num_workers_ = num_workers;
  plan.replicas_per_worker_ = replicas_per_worker;
  plan.worker_index_ = worker_index;
  return plan;
}

absl::StatusOr<std::vector<std::vector<RebatchPlan::Range>>> RebatchPlan::SplitInputBatch(
    int64_t batch_size) const {
  if (batch_size < 0) {
    return absl::InvalidArgumentError(absl::StrCat("rebatch: input batch size must be >= 0, got ", batch_size));
  }
  std::vector<Range> pieces;
  if (static_global_batch_.has_value()) {
    if (batch_size != *static_global_batch_) {
      return absl::InvalidArgumentError(absl::StrCat("rebatch: worker ", worker_index_, " got an input batch of ",
                                                     batch_size, " elements, but the static global batch size is ",
                                                     *static_global_batch_));
    }
    pieces.reserve(static_sizes_.size());
    int64_t start = 0;
    for (int64_t size : static_sizes_) {
      pieces.emplace_back(start, size);
      start += size;
    }
  } else {
    // Legacy rule: split into all N replicas' pieces, not R, so the workers stay in lock step.
    pieces = SplitDynamicBatch(batch_size, num_replicas_in_sync());
  }
  std::vector<std::vector<Range>> steps(static_cast<size_t>(num_workers_));
  for (size_t i = 0; i < pieces.size(); ++i) {
    steps[i / static_cast<size_t>(replicas_per_worker_)].push_back(pieces[i]);
  }
  return steps;
}

}  // namespace sluice::distribute
