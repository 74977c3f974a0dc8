#include "sluice/distribute/auto_shard.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sluice/engine/thread_pool.h"

namespace sluice {

// One worker's arrival at round (epoch, step). Arrival happens once, in the first TryCompleteLocked (the
// wait machinery calls it again after registering the stop callback); later calls only look at whether
// the round has completed meanwhile.
class InProcessWorkerAgreement::Arrive final : public detail::WaitOperation<Arrive> {
  using Base = detail::WaitOperation<Arrive>;

 public:
  Arrive(InProcessWorkerAgreement* owner, int worker, int64_t epoch, int64_t step, bool mine)
      : Base(&owner->mutex_, owner->executor_),
        owner_(owner),
        worker_(worker),
        key_(epoch, step),
        mine_(mine) {}

  absl::StatusOr<bool> await_resume() {
    if (state() == detail::Waiter::State::kCancelled) {
      // This worker leaves a round the others cannot complete without it.
      detail::WakeList wake;
      std::lock_guard<std::mutex> lock(owner_->mutex_);
      owner_->AbandonLocked(worker_, key_.first, wake);
      return absl::CancelledError(absl::StrCat("InProcessWorkerAgreement: worker ", worker_,
                                               " stopped while waiting at step ", key_.second));
    }
    return result_;
  }

 private:
  friend Base;
  friend class InProcessWorkerAgreement;

  bool TryCompleteLocked(detail::WakeList& wake) {
    InProcessWorkerAgreement& a = *owner_;
    if (auto gone = a.abandoned_.find(key_.first); gone != a.abandoned_.end()) {
      result_ = gone->second;
      return true;
    }
    auto it = a.rounds_.find(key_);
    if (!arrived_) {
      if (it == a.rounds_.end()) {
        it = a.rounds_.try_emplace(key_).first;
        it->second.arrived.assign(static_cast<size_t>(a.num_workers_), false);
      }
      Round& round = it->second;
      if (round.arrived[static_cast<size_t>(worker_)]) {
        result_ = absl::FailedPreconditionError(absl::StrCat("InProcessWorkerAgreement: worker ", worker_,
                                                             " arrived twice at step ", key_.second));
        return true;
      }
      arrived_ = true;
      round.arrived[static_cast<size_t>(worker_)] = true;
      round.any = round.any || mine_;
      if (++round.arrivals == a.num_workers_) {
        round.done = true;
        ++a.completed_;
        while (detail::Waiter* w = round.waiters.PopFront()) {
          static_cast<Arrive*>(w)->result_ = round.any;
          ++round.collected;
          wake.Add(w);
        }
      }
    }
    if (it == a.rounds_.end() || !it->second.done) return false;
    result_ = it->second.any;
    if (++it->second.collected == a.num_workers_) a.rounds_.erase(it);
    return true;
  }
  detail::WaiterList& WaitListLocked() { return owner_->rounds_[key_].waiters; }

  InProcessWorkerAgreement* owner_;
  int worker_;
  std::pair<int64_t, int64_t> key_;
  bool mine_;
  bool arrived_ = false;
  absl::StatusOr<bool> result_ = false;
};

InProcessWorkerAgreement::InProcessWorkerAgreement(int num_workers, Executor* executor)
    : num_workers_(num_workers < 1 ? 1 : num_workers),
      executor_(executor != nullptr ? executor : &ThreadPool::Default()),
      epochs_(static_cast<size_t>(num_workers_), 0) {}

int64_t InProcessWorkerAgreement::BeginEpoch(int worker) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (worker < 0 || worker >= num_workers_) return -1;  // AnyWorkerHasData reports the bad worker
  return epochs_[static_cast<size_t>(worker)]++;
}

int64_t InProcessWorkerAgreement::rounds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_;
}

int InProcessWorkerAgreement::waiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int n = 0;
  for (const auto& [key, round] : rounds_) {
    if (!round.done) n += round.arrivals;
  }
  return n;
}

void InProcessWorkerAgreement::Abandon(int worker, int64_t epoch) {
  detail::WakeList wake;  // before the lock: resumes after the unlock
  std::lock_guard<std::mutex> lock(mutex_);
  AbandonLocked(worker, epoch, wake);
}

void InProcessWorkerAgreement::AbandonLocked(int worker, int64_t epoch, detail::WakeList& wake) {
  if (abandoned_.count(epoch) != 0) return;
  absl::Status cause = absl::CancelledError(
      absl::StrCat("InProcessWorkerAgreement: worker ", worker, " left epoch ", epoch, " before its end"));
  abandoned_.emplace(epoch, cause);
  for (auto it = rounds_.lower_bound({epoch, INT64_MIN}); it != rounds_.end() && it->first.first == epoch;) {
    while (detail::Waiter* w = it->second.waiters.PopFront()) {
      static_cast<Arrive*>(w)->result_ = cause;
      wake.Add(w);
    }
    it = rounds_.erase(it);
  }
}

Task<absl::StatusOr<bool>> InProcessWorkerAgreement::AnyWorkerHasData(int worker, int64_t epoch, int64_t step,
                                                                      bool mine) {
  if (worker < 0 || worker >= num_workers_) {
    co_return absl::InvalidArgumentError(
        absl::StrCat("InProcessWorkerAgreement: worker ", worker, " outside [0, ", num_workers_, ")"));
  }
  Arrive arrive(this, worker, epoch, step, mine);
  absl::StatusOr<bool> any = co_await arrive;
  co_return any;
}

}  // namespace sluice
