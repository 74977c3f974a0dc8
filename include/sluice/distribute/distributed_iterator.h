// DistributedDataset<B>, DistributedIterator<B> and ReplicaIterator<B>: the input side of a
// MirroredStrategy (tf.distribute's DistributedDataset / DistributedIterator). Made by
// MirroredStrategy::DistributeDataset / DistributeDatasetsFromFunction (sluice/distribute/mirrored_strategy.h).
//
// Contract:
// - Elements: one global step at a time. Whole-step access (DistributedIterator::Next, NextBlocking,
//   GetNextAsOptional, range-for) gives a PerReplica<B> holding every local replica's piece of the step;
//   per-replica access (Replica(i).Next / NextBlocking) gives local replica i its own piece, so replica
//   threads or coroutines run at their own pace within the prefetch window.
// - Order and step alignment: the k-th piece every local replica receives belongs to global step k.
//   From DistributeDataset, step k's pieces are cut, in order, from the worker's input batches by
//   tf.distribute's rebatch rule (sluice/distribute/detail/rebatch.h; see the auto-shard policy in
//   sluice/distribute/auto_shard.h for multi-worker); from DistributeDatasetsFromFunction, local replica r gets
//   element k * num_local_replicas + r of the worker's dataset.
// - Partial steps: when the data runs out for some replicas of a step and not others (a short last batch,
//   an input that ends mid-step, or, across workers, a worker whose shard ended first), the others get an
//   EMPTY batch of the same type and inner shape (BatchTraits<B>::Slice(batch, 0, 0)). Every replica sees
//   the same number of steps and the end together: locally always; across workers when the strategy has
//   a WorkerAgreement.
// - End: Next gives std::nullopt (whole step) / std::nullopt (replica) at the end, and stays there.
// - Errors are elements, as in tf.data: an error element of the input pipeline becomes one step whose
//   pieces are all that error (whole-step Next returns it; each replica's Next returns it). A distributed
//   dataset built with bad arguments (for example FILE sharding with fewer files than workers) yields its
//   InvalidArgument as one error step, then the end. GetNextAsOptional never errors: an error gives
//   std::nullopt and status() tells it.
// - Mixing: an iterator is used either whole-step or per replica; the other kind of Next then returns
//   FailedPrecondition.
// - Cancellation: an awaited Next observes the awaiting coroutine's stop token (Cancelled).
// - Threading and lifetime: one producer task on the iterator's thread pool pulls the pipeline and pushes
//   each replica's piece into that replica's bounded lock-free queue (capacity prefetch_per_replica), with
//   backpressure; each ReplicaIterator may be used from its own thread or coroutine (one user per replica
//   at a time). Coroutines waiting in Next resume on the iterator's pool. Destroying the
//   DistributedIterator (on a thread that is not one of its pool's workers) stops and joins the producer
//   and wakes every replica blocked in Next, which then sees the end; copies of its ReplicaIterators stay
//   safe to call (they see the end).
//
//   DistributedIterator<Tensor> it = dist.MakeIterator();   // e.g. Range(8).Batch(4): int64 batches
//   while (std::optional<PerReplica<Tensor>> step = it.GetNextAsOptional()) {
//     for (const auto& piece : step->LocalResults()) { ... }
//   }
//   // or, one thread per replica: ReplicaIterator<Batch> mine = it.Replica(i);
//   //   while (auto b = mine.NextBlocking(); b.ok() && b->has_value()) { ... }
#ifndef SLUICE_DISTRIBUTE_DISTRIBUTED_ITERATOR_H_
#define SLUICE_DISTRIBUTE_DISTRIBUTED_ITERATOR_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/distribute/auto_shard.h"
#include "sluice/distribute/detail/distributed_checkpoint.h"
#include "sluice/distribute/detail/rebatch.h"
#include "sluice/distribute/detail/replica_queue.h"
#include "sluice/distribute/per_replica.h"
#include "sluice/engine/async_scope.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "sluice/engine/thread_pool.h"
#include "sluice/io/tensor.h"
#include "sluice/ops/batching.h"
#include "sluice/ops/cardinality.h"
#include "sluice/ops/checkpoint_state.h"
#include "sluice/ops/element_codec.h"
#include "sluice/ops/iterator.h"
#include "sluice/ops/node_path.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/options.h"

namespace sluice {

// One component of a per-replica element: dtype and shape, -1 for a dimension that is not known.
struct TensorSpec {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  friend bool operator==(const TensorSpec&, const TensorSpec&) = default;
};

// What each replica's batches look like: rows per batch (-1 when partial or uneven batches are possible)
// and, for Tensor batches (and vectors of numbers, strings or tensors), their components' dtypes and
// shapes with the batch dimension first. Other batch types have no components.
struct ElementSpec {
  int64_t batch_size = -1;
  std::vector<TensorSpec> components;
  std::string DebugString() const {
    std::string out = absl::StrCat("batch_size=", batch_size);
    for (const TensorSpec& c : components) {
      absl::StrAppend(&out, " ", std::string(DTypeName(c.dtype)), "[");
      for (size_t i = 0; i < c.shape.size(); ++i) absl::StrAppend(&out, i ? "," : "", c.shape[i]);
      absl::StrAppend(&out, "]");
    }
    return out;
  }
  friend bool operator==(const ElementSpec&, const ElementSpec&) = default;
};

// Describes a batch type from a sample batch (which may have zero rows). Specialise for other types.
template <class B>
struct ElementSpecTraits {
  static std::vector<TensorSpec> Components(const B& /*sample*/, int64_t /*batch_size*/) { return {}; }
};
template <>
struct ElementSpecTraits<Tensor> {
  static std::vector<TensorSpec> Components(const Tensor& sample, int64_t batch_size) {
    std::vector<int64_t> shape = sample.shape().dims();
    if (shape.empty()) return {{sample.dtype(), {}}};
    shape[0] = batch_size;
    return {{sample.dtype(), std::move(shape)}};
  }
};
template <class T>
struct ElementSpecTraits<std::vector<T>> {
  static std::vector<TensorSpec> Components(const std::vector<T>& sample, int64_t batch_size) {
    if constexpr (std::is_same_v<T, Tensor>) {
      if (sample.empty()) return {};
      std::vector<int64_t> shape = sample.front().shape().dims();
      shape.insert(shape.begin(), batch_size);
      return {{sample.front().dtype(), std::move(shape)}};
    } else if constexpr (requires { DTypeOf<T>::value; }) {
      return {{DTypeOf<T>::value, {batch_size}}};
    } else {
      return {};
    }
  }
};

struct DistributeOptions {
  AutoShardPolicy auto_shard_policy = AutoShardPolicy::kAuto;
  // Pieces buffered per replica ahead of its Next. -1: the number of local replicas for DistributeDataset
  // (tf.distribute's prefetch), 1 for DistributeDatasetsFromFunction (no added prefetch); 0 counts as 1.
  int64_t prefetch_per_replica = -1;
  // How the input pipeline's iterator runs (thread pool, determinism).
  Options iterator_options;
};

template <class B>
class DistributedIterator;
template <class B>
class DistributedDataset;

namespace detail {

enum class DistributeMode : uint8_t { kRebatch, kFromFunction };

// Everything a DistributedDataset decided when it was made; immutable afterwards.
struct DistributeConfig {
  DistributeMode mode = DistributeMode::kRebatch;
  int num_workers = 1;
  int replicas_per_worker = 1;
  int worker_index = 0;
  absl::Status status;  // not OK: the iterator yields this as one error step
  std::optional<int64_t> static_batch;
  AutoShardPolicy requested_policy = AutoShardPolicy::kAuto;
  AutoShardPolicy applied_policy = AutoShardPolicy::kOff;
  std::vector<distribute::FileShardTarget> file_sources;  // kFile: the nodes to shard, by node path from the root
  std::string shard_reason;  // why AUTO applied OFF or DATA to several workers, or ""
  // kRebatch: how input batches are cut. With DATA the plan is (1 worker, N replicas) and this worker
  // keeps ranges [piece_offset, piece_offset + replicas_per_worker) of each step.
  std::optional<distribute::RebatchPlan> plan;
  int piece_offset = 0;
  size_t capacity = 1;
  Options iterator_options;
  std::shared_ptr<WorkerAgreement> agreement;
  int64_t per_replica_batch = -1;  // ElementSpec's batch_size
};

// The state one DistributedIterator shares with its ReplicaIterators and its producer task.
template <class B>
class DistributedState {
 public:
  using Item = absl::StatusOr<B>;
  enum Access : int { kUnclaimed = 0, kWholeStep = 1, kPerReplica = 2 };

