#include "sluice/auto_shard.h"

#include <string>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "sluice/ops/file_sources.h"
#include "sluice/thread_pool.h"

namespace sluice {

const char* AutoShardPolicyName(AutoShardPolicy policy) {
  switch (policy) {
    case AutoShardPolicy::kOff:
      return "OFF";
    case AutoShardPolicy::kFile:
      return "FILE";
    case AutoShardPolicy::kData:
      return "DATA";
    case AutoShardPolicy::kAuto:
      return "AUTO";
  }
  return "?";
}

// One worker's arrival at the current round. Arrival happens once, in the first TryCompleteLocked (the
// wait machinery may call it again after registering the stop callback); later calls only look at
// whether the round it joined has completed.
class InProcessWorkerAgreement::Arrive final : public detail::WaitOperation<Arrive> {
  using Base = detail::WaitOperation<Arrive>;

 public:
  Arrive(InProcessWorkerAgreement* owner, int worker, int64_t step, bool mine)
      : Base(&owner->mutex_, owner->executor_), owner_(owner), worker_(worker), step_(step), mine_(mine) {}

  absl::StatusOr<bool> await_resume() {
    if (state() == detail::Waiter::State::kCancelled) {
      // This worker counted itself into a round it now leaves: nobody can complete that round any more.
      detail::WakeList wake;
      std::lock_guard<std::mutex> lock(owner_->mutex_);
      absl::Status cause = absl::CancelledError(absl::StrCat("InProcessWorkerAgreement: worker ", worker_,
                                                             " stopped while waiting at step ", step_));
      if (arrived_ && owner_->aborted_.ok()) owner_->AbortLocked(cause, wake);
      return cause;
    }
    return result_;
  }

 private:
  friend Base;
  friend class InProcessWorkerAgreement;

  bool TryCompleteLocked(detail::WakeList& wake) {
    InProcessWorkerAgreement& a = *owner_;
    if (!a.aborted_.ok()) {
      result_ = a.aborted_;
      return true;
    }
    if (!arrived_) {
      if (a.arrived_[static_cast<size_t>(worker_)]) {
        result_ = absl::FailedPreconditionError(absl::StrCat(
            "InProcessWorkerAgreement: worker ", worker_, " called again before its step ", step_, " completed"));
        return true;
      }
      arrived_ = true;
      round_ = a.round_;
      a.arrived_[static_cast<size_t>(worker_)] = true;
      a.any_ = a.any_ || mine_;
      if (++a.arrivals_ == a.num_workers_) {
        a.last_result_ = a.any_;
        ++a.round_;
        a.arrivals_ = 0;
        a.any_ = false;
        a.arrived_.assign(a.arrived_.size(), false);
        while (detail::Waiter* w = a.waiters_.PopFront()) {
          static_cast<Arrive*>(w)->result_ = a.last_result_;
          wake.Add(w);
        }
      }
    }
    if (a.round_ > round_) {
      result_ = a.last_result_;
      return true;
    }
    return false;
  }
  detail::WaiterList& WaitListLocked() { return owner_->waiters_; }

  InProcessWorkerAgreement* owner_;
  int worker_;
  int64_t step_;
  bool mine_;
  bool arrived_ = false;
  int64_t round_ = 0;
  absl::StatusOr<bool> result_ = false;
};

InProcessWorkerAgreement::InProcessWorkerAgreement(int num_workers, Executor* executor)
    : num_workers_(num_workers < 1 ? 1 : num_workers),
      executor_(executor != nullptr ? executor : &ThreadPool::Default()),
      arrived_(static_cast<size_t>(num_workers_), false) {}

int64_t InProcessWorkerAgreement::rounds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return round_;
}

void InProcessWorkerAgreement::AbortLocked(absl::Status cause, detail::WakeList& wake) {
  aborted_ = std::move(cause);
  while (detail::Waiter* w = waiters_.PopFront()) {
    static_cast<Arrive*>(w)->result_ = aborted_;
    wake.Add(w);
  }
}

