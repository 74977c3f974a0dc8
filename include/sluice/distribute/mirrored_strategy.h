// MirroredStrategy: synchronous data parallelism over local replicas, optionally across workers
// (tf.distribute.MirroredStrategy / MultiWorkerMirroredStrategy, input side and Run).
//
// Contract:
// - num_replicas_in_sync() = replicas_per_worker * num_workers replicas consume one global batch per step;
//   this process drives num_local_replicas() = replicas_per_worker of them, with global replica ids
//   worker_index * replicas_per_worker + i.
// - DistributeDataset(global_batches, options) (experimental_distribute_dataset): `global_batches` yields
//   batches of the GLOBAL batch size G. Each is rebatched across the replicas in sync by tf.distribute's
//   rule (sluice/distribute/detail/rebatch.h): when the pipeline ends in Batch(G, drop_remainder=true) (walking back
//   through Prefetch, Take, Skip, Shard, Repeat, Shuffle, Filter), G is static: `G mod N` replicas get
//   ceil(G/N) and the rest floor(G/N) (worker w's list rotated by w * replicas_per_worker); otherwise each
//   batch is cut in order into N pieces of ceil(b/N), so trailing pieces may be short or empty
//   ([0,1,2,3] over 3 replicas: [0,1] [2,3] []). Then auto-shard (multi-worker only, sluice/distribute/auto_shard.h),
//   then a per-replica prefetch (DistributeOptions::prefetch_per_replica). B must have BatchTraits.
// - DistributeDatasetsFromFunction(fn, options): fn(const InputContext&) -> Dataset<B> is called once with
//   {num_input_pipelines = num_workers, input_pipeline_id = worker_index, num_replicas_in_sync}; its
//   dataset is used as it is (no rebatch, no sharding, no prefetch op added): local replica r gets element
//   k * num_local_replicas + r in step k.
// - DistributeValuesFromFunction(fn): PerReplica<T> of fn(ValueContext{global replica id, N}) per local
//   replica, in order, called on the calling thread.
// - Run(fn, per_replica_args...): calls fn(global_replica_id, args[i]...) once per local replica, each on a
//   thread of its own, concurrently (fn must allow that), and returns PerReplica of the results (void fn:
//   returns nothing). An exception escaping fn becomes an InternalError result when fn returns absl::Status
//   or absl::StatusOr, and is rethrown (after all replicas finished) otherwise. Arguments whose size is not
//   num_local_replicas() give InvalidArgument results (status-like results) or std::invalid_argument.
// - ReplicaIterator(it, i) is it.Replica(i): the per-replica iterator tf's code would reach through the
//   strategy.
// - Errors: bad constructor arguments (num_replicas < 1, worker index outside [0, num_workers)) are kept in
//   status() and every distributed dataset of the strategy yields them as one error step.
// - Threading: the strategy is immutable; all members are const and thread-safe.
//
//   MirroredStrategy strategy(/*num_replicas=*/2);
//   auto dist = strategy.DistributeDataset(Range(8).Batch(4));   // G = 4, dynamic: [0,1] [2,3], ...
//   auto it = dist.MakeIterator();
//   for (absl::StatusOr<PerReplica<Tensor>> step : it) { ... step->LocalResults() ... }  // int64[2] each
#ifndef SLUICE_DISTRIBUTE_MIRRORED_STRATEGY_H_
#define SLUICE_DISTRIBUTE_MIRRORED_STRATEGY_H_

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/distribute/auto_shard.h"
#include "sluice/export.h"
#include "sluice/ops/batching.h"
#include "sluice/ops/dataset.h"
#include "sluice/engine/detail/status_traits.h"
#include "sluice/distribute/distributed_iterator.h"
#include "sluice/distribute/input_context.h"
#include "sluice/distribute/per_replica.h"

namespace sluice {

class SLUICE_EXPORT MirroredStrategy {
 public:
  explicit MirroredStrategy(int num_replicas) : MirroredStrategy(num_replicas, 1, 0, nullptr) {}
  // `agreement`: how the workers agree on the end of the data (nullptr: each worker ends with its own data).
  MirroredStrategy(int replicas_per_worker, int num_workers, int worker_index,
                   std::shared_ptr<WorkerAgreement> agreement = nullptr);

  int num_replicas_in_sync() const { return replicas_per_worker_ * num_workers_; }
  int num_local_replicas() const { return replicas_per_worker_; }
  int worker_index() const { return worker_index_; }
  int num_workers() const { return num_workers_; }
  const absl::Status& status() const { return status_; }
  const std::shared_ptr<WorkerAgreement>& agreement() const { return agreement_; }

  template <class B>
  DistributedDataset<B> DistributeDataset(Dataset<B> global_batches, DistributeOptions options = {}) const {
    static_assert(IsBatchable<B>, "DistributeDataset needs BatchTraits<B> (sluice/ops/batching.h) to split batches");
    detail::DistributeConfig config = BaseConfig(options, /*default_capacity=*/replicas_per_worker_);
    config.mode = detail::DistributeMode::kRebatch;
    ConfigureRebatch(*global_batches.node(), options, &config);
    return DistributedDataset<B>(global_batches.node(), std::move(config));
  }