  // first_pass: the pass number the pipeline's ops start at (IteratorState), the iterator's epoch.
  // make_input false: Restore() builds the input from a checkpoint.
  DistributedState(NodePtr<B> node, DistributeConfig config, uint64_t first_pass, bool make_input = true)
      : config_(ResolveShard(std::move(config), *node)),
        context_(MakeContext(config_, *node, first_pass)),
        queues_(config_.replicas_per_worker, config_.capacity, context_->pool),
        node_(std::move(node)),
        first_pass_(first_pass),
        carry_(static_cast<size_t>(config_.replicas_per_worker)),
        pushed_(static_cast<size_t>(config_.replicas_per_worker), 0) {
    if (config_.status.ok() && make_input) {
      input_.emplace(node_->MakeStream(context_), context_, node_);
      MarkInputNow();
      RecordStepPosition(0);
    }
    if (config_.agreement != nullptr) epoch_ = config_.agreement->BeginEpoch(config_.worker_index);
  }

  // An iterator's state restored from DistributedIterator::Save's bytes (see there).
  static absl::StatusOr<std::shared_ptr<DistributedState>> Restore(
      NodePtr<B> node, DistributeConfig config, distribute::DistributedCheckpoint<B> saved) {
    const uint64_t first_pass = saved.first_pass;
    auto state = std::make_shared<DistributedState>(std::move(node), std::move(config), first_pass, false);
    absl::Status restored = state->RestoreFrom(std::move(saved));
    if (!restored.ok()) return restored;
    return state;
  }
  DistributedState(const DistributedState&) = delete;
  DistributedState& operator=(const DistributedState&) = delete;
  ~DistributedState() { Shutdown(); }

  const DistributeConfig& config() const { return config_; }
  distribute::ReplicaQueues<Item>& queues() { return queues_; }
  ThreadPool* pool() const { return pool_; }
  Iterator<B>& input() { return *input_; }

  // Starts the producer on first use (any Next, ElementSpec).
  void Start() {
    std::call_once(started_, [this] {
      // A Replica's Next racing the owner's destruction must not start a producer after the join.
      std::lock_guard<std::mutex> lock(shutdown_mutex_);
      if (!shut_down_) scope_.Spawn(Produce(this));
    });
  }

  // Stops and joins the producer, wakes every waiting replica (they see the end), and releases the
  // pipeline and a private pool here, on the owner's thread, rather than wherever the last
  // ReplicaIterator copy goes.
  void Shutdown() {
    std::lock_guard<std::mutex> lock(shutdown_mutex_);
    if (shut_down_) return;
    shut_down_ = true;
    scope_.RequestStop();
    queues_.Close();
    scope_.JoinBlocking();
    // Leaving before the workers agreed on the end: tell the others not to wait for this worker.
    if (config_.agreement != nullptr && !agreed_end_) config_.agreement->Abandon(config_.worker_index, epoch_);
    input_.reset();
    FinishSpec();
    context_.reset();  // a private pool drains the wake-ups Close() queued on it, then joins
  }

  absl::Status Claim(Access access) {
    int expected = kUnclaimed;
    if (access_.compare_exchange_strong(expected, access, std::memory_order_acq_rel) || expected == access) {
      return absl::OkStatus();
    }
    return absl::FailedPreconditionError(
        access == kWholeStep ? "DistributedIterator::Next: this iterator is already used per replica (Replica(i))"
                             : "ReplicaIterator::Next: this iterator is already used whole-step (Next())");
  }

  // Blocks until the producer has seen the first element (or finished).
  ElementSpec GetElementSpec() {
    Start();
    std::unique_lock<std::mutex> lock(spec_mutex_);
    spec_cv_.wait(lock, [this] { return sample_.has_value() || spec_final_; });
    ElementSpec spec;
    spec.batch_size = config_.per_replica_batch;
    if (sample_) spec.components = ElementSpecTraits<B>::Components(*sample_, spec.batch_size);
    return spec;
  }

