#include "sluice/distribute/mirrored_strategy.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace sluice {

MirroredStrategy::MirroredStrategy(int replicas_per_worker, int num_workers, int worker_index,
                                   std::shared_ptr<WorkerAgreement> agreement)
    : replicas_per_worker_(replicas_per_worker),
      num_workers_(num_workers),
      worker_index_(worker_index),
      agreement_(std::move(agreement)) {
  // Bad arguments cannot be thrown from a constructor the trainer builds inline; keep a usable shape
  // (one replica, one worker) and report the error through every dataset the strategy distributes.
  if (replicas_per_worker < 1) {
    status_ = absl::InvalidArgumentError(
        absl::StrCat("MirroredStrategy: the number of replicas per worker must be >= 1, got ", replicas_per_worker));
  } else if (num_workers < 1) {
    status_ = absl::InvalidArgumentError(
        absl::StrCat("MirroredStrategy: the number of workers must be >= 1, got ", num_workers));
  } else if (worker_index < 0 || worker_index >= num_workers) {
    status_ = absl::InvalidArgumentError(absl::StrCat("MirroredStrategy: worker_index must be in [0, ", num_workers,
                                                      "), got ", worker_index));
  }
  if (!status_.ok()) {
    replicas_per_worker_ = replicas_per_worker < 1 ? 1 : replicas_per_worker;
    num_workers_ = 1;
    worker_index_ = 0;
    agreement_.reset();
  }
}

detail::DistributeConfig MirroredStrategy::BaseConfig(const DistributeOptions& options,
                                                      int64_t default_capacity) const {
  detail::DistributeConfig config;
  config.num_workers = num_workers_;
  config.replicas_per_worker = replicas_per_worker_;
  config.worker_index = worker_index_;
  config.status = status_;
  config.requested_policy = options.auto_shard_policy;
  config.iterator_options = options.iterator_options;
  config.agreement = num_workers_ > 1 ? agreement_ : nullptr;
  int64_t capacity = options.prefetch_per_replica;
  if (capacity == -1) capacity = default_capacity;
  if (capacity < 0 && config.status.ok()) {
    config.status = absl::InvalidArgumentError(absl::StrCat(
        "DistributeOptions: prefetch_per_replica must be >= 0 or -1 (default), got ", options.prefetch_per_replica));
  }
  config.capacity = capacity < 1 ? 1 : static_cast<size_t>(capacity);
  return config;
}

void MirroredStrategy::ConfigureRebatch(const OpNode& root, const DistributeOptions& options,
                                        detail::DistributeConfig* config) const {
  config->static_batch = distribute::FindStaticBatchSize(root);
  absl::StatusOr<distribute::ShardDecision> decision =
      distribute::DecideShardPolicy(root, options.auto_shard_policy, num_workers_);
  if (!decision.ok()) {
    if (config->status.ok()) config->status = decision.status();
  } else {
    config->applied_policy = decision->applied;
    config->file_sources = decision->file_sources;
    config->shard_reason = decision->reason;
  }
  // DATA: every worker reads the same batches, so each batch is one global step, cut into the N pieces of
  // the replicas in sync, of which this worker keeps its own. OFF and FILE: each worker's batches are its
  // own, and one feeds num_workers steps (tf.distribute's rebatch); so are HINT's.
  const bool by_data = config->applied_policy == AutoShardPolicy::kData;
  absl::StatusOr<distribute::RebatchPlan> plan =
      by_data ? distribute::RebatchPlan::Create(config->static_batch, 1, num_replicas_in_sync(), 0)
              : distribute::RebatchPlan::Create(config->static_batch, num_workers_, replicas_per_worker_,
                                                worker_index_);
  if (!plan.ok()) {
    if (config->status.ok()) config->status = plan.status();
    return;
  }
  config->plan = std::move(*plan);
  config->piece_offset = by_data ? worker_index_ * replicas_per_worker_ : 0;
  // The per-replica batch dimension is known only when every piece of every step has the same size.
  const int n = num_replicas_in_sync();
  if (config->static_batch && *config->static_batch % n == 0 && (num_workers_ == 1 || by_data)) {
    config->per_replica_batch = *config->static_batch / n;
  }
}

}  // namespace sluice