  template <class F>
  auto DistributeDatasetsFromFunction(F fn, DistributeOptions options = {}) const {
    InputContext context;
    context.num_input_pipelines = num_workers_;
    context.input_pipeline_id = worker_index_;
    context.num_replicas_in_sync = num_replicas_in_sync();
    auto dataset = std::invoke(fn, static_cast<const InputContext&>(context));
    using B = typename decltype(dataset)::element_type;
    detail::DistributeConfig config = BaseConfig(options, /*default_capacity=*/1);
    config.mode = detail::DistributeMode::kFromFunction;
    config.requested_policy = options.auto_shard_policy;
    config.applied_policy = AutoShardPolicy::kOff;
    return DistributedDataset<B>(dataset.node(), std::move(config));
  }

  template <class F>
  auto DistributeValuesFromFunction(F fn) const {
    using T = std::decay_t<std::invoke_result_t<F&, const ValueContext&>>;
    std::vector<T> values;
    values.reserve(static_cast<size_t>(replicas_per_worker_));
    for (int i = 0; i < replicas_per_worker_; ++i) {
      ValueContext context;
      context.replica_id_in_sync_group = worker_index_ * replicas_per_worker_ + i;
      context.num_replicas_in_sync = num_replicas_in_sync();
      values.push_back(std::invoke(fn, static_cast<const ValueContext&>(context)));
    }
    return PerReplica<T>(std::move(values));
  }

  template <class F, class... Args>
  auto Run(F fn, const PerReplica<Args>&... args) const {
    using R = std::invoke_result_t<F&, int, const Args&...>;
    const size_t n = static_cast<size_t>(replicas_per_worker_);
    const bool sizes_ok = ((args.size() == n) && ... && true);
    if constexpr (std::is_void_v<R>) {
      if (!sizes_ok) throw std::invalid_argument(SizeError(args.size()...));
      std::vector<std::exception_ptr> errors(n);
      {
        std::vector<std::jthread> threads;
        threads.reserve(n);
        for (size_t i = 0; i < n; ++i) {
          threads.emplace_back([&, i] {
            try {
              std::invoke(fn, GlobalId(i), args[i]...);
            } catch (...) {
              errors[i] = std::current_exception();
            }
          });
        }
      }
      for (std::exception_ptr& e : errors) {
        if (e) std::rethrow_exception(e);
      }
    } else {
      using V = std::decay_t<R>;
      if (!sizes_ok) {
        if constexpr (detail::kIsStatusLike<V>) {
          return PerReplica<V>(std::vector<V>(n, V(absl::InvalidArgumentError(SizeError(args.size()...)))));
        } else {
          throw std::invalid_argument(SizeError(args.size()...));
        }
      }
      std::vector<std::optional<V>> results(n);
      std::vector<std::exception_ptr> errors(n);
      {
        std::vector<std::jthread> threads;
        threads.reserve(n);
        for (size_t i = 0; i < n; ++i) {
          threads.emplace_back([&, i] {
            try {
              results[i].emplace(std::invoke(fn, GlobalId(i), args[i]...));
            } catch (...) {
              if constexpr (detail::kIsStatusLike<V>) {
                results[i].emplace(V(detail::StatusFromCurrentException("MirroredStrategy::Run")));
              } else {
                errors[i] = std::current_exception();
              }
            }
          });
        }
      }
      for (std::exception_ptr& e : errors) {
        if (e) std::rethrow_exception(e);
      }
      std::vector<V> values;
      values.reserve(n);
      for (std::optional<V>& r : results) values.push_back(std::move(*r));
      return PerReplica<V>(std::move(values));
    }
  }

  // tf's strategy-level spelling of it.Replica(i).
  template <class B>
  sluice::ReplicaIterator<B>& ReplicaIterator(DistributedIterator<B>& it, int local_replica) const {
    return it.Replica(local_replica);
  }

 private:
  int GlobalId(size_t local) const { return worker_index_ * replicas_per_worker_ + static_cast<int>(local); }
  template <class... Sizes>
  std::string SizeError(Sizes... sizes) const {
    std::string out = absl::StrCat("MirroredStrategy::Run: every PerReplica argument needs ", replicas_per_worker_,
                                   " values (one per local replica); got sizes");
    ((absl::StrAppend(&out, " ", sizes)), ...);
    return out;
  }

  // ops/../distribute/mirrored_strategy.cc
  detail::DistributeConfig BaseConfig(const DistributeOptions& options, int64_t default_capacity) const;
  void ConfigureRebatch(const OpNode& root, const DistributeOptions& options, detail::DistributeConfig* config) const;

  int replicas_per_worker_;
  int num_workers_;
  int worker_index_;
  std::shared_ptr<WorkerAgreement> agreement_;
  absl::Status status_;
};

}  // namespace sluice

#endif  // SLUICE_DISTRIBUTE_MIRRORED_STRATEGY_H_