  // The pause for a checkpoint: the producer stops at its next step boundary (the flag is one atomic
  // load per step), the save takes every buffered piece out of the queues, saves them with the input
  // iterator's own checkpoint and the producer's position, and hands them back to a new producer, which
  // delivers them before anything new. Runs on whatever thread resumes the join: it blocks none.
  static Task<absl::StatusOr<std::string>> Save(std::shared_ptr<DistributedState> self) {
    if (!self->config_.status.ok()) {
      co_return absl::FailedPreconditionError(absl::StrCat(
          "DistributedIterator::Save: this distribution failed: ", self->config_.status.ToString()));
    }
    if constexpr (!HasElementCodec<B>) {
      co_return absl::FailedPreconditionError(absl::StrCat("DistributedIterator::Save: batches of type ",
                                                           ElementTypeName<B>(), " have no ElementCodec"));
    } else {
      if (self->saving_.exchange(true, std::memory_order_acq_rel)) {
        co_return absl::FailedPreconditionError(
            "DistributedIterator::Save: another save of this iterator is running");
      }
      self->Start();
      self->pause_requested_.store(true, std::memory_order_release);
      std::vector<std::deque<Item>> drained(self->carry_.size());
      // Making room lets a producer blocked in a push finish its step and see the flag.
      self->Drain(&drained);
      co_await self->scope_.Join();
      self->Drain(&drained);
      absl::StatusOr<std::string> state = co_await self->SaveStopped(&drained);
      self->ResumeAfterSave(std::move(drained));
      self->saving_.store(false, std::memory_order_release);
      co_return state;
    }
  }

  static absl::StatusOr<std::optional<B>> ToResult(absl::StatusOr<std::optional<Item>> popped) {
    if (!popped.ok()) return std::move(popped).status();
    if (!popped->has_value()) return std::optional<B>();
    Item& item = **popped;
    if (!item.ok()) return std::move(item).status();
    return std::optional<B>(std::move(*item));
  }

 private:
  // One global step's worth of one input batch: the error it carries, or this worker's ranges.
  struct Step {
    absl::Status error;
    std::vector<distribute::RebatchPlan::Range> ranges;
  };

  // A FILE shard path that does not name a file source of this root (a configuration made for another
  // graph) is the iterator's one error step.
  static DistributeConfig ResolveShard(DistributeConfig config, const OpNode& root) {
    if (config.status.ok()) {
      config.status =
          distribute::MakeFileShard(root, config.file_sources, config.num_workers, config.worker_index).status();
    }
    return config;
  }

  static IteratorContextPtr MakeContext(const DistributeConfig& config, const OpNode& root, uint64_t first_pass) {
    auto context = std::make_shared<IteratorContext>();
    context->state = std::make_shared<IteratorState>(first_pass);
    context->options = config.iterator_options;
    if (config.iterator_options.thread_pool_size > 0) {
      context->private_pool = std::make_shared<ThreadPool>(config.iterator_options.thread_pool_size);
      context->pool = context->private_pool.get();
    } else {
      context->pool = &ThreadPool::Default();
    }
    if (config.status.ok() && !config.file_sources.empty()) {
      // ResolveShard has checked the paths against this root.
      context->file_shard =
          *distribute::MakeFileShard(root, config.file_sources, config.num_workers, config.worker_index);
    }
    if (config.applied_policy == AutoShardPolicy::kHint) {
      context->shard_hint = IteratorContext::ShardHint{config.num_workers, config.worker_index};
    }
    return context;
  }

  void RecordSample(const B& element) {
    if (sampled_) return;
    sampled_ = true;
    std::optional<B> sample;
    if constexpr (IsBatchable<B>) {
      int64_t rows = BatchTraits<B>::Rows(element);
      absl::StatusOr<B> first = BatchTraits<B>::Slice(element, 0, rows > 0 ? 1 : 0);
      absl::StatusOr<B> none = BatchTraits<B>::Slice(element, 0, 0);
      if (first.ok()) sample.emplace(std::move(*first));
      if (none.ok()) empty_.emplace(std::move(*none));
    } else {
      sample.emplace(element);
      if constexpr (std::is_default_constructible_v<B>) empty_.emplace();
    }
    std::lock_guard<std::mutex> lock(spec_mutex_);
    sample_ = std::move(sample);
    spec_cv_.notify_all();
  }

  void FinishSpec() {
    std::lock_guard<std::mutex> lock(spec_mutex_);
    spec_final_ = true;
    spec_cv_.notify_all();
  }

  // The piece for a replica whose data ran out in this step.
  Item EmptyPiece() const {
    if (empty_) return *empty_;
    if constexpr (std::is_default_constructible_v<B>) {
      return B();
    } else {
      return absl::FailedPreconditionError(
          "DistributedIterator: this worker saw no batch to shape the empty batch its replicas need while other "
          "workers still have data");
    }
  }

  // This worker's steps cut from one input batch.
  absl::StatusOr<std::vector<std::vector<distribute::RebatchPlan::Range>>> Split(const B& batch) const {
    if constexpr (IsBatchable<B>) {
      absl::StatusOr<std::vector<std::vector<distribute::RebatchPlan::Range>>> steps =
          config_.plan->SplitInputBatch(BatchTraits<B>::Rows(batch));
      if (!steps.ok() || steps->empty()) return steps;
      if (config_.piece_offset == 0 && static_cast<int>(steps->front().size()) == config_.replicas_per_worker) {
        return steps;
      }
      for (std::vector<distribute::RebatchPlan::Range>& step : *steps) {
        auto first = step.begin() + config_.piece_offset;
        step = std::vector<distribute::RebatchPlan::Range>(first, first + config_.replicas_per_worker);
      }
      return steps;
    } else {
      (void)batch;
      return absl::InternalError("DistributedIterator: rebatching a type without BatchTraits");
    }
  }

  static Item Cut(const B& batch, const distribute::RebatchPlan::Range& range) {
    if constexpr (IsBatchable<B>) {
      return BatchTraits<B>::Slice(batch, range.first, range.first + range.second);
    } else {
      (void)batch;
      (void)range;
      return absl::InternalError("DistributedIterator: slicing a type without BatchTraits");
    }
  }

