#include "sluice/ops/autotune.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

#include "sluice/engine/thread_pool.h"

namespace sluice {
namespace {

// What a unit of a tunable costs: a thread, or the bytes of a buffered element.
int64_t Cost(const HillClimber::Sample& s) {
  return s.uses_cpu ? s.parallelism : s.parallelism * s.unit_bytes;
}

// The costliest tunable of the kind (CPU or buffer) that can lose a unit (first on ties); samples.size()
// when there is none.
size_t CostliestAboveOne(const std::vector<HillClimber::Sample>& samples, bool uses_cpu) {
  size_t costliest = samples.size();
  for (size_t i = 0; i < samples.size(); ++i) {
    const HillClimber::Sample& s = samples[i];
    if (s.uses_cpu != uses_cpu || s.parallelism <= 1) continue;
    if (costliest == samples.size() || Cost(s) > Cost(samples[costliest])) costliest = i;
  }
  return costliest;
}

}  // namespace

std::vector<HillClimber::Change> HillClimber::Step(const std::vector<Sample>& samples) {
  if (samples.size() != ops_.size()) {
    ops_.assign(samples.size(), OpState{});
    trial_ = false;
  }
  for (OpState& op : ops_) {
    if (op.cooldown > 0) --op.cooldown;
  }
  std::vector<Change> changes;
  if (trial_) {
    // The period just sampled ran with the raise: keep it only if the op's consumer now waits clearly
    // less (or hardly at all); otherwise the op is not what holds the consumer back, so undo it.
    trial_ = false;
    const Sample& s = samples[trial_index_];
    bool paid = s.wait_fraction < config_.min_wait || s.wait_fraction <= trial_baseline_ * (1 - config_.min_gain);
    if (!paid) {
      changes.push_back(Change{trial_index_, std::max(1, std::min(s.parallelism, trial_previous_))});
      ops_[trial_index_].cooldown = config_.cooldown_periods;
    }
    return changes;
  }
  int cpu_total = 0;
  int64_t ram_total = 0;
  for (const Sample& s : samples) {
    if (s.uses_cpu) {
      cpu_total += s.parallelism;
    } else {
      ram_total += s.parallelism * s.unit_bytes;
    }
  }
  if (cpu_total > config_.cpu_budget) {
    // The budget shrank (a shared pool's share): lower the most parallel CPU tunable by one. No
    // cooldown: nothing rises while the sum is at the budget, and when the share grows back the op
    // should climb again at once.
    const size_t largest = CostliestAboveOne(samples, /*uses_cpu=*/true);
    if (largest != samples.size()) {
      changes.push_back(Change{largest, samples[largest].parallelism - 1});
      return changes;
    }
  }
  const bool ram_limited = config_.ram_budget_bytes > 0;
  if (ram_limited && ram_total > config_.ram_budget_bytes) {
    // Elements grew past the budget: shrink the buffer holding the most bytes by one element.
    const size_t largest = CostliestAboveOne(samples, /*uses_cpu=*/false);
    if (largest != samples.size()) {
      changes.push_back(Change{largest, samples[largest].parallelism - 1});
      ops_[largest].cooldown = config_.cooldown_periods;
      return changes;
    }
  }
  bool found = false;
  size_t best = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const Sample& s = samples[i];
    if (ops_[i].cooldown > 0 || s.parallelism >= s.max_parallelism || s.wait_fraction < config_.min_wait) continue;
    if (s.uses_cpu && cpu_total >= config_.cpu_budget) continue;
    if (!s.uses_cpu && ram_limited && ram_total + s.unit_bytes > config_.ram_budget_bytes) continue;
    if (!found || s.wait_fraction > samples[best].wait_fraction) {
      best = i;
      found = true;
    }
  }
  if (!found) return changes;
  const Sample& chosen = samples[best];
  int raised = chosen.parallelism + 1;
  if (!chosen.uses_cpu) {
    // A buffer doubles (a one-element step rarely changes the wait enough to be judged), as far as the
    // RAM budget allows.
    raised = std::min(chosen.max_parallelism, 2 * chosen.parallelism);
    if (ram_limited && chosen.unit_bytes > 0) {
      const int64_t room = (config_.ram_budget_bytes - ram_total) / chosen.unit_bytes;
      raised = static_cast<int>(std::min<int64_t>(raised, chosen.parallelism + room));
    }
  }
  changes.push_back(Change{best, raised});
  trial_ = true;
  trial_index_ = best;
  trial_previous_ = chosen.parallelism;
  trial_baseline_ = chosen.wait_fraction;
  return changes;
}

Tuner::Tuner(Config config) : config_(config), climber_(config.climber) {
  thread_ = std::thread([this] { Run(); });
}

Tuner::~Tuner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Tuner::Register(Tunable* tunable) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.push_back(Entry{tunable, tunable->consumer_wait_ns()});
}

void Tuner::Unregister(Tunable* tunable) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [tunable](const Entry& e) { return e.tunable == tunable; }),
                 entries_.end());
}

void Tuner::StepForTest(int64_t elapsed_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  StepLocked(elapsed_ns);
}

void Tuner::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  auto last = std::chrono::steady_clock::now();
  while (!stop_) {
    wake_.wait_for(lock, config_.period, [this] { return stop_; });
    if (stop_) break;
    auto now = std::chrono::steady_clock::now();
    int64_t elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(now - last).count();
    last = now;
    if (!entries_.empty()) StepLocked(elapsed);
  }
}

void Tuner::StepLocked(int64_t elapsed_ns) {
  if (elapsed_ns <= 0) return;
  std::vector<HillClimber::Sample> samples;
  samples.reserve(entries_.size());
  for (Entry& e : entries_) {
    int64_t wait = e.tunable->consumer_wait_ns();
    double fraction = static_cast<double>(wait - e.last_wait_ns) / static_cast<double>(elapsed_ns);
    e.last_wait_ns = wait;
    samples.push_back(HillClimber::Sample{e.tunable->parallelism(), e.tunable->max_parallelism(),
                                          std::clamp(fraction, 0.0, 1.0), e.tunable->uses_cpu(),
                                          e.tunable->unit_bytes()});
  }
  if (config_.cpu_share) {
    const int share = std::max(1, config_.cpu_share->load(std::memory_order_relaxed));
    climber_.set_cpu_budget(std::min(config_.climber.cpu_budget, share));
  }
  for (const HillClimber::Change& change : climber_.Step(samples)) {
    entries_[change.index].tunable->SetParallelism(change.parallelism);
  }
}

int CpuBudget(const IteratorContext& context) {
  if (context.options.cpu_budget > 0) return context.options.cpu_budget;
  return context.pool != nullptr ? context.pool->num_threads() : 1;
}

int64_t RamBudget(const IteratorContext& context) {
  if (context.options.ram_budget_bytes > 0) return context.options.ram_budget_bytes;
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return int64_t{1} << 30;
  return static_cast<int64_t>(pages) * page_size / 2;
}

Tuner* TunerFor(const IteratorContext& context) {
  if (!context.options.autotune) return nullptr;
  IteratorContext::TunerSlot& slot = *context.tuner_slot;
  std::lock_guard<std::mutex> lock(slot.mu);
  if (slot.tuner == nullptr) {
    Tuner::Config config;
    config.climber.cpu_budget = CpuBudget(context);
    config.climber.ram_budget_bytes = RamBudget(context);
    config.cpu_share = context.cpu_share;
    slot.tuner = std::make_shared<Tuner>(config);
  }
  return slot.tuner.get();
}

}  // namespace sluice