Task<absl::StatusOr<bool>> InProcessWorkerAgreement::AnyWorkerHasData(int worker, int64_t step, bool mine) {
  if (worker < 0 || worker >= num_workers_) {
    co_return absl::InvalidArgumentError(
        absl::StrCat("InProcessWorkerAgreement: worker ", worker, " outside [0, ", num_workers_, ")"));
  }
  Arrive arrive(this, worker, step, mine);
  absl::StatusOr<bool> any = co_await arrive;
  co_return any;
}

namespace distribute {
namespace {

bool KeepsBatchSize(std::string_view op) {
  return op == "Prefetch" || op == "Take" || op == "Skip" || op == "Shard" || op == "Repeat" || op == "Shuffle" ||
         op == "Filter" || op == "TakeWhile";
}

template <class V>
std::optional<V> ParamAs(const std::vector<Param>& params, std::string_view name) {
  for (const Param& p : params) {
    if (p.name == name && std::holds_alternative<V>(p.value)) return std::get<V>(p.value);
  }
  return std::nullopt;
}

const OpNode* FindFileSourceFrom(const OpNode& node, int depth) {
  if (dynamic_cast<const ops::FileListSource*>(&node) != nullptr) return &node;
  if (depth > 10000) return nullptr;  // a pathological graph: give up rather than overflow the stack
  for (const std::shared_ptr<const OpNode>& input : node.inputs()) {
    if (input == nullptr) continue;
    if (const OpNode* found = FindFileSourceFrom(*input, depth + 1)) return found;
  }
  return nullptr;
}

}  // namespace

std::optional<int64_t> FindStaticBatchSize(const OpNode& root) {
  const OpNode* node = &root;
  for (int hops = 0; node != nullptr && hops < 10000; ++hops) {
    std::string_view op = node->op_name();
    if (op == "Batch" || op == "PaddedBatch") {
      std::vector<Param> params = node->params();
      std::optional<bool> drop = ParamAs<bool>(params, "drop_remainder");
      std::optional<int64_t> size = ParamAs<int64_t>(params, "batch_size");
      if (drop.value_or(false) && size.has_value() && *size > 0) return size;
      return std::nullopt;
    }
    if (!KeepsBatchSize(op)) return std::nullopt;
    std::vector<std::shared_ptr<const OpNode>> inputs = node->inputs();
    if (inputs.size() != 1) return std::nullopt;
    node = inputs[0].get();
  }
  return std::nullopt;
}

const OpNode* FindFileSource(const OpNode& root) { return FindFileSourceFrom(root, 0); }

absl::StatusOr<ShardDecision> DecideShardPolicy(const OpNode& root, AutoShardPolicy requested, int num_workers) {
  ShardDecision decision;
  if (num_workers <= 1 || requested == AutoShardPolicy::kOff) return decision;
  if (requested == AutoShardPolicy::kData) {
    decision.applied = AutoShardPolicy::kData;
    return decision;
  }
  const OpNode* source = FindFileSource(root);
  if (source == nullptr) {
    if (requested == AutoShardPolicy::kAuto) {
      decision.applied = AutoShardPolicy::kData;
      return decision;
    }
    return absl::InvalidArgumentError(
        "AutoShardPolicy FILE: no file-based source (ListFiles, TFRecord, TextLines) in the dataset; set "
        "auto_shard_policy to DATA to shard by element");
  }
  int64_t num_files = static_cast<int64_t>(dynamic_cast<const ops::FileListSource*>(source)->files().size());
  if (num_files < num_workers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AutoShardPolicy ", AutoShardPolicyName(requested), ": the dataset's ", std::string(source->op_name()), " source has ",
        num_files, " file(s), fewer than the ", num_workers,
        " workers; set auto_shard_policy to DATA, or split the input into at least as many files as workers"));
  }
  decision.applied = AutoShardPolicy::kFile;
  decision.file_source = source;
  decision.num_files = num_files;
  return decision;
}

}  // namespace distribute
}  // namespace sluice