  // Fills `items` with this worker's pieces of the next step; leaves it empty when this worker's data
  // has run out. Runs on the producer only.
  Task<void> NextStep(std::vector<Item>* items) {
    const size_t replicas = static_cast<size_t>(config_.replicas_per_worker);
    if (config_.mode == DistributeMode::kFromFunction) {
      while (!input_done_ && items->size() < replicas) {
        typename Iterator<B>::Result next;
        if (carry_input_.empty()) {
          next = co_await input_->Next();
          MarkInputNow();
        } else {
          next = TakeCarriedInput();
          input_mark_known_ = false;
        }
        if (!next.ok()) {
          items->push_back(std::move(next).status());
        } else if (!next->has_value()) {
          input_done_ = true;
        } else {
          RecordSample(**next);
          items->push_back(std::move(**next));
        }
      }
      co_return;
    }
    if (pending_.empty() && !input_done_) {
      typename Iterator<B>::Result next;
      if (carry_input_.empty()) {
        next = co_await input_->Next();
        MarkInputNow();
      } else {
        next = TakeCarriedInput();
        input_mark_known_ = false;
      }
      if (!next.ok()) {
        pending_.push_back(Step{std::move(next).status(), {}});
      } else if (!next->has_value()) {
        input_done_ = true;
      } else {
        batch_.emplace(std::move(**next));
        RecordSample(*batch_);
        absl::StatusOr<std::vector<std::vector<distribute::RebatchPlan::Range>>> steps = Split(*batch_);
        if (!steps.ok()) {
          pending_.push_back(Step{std::move(steps).status(), {}});
        } else {
          for (std::vector<distribute::RebatchPlan::Range>& ranges : *steps) {
            pending_.push_back(Step{absl::OkStatus(), std::move(ranges)});
          }
        }
      }
    }
    if (pending_.empty()) co_return;
    Step step = std::move(pending_.front());
    pending_.pop_front();
    for (size_t r = 0; r < replicas; ++r) {
      if (!step.error.ok()) {
        items->push_back(step.error);
      } else {
        items->push_back(Cut(*batch_, step.ranges[r]));
      }
    }
  }

  // The fan-out: one step at a time, every local replica's piece into its queue, in replica order.
  static Task<void> Produce(DistributedState* self) {
    co_await self->pool_->Schedule();
    std::stop_token stop = co_await CurrentStopToken();
    const DistributeConfig& config = self->config_;
    const size_t replicas = static_cast<size_t>(config.replicas_per_worker);
    if (!config.status.ok()) {
      for (size_t r = 0; r < replicas; ++r) {
        Item item(config.status);  // GCC12 PR100611: no temporary inside the co_await
        absl::Status pushed = co_await self->queues_[static_cast<int>(r)].Push(std::move(item));
        if (!pushed.ok()) break;
      }
    }
    bool first = true;
    while (config.status.ok() && !stop.stop_requested()) {
      if (self->pause_requested_.load(std::memory_order_acquire)) co_return;  // a save takes over
      if (self->HasCarry()) {
        if (!co_await self->PushCarriedStep()) break;  // closed or cancelled: the iterator is going away
        continue;
      }
      if (self->finished_) break;  // restarted after a save: it had delivered its last step before
      std::vector<Item> items;
      items.reserve(replicas);
      co_await self->NextStep(&items);
      if (stop.stop_requested()) break;
      // The spec is what the first step shows (nothing when it is an error): ElementSpec() must not wait
      // for a producer that is itself waiting for replicas to make room.
      if (first) self->FinishSpec();
      first = false;
      bool any = !items.empty();
      if (config.agreement != nullptr) {
        absl::StatusOr<bool> agreed = co_await config.agreement->AnyWorkerHasData(
            config.worker_index, self->epoch_, self->agreement_step_, any);
        if (!agreed.ok()) {
          // An agreement that failed cannot keep the workers aligned: report it once, then end.
          if (stop.stop_requested()) break;
          items.assign(replicas, Item(agreed.status()));
          for (size_t r = 0; r < replicas; ++r) {
            absl::Status pushed = co_await self->queues_[static_cast<int>(r)].Push(std::move(items[r]));
            if (!pushed.ok()) break;
          }
          break;
        }
        any = *agreed;
        self->agreed_end_ = !any;
      }
      ++self->agreement_step_;
      if (!any) break;
      self->fillers_in_last_step_ = static_cast<int64_t>(replicas - items.size());
      while (items.size() < replicas) items.push_back(self->EmptyPiece());
      // Where the input stands after this step, read before the pushes: a replica may take the step and a
      // save stop the producer before they all finish.
      const bool position_known = self->input_mark_known_ && self->pending_.empty();
      bool delivered = true;
      for (size_t r = 0; r < replicas && delivered; ++r) {
        absl::Status pushed = co_await self->queues_[static_cast<int>(r)].Push(std::move(items[r]));
        delivered = pushed.ok();
        if (delivered) ++self->pushed_[r];
      }
      if (!delivered) break;  // closed or cancelled: the iterator is going away
      if (position_known) {
        self->RecordStepPosition(self->pushed_[0]);
      } else {
        self->ForgetStepPosition(self->pushed_[0]);
      }
    }
    if (!stop.stop_requested()) self->finished_ = true;
    self->queues_.Close();
    self->FinishSpec();
  }

  bool HasCarry() const {
    for (const std::deque<Item>& pieces : carry_) {
      if (!pieces.empty()) return true;
    }
    return false;
  }

  // One step a save handed back (or a restore brought): each replica's next carried piece. After a save
  // that failed because the replicas stood at different steps, some replicas have fewer.
  Task<bool> PushCarriedStep() {
    for (size_t r = 0; r < carry_.size(); ++r) {
      if (carry_[r].empty()) continue;
      Item item = std::move(carry_[r].front());
      carry_[r].pop_front();
      if (item.ok()) RecordSample(*item);
      absl::Status pushed = co_await queues_[static_cast<int>(r)].Push(std::move(item));
      if (!pushed.ok()) co_return false;
      ++pushed_[r];
    }
    FinishSpec();
    co_return true;
  }

  // Compact checkpoints (Options::compact_checkpoints, one worker): the input's position before each step,
  // by step number (the pieces delivered to replica 0), so that a save writes the input's mark at the
  // consumed step rather than the steps queued after it. A step cut from the middle of an input batch, made
  // from elements a restore carried, or followed by other workers' agreement has none (nor has any step of
  // a pipeline compact mode refuses): a save there writes the full state. Producer state; a save reads it
  // after the join.
  void MarkInputNow() {
    input_mark_known_ = compact_ && config_.agreement == nullptr && input_->MarkPosition(&input_mark_);
  }
  void RecordStepPosition(int64_t step) {
    if (!compact_) return;
    SetStepPosition(step, input_mark_known_ ? std::optional<StreamMark>(input_mark_) : std::nullopt);
  }
  void ForgetStepPosition(int64_t step) {
    if (compact_) SetStepPosition(step, std::nullopt);
  }
  void SetStepPosition(int64_t step, std::optional<StreamMark> position) {
    if (step_marks_.empty() || step < step_marks_base_ ||
        step > step_marks_base_ + static_cast<int64_t>(step_marks_.size())) {
      step_marks_.clear();
      step_marks_base_ = step;
    }
    const auto i = static_cast<size_t>(step - step_marks_base_);
    if (i == step_marks_.size()) {
      step_marks_.push_back(std::move(position));
    } else {
      step_marks_[i] = std::move(position);
      step_marks_.resize(i + 1);  // later positions belonged to steps a save handed back
    }
    // A replica has taken all but the queue's capacity: older positions are never asked for.
    while (step_marks_.size() > 2 * config_.capacity + 4) {
      step_marks_.pop_front();
      ++step_marks_base_;
    }
  }
  const StreamMark* StepPosition(int64_t step) const {
    if (!compact_ || step < step_marks_base_ ||
        step >= step_marks_base_ + static_cast<int64_t>(step_marks_.size()))
      return nullptr;
    const std::optional<StreamMark>& position = step_marks_[static_cast<size_t>(step - step_marks_base_)];
    return position ? &*position : nullptr;
  }

  typename Iterator<B>::Result TakeCarriedInput() {
    typename Iterator<B>::Result next = std::move(carry_input_.front());
    carry_input_.pop_front();
    return next;
  }

  // Takes what the queues hold, without waiting; the save is their only consumer meanwhile.
  void Drain(std::vector<std::deque<Item>>* drained) {
    for (size_t r = 0; r < drained->size(); ++r) {
      while (std::optional<Item> piece = queues_[static_cast<int>(r)].TryPop())
        (*drained)[r].push_back(std::move(*piece));
    }
  }

  distribute::DistributedTopology Topology() const {
    distribute::DistributedTopology t;
    t.mode = static_cast<int64_t>(config_.mode);
    t.num_workers = config_.num_workers;
    t.worker_index = config_.worker_index;
    t.replicas_per_worker = config_.replicas_per_worker;
    t.static_batch = config_.static_batch.value_or(-1);
    t.applied_policy = static_cast<int64_t>(config_.applied_policy);
    return t;
  }

  // With the producer stopped: the state, or why it cannot be saved. `drained` belongs to the caller.
  Task<absl::StatusOr<std::string>> SaveStopped(const std::vector<std::deque<Item>>* drained) {
    const size_t replicas = carry_.size();
    std::vector<int64_t> consumed(replicas);
    bool aligned = true;
    for (size_t r = 0; r < replicas; ++r) {
      consumed[r] = pushed_[r] - static_cast<int64_t>((*drained)[r].size());
      aligned = aligned && consumed[r] == consumed[0];
    }
    if (!aligned) {
      std::string steps;
      for (size_t r = 0; r < replicas; ++r)
        absl::StrAppend(&steps, r ? ", " : "", "replica ", r, " at step ", consumed[r]);
      co_return absl::FailedPreconditionError(
          absl::StrCat("DistributedIterator::Save: the local replicas stand at different steps (", steps,
                       "); save when every replica has taken the same number of steps"));
    }
    distribute::DistributedCheckpoint<B> saved;
    saved.topology = Topology();
    saved.first_pass = first_pass_;
    saved.consumed_steps = replicas > 0 ? consumed[0] : 0;
    if (const StreamMark* position = StepPosition(saved.consumed_steps); position != nullptr) {
      // Compact: the input's state at the consumed step; the steps queued after it are made again.
      saved.agreement_step = saved.consumed_steps;
      absl::StatusOr<std::string> input = input_->SaveAtMark(*position);
      if (!input.ok()) {
        co_return absl::Status(input.status().code(),
                               absl::StrCat("DistributedIterator::Save: ", input.status().message()));
      }
      saved.input = std::move(*input);
      co_return distribute::EncodeDistributedCheckpoint(saved);
    }
    saved.agreement_step = agreement_step_;
    saved.finished = finished_;
    // Not consumed, oldest first: what the queues held, then what an earlier save handed back and the
    // producer has not delivered again yet.
    const size_t steps = replicas > 0 ? (*drained)[0].size() + carry_[0].size() : 0;
    for (size_t i = 0; i < steps; ++i) {
      std::vector<Item>& step = saved.steps.emplace_back();
      for (size_t r = 0; r < replicas; ++r) {
        const std::deque<Item>& queued = (*drained)[r];
        step.push_back(i < queued.size() ? queued[i] : carry_[r][i - queued.size()]);
      }
      // Only the last step made can end in fillers (one worker's data ran out mid-step).
      saved.real_pieces.push_back(static_cast<int64_t>(replicas) -
                                  (i + 1 == steps ? fillers_in_last_step_ : 0));
    }
    if (!pending_.empty()) {
      saved.batch = batch_;
      for (const Step& step : pending_) saved.pending.emplace_back(step.error, step.ranges);
    }
    absl::StatusOr<std::string> input = co_await input_->Save();
    if (!input.ok()) {
      co_return absl::Status(input.status().code(),
                             absl::StrCat("DistributedIterator::Save: ", input.status().message()));
    }
    saved.input = std::move(*input);
    co_return distribute::EncodeDistributedCheckpoint(saved);
  }

  // The pieces a save took go back in front of what is carried, and a new producer delivers them.
  void ResumeAfterSave(std::vector<std::deque<Item>> drained) {
    for (size_t r = 0; r < drained.size(); ++r) {
      pushed_[r] -= static_cast<int64_t>(drained[r].size());
      carry_[r].insert(carry_[r].begin(), std::make_move_iterator(drained[r].begin()),
                       std::make_move_iterator(drained[r].end()));
    }
    if (finished_) queues_.Reopen();  // the new producer delivers the carry, then closes them again
    pause_requested_.store(false, std::memory_order_release);
    std::lock_guard<std::mutex> lock(shutdown_mutex_);
    if (!shut_down_) scope_.Spawn(Produce(this));
  }

  absl::Status RestoreFrom(distribute::DistributedCheckpoint<B> saved) {
    if (!config_.status.ok()) return config_.status;
    const distribute::DistributedTopology now = Topology();
    const bool same = saved.topology == now;
    if (!same) {
      if (saved.topology.mode != now.mode) {
        return absl::FailedPreconditionError(
            "DistributedDataset::RestoreIterator: the state was saved from a distribution made by the other "
            "of "
            "DistributeDataset and DistributeDatasetsFromFunction");
      }
      if (saved.topology.num_workers != 1 || now.num_workers != 1 || !saved.pending.empty()) {
        return absl::FailedPreconditionError(
            absl::StrCat("DistributedDataset::RestoreIterator: the state was saved on ",
                         saved.topology.DebugString(), ", this distribution has ", now.DebugString(),
                         "; a state restores on another number of replicas only with one worker"));
      }
    }
    absl::StatusOr<CheckpointReader> reader = CheckpointReader::Parse(saved.input, node_);
    if (!reader.ok()) return reader.status();
    if (absl::Status s = reader->RestoreRecords(context_->state.get()); !s.ok()) return s;
    absl::StatusOr<std::unique_ptr<Stream<B>>> stream =
        node_->RestoreStream(context_, *reader, std::string(kRootNodePath));
    if (!stream.ok()) return stream.status();
    input_.emplace(std::move(*stream), context_, node_);
    for (int64_t& pushed : pushed_) pushed = saved.consumed_steps;
    // Compact checkpoints: where the input stands is known when no saved step or batch comes before it.
    if (saved.steps.empty() && saved.pending.empty()) {
      MarkInputNow();
      RecordStepPosition(saved.consumed_steps);
    }
    if (same) {
      for (std::vector<Item>& step : saved.steps) {
        for (size_t r = 0; r < step.size(); ++r) carry_[r].push_back(std::move(step[r]));
      }
      if (!saved.real_pieces.empty())
        fillers_in_last_step_ = now.replicas_per_worker - saved.real_pieces.back();
      agreement_step_ = saved.agreement_step;
      finished_ = saved.finished;
      if (saved.batch) batch_ = std::move(saved.batch);
      for (auto& [error, ranges] : saved.pending)
        pending_.push_back(Step{std::move(error), std::move(ranges)});
      return absl::OkStatus();
    }
    // Another number of replicas: the steps not consumed become the input again, ahead of the restored
    // input, and are split by this distribution's rule. A rebatched step's pieces tile its input batch in
    // order; a from-function step's pieces are consecutive elements.
    agreement_step_ = saved.consumed_steps;
    for (size_t i = 0; i < saved.steps.size(); ++i) {
      std::vector<Item>& step = saved.steps[i];
      const auto real = static_cast<size_t>(saved.real_pieces[i]);
      if (config_.mode == DistributeMode::kFromFunction) {
        for (size_t r = 0; r < real; ++r) {
          if (step[r].ok()) {
            carry_input_.push_back(std::optional<B>(std::move(*step[r])));
          } else {
            carry_input_.push_back(step[r].status());
          }
        }
        continue;
      }
      if (!step.front().ok()) {
        carry_input_.push_back(step.front().status());
        continue;
      }
      if constexpr (IsBatchable<B>) {
        std::vector<B> pieces;
        for (size_t r = 0; r < real; ++r) {
          if (!step[r].ok())
            return absl::DataLossError("distributed checkpoint state: a step mixes data and errors");
          pieces.push_back(std::move(*step[r]));
        }
        absl::StatusOr<B> batch = BatchTraits<B>::Concat(std::move(pieces));
        if (!batch.ok()) return batch.status();
        carry_input_.push_back(std::optional<B>(std::move(*batch)));
      }
    }
    return absl::OkStatus();
  }

  const DistributeConfig config_;
  IteratorContextPtr context_;
  ThreadPool* const pool_ = context_->pool;
  distribute::ReplicaQueues<Item> queues_;
  const NodePtr<B> node_;
  const uint64_t first_pass_;
  std::optional<Iterator<B>> input_;

  // Producer-only state.
  std::deque<Step> pending_;
  std::optional<B> batch_;  // the input batch pending_ cuts
  std::optional<B> empty_;  // an empty batch of the right type and inner shape
  bool input_done_ = false;
  bool sampled_ = false;
  int64_t epoch_ = 0;
  bool agreed_end_ = false;  // read by Shutdown after the join
  // Producer state that a save reads and changes while the producer is stopped (after the join).
  std::vector<std::deque<Item>> carry_;  // per replica: pieces to deliver before new steps
  std::vector<int64_t> pushed_;          // per replica: pieces delivered (from the saved step on a restore)
  int64_t agreement_step_ = 0;           // steps made from the input: the next step the workers agree on
  int64_t fillers_in_last_step_ = 0;     // empty pieces the last step made was padded with
  bool finished_ = false;                // the producer delivered its last step and closed the queues
  // Restored on another replica count: input elements (or errors) before the restored input's own.
  std::deque<typename Iterator<B>::Result> carry_input_;
  // As Dataset::MakeIterator, which refuses the others: a pipeline every op of which keeps a compact
  // state and none of whose functions is declared Stateful (a mark holds no function state).
  const bool compact_ = config_.iterator_options.compact_checkpoints && config_.status.ok() &&
                        CheckCompactCheckpoints(*node_, config_.iterator_options).ok();
  StreamMark input_mark_;  // the input's mark after the last element the producer took
  bool input_mark_known_ = false;
  std::deque<std::optional<StreamMark>> step_marks_;  // positions before steps [base, base + size)
  int64_t step_marks_base_ = 0;
  std::atomic<bool> pause_requested_{false};
  std::atomic<bool> saving_{false};

  std::atomic<int> access_{kUnclaimed};
  std::once_flag started_;
  std::mutex shutdown_mutex_;
  bool shut_down_ = false;

  std::mutex spec_mutex_;
  std::condition_variable spec_cv_;
  std::optional<B> sample_;  // guarded by spec_mutex_
  bool spec_final_ = false;  // guarded by spec_mutex_

  AsyncScope scope_;  // last: joined explicitly in Shutdown, before any member it uses goes
};

}  // namespace detail

// Local replica i's view of a DistributedIterator: its own queue, its own pace. Cheap to copy; copies
// share the queue (use one copy at a time per replica).
template <class B>
class ReplicaIterator {
  using State = detail::DistributedState<B>;
  using Item = typename State::Item;

 public:
  using Result = absl::StatusOr<std::optional<B>>;

  ReplicaIterator(std::shared_ptr<State> state, int replica) : state_(std::move(state)), replica_(replica) {}

  // `co_await replica.Next()` -> this replica's piece of the next step, std::nullopt at the end.
  class [[nodiscard]] NextAwaiter {
   public:
    bool await_ready() const noexcept { return false; }
    template <class Promise>
    bool await_suspend(std::coroutine_handle<Promise> awaiting) {
      if (!claim_.ok()) return false;
      return pop_.await_suspend(awaiting);
    }
    Result await_resume() {
      if (!claim_.ok()) return claim_;
      return State::ToResult(pop_.await_resume());
    }

   private:
    friend class ReplicaIterator;
    NextAwaiter(std::shared_ptr<State> state, int replica, absl::Status claim)
        : state_(std::move(state)), claim_(std::move(claim)), pop_(state_->queues()[replica].Pop()) {}

    std::shared_ptr<State> state_;  // keeps the queue alive while this replica waits
    absl::Status claim_;
    typename distribute::ReplicaQueue<Item>::PopAwaiter pop_;
  };

  NextAwaiter Next() {
    absl::Status claim = state_->Claim(State::kPerReplica);
    if (claim.ok()) state_->Start();
    return NextAwaiter(state_, replica_, std::move(claim));
  }

  // For plain threads (never from a coroutine on the iterator's pool).
  Result NextBlocking() {
    std::shared_ptr<State> state = state_;  // the iterator may be destroyed while we wait
    if (absl::Status claim = state->Claim(State::kPerReplica); !claim.ok()) return claim;
    state->Start();
    return State::ToResult(state->queues()[replica_].PopBlocking());
  }

  int replica() const { return replica_; }
  // Pieces buffered for this replica right now (a snapshot).
  size_t buffered() const { return state_->queues()[replica_].size(); }

 private:
  std::shared_ptr<State> state_;
  int replica_;
};

template <class B>
class DistributedIterator {
  using State = detail::DistributedState<B>;

 public:
  using Result = absl::StatusOr<std::optional<PerReplica<B>>>;

  DistributedIterator(DistributedIterator&&) noexcept = default;
  DistributedIterator& operator=(DistributedIterator&& other) noexcept {
    if (this != &other) {
      if (state_) state_->Shutdown();
      state_ = std::move(other.state_);
      replicas_ = std::move(other.replicas_);
      status_ = std::move(other.status_);
    }
    return *this;
  }
  ~DistributedIterator() {
    if (state_) state_->Shutdown();
  }

  // `co_await it.Next()`: every local replica's piece of the next step; std::nullopt at the end.
  Task<Result> Next() { return NextStep(state_); }

  Result NextBlocking() {
    if (absl::Status claim = state_->Claim(State::kWholeStep); !claim.ok()) return claim;
    state_->Start();
    std::vector<B> pieces;
    absl::Status error;
    for (int r = 0; r < num_local_replicas(); ++r) {
      absl::StatusOr<std::optional<B>> piece = State::ToResult(state_->queues()[r].PopBlocking());
      if (!Collect(std::move(piece), &pieces, &error)) return std::optional<PerReplica<B>>();
    }
    if (!error.ok()) return error;
    return std::optional<PerReplica<B>>(PerReplica<B>(std::move(pieces)));
  }

  // The next step, or std::nullopt at the end and on an error (then status() says which). Blocking.
  std::optional<PerReplica<B>> GetNextAsOptional() {
    Result next = NextBlocking();
    if (!next.ok()) {
      status_ = next.status();
      return std::nullopt;
    }
    return std::move(*next);
  }
  // The error the last GetNextAsOptional() swallowed (OK if none).
  const absl::Status& status() const { return status_; }

  // Local replica i's iterator (0 <= i < num_local_replicas()); copy it to hand it to a replica thread.
  ReplicaIterator<B>& Replica(int local_replica) { return replicas_[static_cast<size_t>(local_replica)]; }

  int num_local_replicas() const { return state_->config().replicas_per_worker; }

  // Per-replica dtypes and shapes. Blocks until the pipeline produced its first step (or ended); no
  // components when that step is an error.
  sluice::ElementSpec ElementSpec() { return state_->GetElementSpec(); }

  // Checkpoint (docs/checkpoint.md, "Distributed iterators"): `co_await it.Save()` gives versioned bytes
  // from which DistributedDataset::RestoreIterator makes an iterator that continues at the step after
  // the last one consumed; steps already buffered for the replicas come out again there, and this
  // iterator goes on as if nothing happened. The batch type needs an ElementCodec. Call it between steps:
  // in per-replica use, no replica may be inside Next, and every replica must have taken the same number
  // of steps (FailedPrecondition listing their steps otherwise). SaveBlocking() is for plain threads.
  Task<absl::StatusOr<std::string>> Save() { return State::Save(state_); }
  absl::StatusOr<std::string> SaveBlocking() { return SyncWait(Save()); }
  // Save() written to `path` atomically (temporary file, fsync, rename).
  Task<absl::Status> SaveToFile(std::string path) { return SaveStateToFile(state_, std::move(path)); }
  absl::Status SaveToFileBlocking(std::string path) { return SyncWait(SaveToFile(std::move(path))); }

  // Range-for over the remaining steps (blocking); errors are elements.
  class InputIterator {
   public:
    using value_type = absl::StatusOr<PerReplica<B>>;
    using difference_type = std::ptrdiff_t;
    InputIterator() = default;
    explicit InputIterator(DistributedIterator* it) : it_(it) { Advance(); }
    value_type& operator*() { return *current_; }
    InputIterator& operator++() {
      Advance();
      return *this;
    }
    void operator++(int) { Advance(); }
    bool operator==(std::default_sentinel_t) const { return !current_.has_value(); }

   private:
    void Advance() {
      Result next = it_->NextBlocking();
      if (!next.ok()) {
        current_.emplace(std::move(next).status());
      } else if (next->has_value()) {
        current_.emplace(std::move(**next));
      } else {
        current_.reset();
      }
    }
    DistributedIterator* it_ = nullptr;
    std::optional<value_type> current_;
  };
  InputIterator begin() { return InputIterator(this); }
  std::default_sentinel_t end() { return {}; }

 private:
  friend class DistributedDataset<B>;

  explicit DistributedIterator(std::shared_ptr<State> state) : state_(std::move(state)) {
    for (int r = 0; r < state_->config().replicas_per_worker; ++r) replicas_.emplace_back(state_, r);
  }

  // False at the end of the data (or when the iterator was shut down mid-step).
  static bool Collect(absl::StatusOr<std::optional<B>> piece, std::vector<B>* pieces, absl::Status* error) {
    if (!piece.ok()) {
      if (error->ok()) *error = piece.status();
      return true;  // keep popping: every replica's queue holds this step's error
    }
    if (!piece->has_value()) return false;
    pieces->push_back(std::move(**piece));
    return true;
  }

  static Task<absl::Status> SaveStateToFile(std::shared_ptr<State> state, std::string path) {
    absl::StatusOr<std::string> bytes = co_await State::Save(std::move(state));
    if (!bytes.ok()) co_return bytes.status();
    co_return WriteFileAtomically(path, *bytes);
  }

  static Task<Result> NextStep(std::shared_ptr<State> state) {
    if (absl::Status claim = state->Claim(State::kWholeStep); !claim.ok()) co_return claim;
    state->Start();
    std::vector<B> pieces;
    absl::Status error;
    for (int r = 0; r < state->config().replicas_per_worker; ++r) {
      absl::StatusOr<std::optional<typename State::Item>> popped = co_await state->queues()[r].Pop();
      if (!popped.ok()) co_return std::move(popped).status();  // cancelled: nothing of this step was lost
      if (!Collect(State::ToResult(std::move(popped)), &pieces, &error)) co_return std::optional<PerReplica<B>>();
    }
    if (!error.ok()) co_return error;
    co_return std::optional<PerReplica<B>>(PerReplica<B>(std::move(pieces)));
  }

  std::shared_ptr<State> state_;
  std::vector<ReplicaIterator<B>> replicas_;
  absl::Status status_;
};

// A dataset distributed over a strategy's replicas. Cheap to copy; every MakeIterator() starts a new pass
// (epoch) with its own producer. Epochs are counted: the k-th MakeIterator (over any copy) starts the
// pipeline's ops at pass k (IteratorState's first_pass, sluice/ops/iterator_state.h), so a seeded
// reshuffling Shuffle or ListFiles gives epoch k the order a Repeat would give its k-th epoch, and a
// training loop that makes one iterator per epoch sees a new order each epoch. Iterators running at once
// still have their own state: none perturbs another.
template <class B>
class DistributedDataset {
 public:
  DistributedDataset(NodePtr<B> node, detail::DistributeConfig config)
      : node_(std::move(node)), config_(std::make_shared<const detail::DistributeConfig>(std::move(config))) {}

  DistributedIterator<B> MakeIterator() const {
    const uint64_t epoch = epochs_->fetch_add(1, std::memory_order_relaxed);
    return DistributedIterator<B>(std::make_shared<detail::DistributedState<B>>(node_, *config_, epoch));
  }

  // An iterator that continues where a saved one stood (DistributedIterator::Save): at the step after the
  // last one consumed, with the steps that were buffered for the replicas first. The distribution must
  // be the same (workers, worker index, replicas) or, with one worker, may have another number of
  // replicas: the saved global batches are then split by this distribution's rule (from a function, the
  // saved elements are dealt out again in order). The pipeline must be the one saved (FailedPrecondition
  // naming the first differing op); corrupt bytes are DataLoss. The next MakeIterator() starts the epoch
  // after the restored one.
  absl::StatusOr<DistributedIterator<B>> RestoreIterator(std::string_view state) const {
    static_assert(HasElementCodec<B>,
                  "DistributedDataset::RestoreIterator: the batch type needs an ElementCodec");
    absl::StatusOr<distribute::DistributedCheckpoint<B>> saved =
        distribute::DecodeDistributedCheckpoint<B>(state);
    if (!saved.ok()) return saved.status();
    const uint64_t next_epoch = saved->first_pass + 1;
    absl::StatusOr<std::shared_ptr<detail::DistributedState<B>>> restored =
        detail::DistributedState<B>::Restore(node_, *config_, std::move(*saved));
    if (!restored.ok()) return restored.status();
    uint64_t epochs = epochs_->load(std::memory_order_relaxed);
    while (epochs < next_epoch &&
           !epochs_->compare_exchange_weak(epochs, next_epoch, std::memory_order_relaxed)) {
    }
    return DistributedIterator<B>(std::move(*restored));
  }
  absl::StatusOr<DistributedIterator<B>> RestoreIteratorFromFile(const std::string& path) const {
    absl::StatusOr<std::string> state = ReadCheckpointFile(path);
    if (!state.ok()) return state.status();
    return RestoreIterator(*state);
  }

  // Global steps an iterator of this worker yields: the input's batches (one step each; with OFF or FILE
  // over several workers each batch feeds num_workers steps), or, from a function, its elements divided
  // by the local replicas, rounded up. kInfiniteCardinality / kUnknownCardinality pass through. With a
  // WorkerAgreement the workers' longest run counts, which one worker cannot know: that is the local figure.
  int64_t Cardinality() const {
    if (!config_->status.ok()) return 1;
    int64_t n = node_->cardinality();
    if (n < 0) return n;
    // FILE: this worker reads a share of the files, which the input's cardinality does not know.
    if (config_->applied_policy == AutoShardPolicy::kFile) return kUnknownCardinality;
    if (config_->mode == detail::DistributeMode::kFromFunction) {
      return (n + config_->replicas_per_worker - 1) / config_->replicas_per_worker;
    }
    return n * (config_->plan ? config_->plan->steps_per_input_batch() : 1);
  }

  // Runs a throwaway iterator up to its first element: costs a pipeline start.
  // (without the worker agreement: it is no epoch the other workers take part in).
  sluice::ElementSpec element_spec() const {
    detail::DistributeConfig alone = *config_;
    alone.agreement = nullptr;
    DistributedIterator<B> it(std::make_shared<detail::DistributedState<B>>(node_, std::move(alone), 0));
    return it.ElementSpec();
  }

  // The auto-shard policy in effect (kOff for one worker), and a line describing the distribution.
  AutoShardPolicy applied_shard_policy() const { return config_->applied_policy; }
  std::string stats() const {
    const detail::DistributeConfig& c = *config_;
    std::string out = absl::StrCat("workers=", c.num_workers, " worker_index=", c.worker_index,
                                   " replicas_per_worker=", c.replicas_per_worker, " auto_shard_policy=",
                                   AutoShardPolicyName(c.requested_policy), " applied=",
                                   AutoShardPolicyName(c.applied_policy));
    if (!c.shard_reason.empty()) absl::StrAppend(&out, " (", c.shard_reason, ")");
    if (!c.file_sources.empty()) {
      absl::StrAppend(&out, " (");
      for (size_t i = 0; i < c.file_sources.size(); ++i) {
        const distribute::FileShardTarget& source = c.file_sources[i];
        absl::StrAppend(&out, i ? ", " : "", source.op, c.file_sources.size() > 1 ? " at " + source.path : "",
                        ": ", source.num_files, " files");
      }
      absl::StrAppend(&out, ")");
    }
    if (c.mode == detail::DistributeMode::kFromFunction) {
      absl::StrAppend(&out, " input=from_function");
    } else if (c.static_batch) {
      absl::StrAppend(&out, " rebatch=static global_batch=", *c.static_batch);
    } else {
      absl::StrAppend(&out, " rebatch=dynamic");
    }
    absl::StrAppend(&out, " prefetch_per_replica=", c.capacity);
    if (!c.status.ok()) absl::StrAppend(&out, " error=", c.status.ToString());
    return out;
  }
  // OK, or the argument error every iterator yields as its one step.
  const absl::Status& status() const { return config_->status; }
  const NodePtr<B>& node() const { return node_; }

 private:
  NodePtr<B> node_;
  std::shared_ptr<const detail::DistributeConfig> config_;
  std::shared_ptr<std::atomic<uint64_t>> epochs_ = std::make_shared<std::atomic<uint64_t>>(0);  // iterators made
};

}  // namespace sluice

#endif  // SLUICE_DISTRIBUTE_DISTRIBUTED_ITERATOR_H_
