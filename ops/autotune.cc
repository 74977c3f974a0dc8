#include "sluice/ops/autotune.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
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
    if (s.uses_cpu != uses_cpu || s.parallelism <= std::max(1, s.min_parallelism)) continue;
    if (costliest == samples.size() || Cost(s) > Cost(samples[costliest])) costliest = i;
  }
  return costliest;
}

// Two rates differ by at most `spread` of the larger (0 and 0 agree).
bool RatesAgree(double a, double b, double spread) { return std::abs(a - b) <= spread * std::max(a, b); }

}  // namespace

// A rate-judged trial may start once nothing changed for two periods and the op runs in a steady phase:
// its last two rates close, and near its peak. A trial judged while a phase changes (an epoch's files
// opening, a shuffle buffer filling, at a fraction of the steady rate) measures the phase, not the
// setting; on the quick start such trials kept one worker where inline runs 2.7x faster.
bool HillClimber::HasBaseline(const OpState& op) const {
  if (stable_periods_ < 2 || op.last_rate <= 0 || (op.fresh && op.age <= config_.warmup_periods))
    return false;
  return RatesAgree(op.last_rate, op.before_rate, config_.steady_spread) &&
         op.last_rate >= config_.steady_share * op.learned.peak_rate;
}

void HillClimber::StartTrial(const Sample& s, size_t index, int to, bool lower) {
  trial_ = true;
  trial_by_rate_ = s.rate >= 0;
  trial_lower_ = lower;
  trial_index_ = index;
  trial_previous_ = s.parallelism;
  trial_to_ = to;
  trial_baseline_ = trial_by_rate_ ? ops_[index].last_rate : s.wait_fraction;
  trial_rates_.clear();
  stable_periods_ = 0;
}

// A rate-judged trial alternates the two settings, a period each: B A B A B A after the last period at A
// (A0). Each B is compared with the A periods around it, B_i / mean(A_i-1, A_i), and the median of
// those ratios decides, so that a phase of the run changing meanwhile (files opening, a shuffle buffer
// filling, the consumer's own work) cancels out instead of passing for the change's effect. A raise
// stays if the median beats 1 + min_gain; a lowering stays unless it is below 1 - min_gain / 2 (fewer
// workers for the same output is a gain). An undo backs off: the same trial is retried after
// cooldown_periods, then twice that, and so on, so a raise that never pays (parallelism on a pipeline
// whose elements cost less than a hand-off) costs a shrinking share of the run. Lowering probes undo a
// raise that stopped paying.
std::vector<HillClimber::Change> HillClimber::JudgeByRate(const std::vector<Sample>& samples) {
  std::vector<Change> changes;
  const Sample& s = samples[trial_index_];
  trial_rates_.push_back(std::max(0.0, s.rate));
  const size_t rounds = static_cast<size_t>(std::max(1, config_.judge_periods));
  // A setting that lost clearly in its first round is undone at once: most probes fail, and the rest of
  // the trial would run half its periods at the worse setting. One that won clearly is kept at once if
  // its two A periods agree (a run speeding up across the trial's start would pass for a gain).
  bool decided_early = false;
  if (trial_rates_.size() == 2) {
    const double a0 = trial_baseline_;
    const double a1 = trial_rates_[1];
    const double a = (a0 + a1) / 2;
    const double ratio = a > 0 ? trial_rates_[0] / a : 1.0;
    const bool a_steady = RatesAgree(a0, a1, config_.steady_spread);
    decided_early = ratio < config_.early_undo_ratio || (a_steady && ratio >= config_.early_keep_ratio);
  }
  if (trial_rates_.size() < 2 * rounds && !decided_early) {
    // Odd entries ran at B, even ones at A: switch for the next period.
    const bool measured_b = trial_rates_.size() % 2 == 1;
    if (trial_joint_) {
      for (size_t k = 0; k < trial_group_.size(); ++k) {
        changes.push_back(Change{trial_group_[k], measured_b ? trial_group_previous_[k] : trial_to_});
      }
    } else {
      changes.push_back(Change{trial_index_, measured_b ? trial_previous_ : trial_to_});
    }
    return changes;
  }
  trial_ = false;
  std::vector<double> ratios;
  for (size_t i = 0; i < trial_rates_.size() / 2; ++i) {
    const double before = i == 0 ? trial_baseline_ : trial_rates_[2 * i - 1];
    const double after = trial_rates_[2 * i + 1];
    const double a = (before + after) / 2;
    ratios.push_back(a > 0 ? trial_rates_[2 * i] / a : (trial_rates_[2 * i] > 0 ? 2.0 : 1.0));
  }
  std::sort(ratios.begin(), ratios.end());
  const double median = ratios[ratios.size() / 2];
  stable_periods_ = 0;
  if (trial_joint_) {
    // Kept inline: no op of the group is raised straight back. Kept at one worker: the ops' own raises
    // (tried or not) start afresh from there. Else the group goes back, and the joint trial backs off.
    const bool paid = trial_lower_ ? median >= 1 - config_.min_gain / 2 : median >= 1 + config_.min_gain;
    if (paid) {
      joint_failures_ = 0;
      joint_cooldown_ = config_.cooldown_periods;
    } else {
      joint_cooldown_ = config_.cooldown_periods << std::min(joint_failures_, config_.max_backoff_shift);
      ++joint_failures_;
    }
    for (size_t k = 0; k < trial_group_.size(); ++k) {
      OpState& member = ops_[trial_group_[k]];
      if (paid && trial_lower_)
        member.learned.raise_cooldown = std::max(member.learned.raise_cooldown, config_.cooldown_periods);
      if (paid && !trial_lower_) {
        member.learned.raise_cooldown = 0;
        member.learned.lower_cooldown = std::max(member.learned.lower_cooldown, config_.probe_periods);
      }
      changes.push_back(
          Change{trial_group_[k], paid ? trial_to_ : trial_group_previous_[k], /*settled=*/true});
    }
    trial_joint_ = false;
    return changes;
  }
  OpState& op = ops_[trial_index_];
  const bool paid = trial_lower_ ? median >= 1 - config_.min_gain / 2 : median >= 1 + config_.min_gain;
  int& failures = trial_lower_ ? op.learned.lower_failures : op.learned.raise_failures;
  int& cooldown = trial_lower_ ? op.learned.lower_cooldown : op.learned.raise_cooldown;
  int& other_cooldown = trial_lower_ ? op.learned.raise_cooldown : op.learned.lower_cooldown;
  int settled = trial_previous_;  // the last period ran at A
  if (paid) {
    settled = trial_to_;
    failures = 0;
    cooldown = 0;  // the same direction may go on at once
    // The pipeline moved: a raise of another op that did not pay before (an inline Interleave's, while
    // the Map it feeds was inline too) may pay now.
    for (size_t j = 0; j < ops_.size(); ++j) {
      if (j != trial_index_) ops_[j].learned.raise_cooldown = 0;
    }
    // A kept raise is probed down again soon (a phase of the run may have favoured it: the probes back
    // off while they cost output); a kept lowering is not raised straight back.
    other_cooldown = trial_lower_ ? std::max(other_cooldown, config_.cooldown_periods)
                                  : config_.probe_periods
                                        << std::min(op.learned.lower_failures, config_.max_backoff_shift);
  } else {
    cooldown = config_.cooldown_periods << std::min(failures, config_.max_backoff_shift);
    ++failures;
  }
  changes.push_back(Change{trial_index_, std::clamp(settled, s.min_parallelism, s.max_parallelism),
                           /*settled=*/true});
  return changes;
}

std::vector<HillClimber::Change> HillClimber::Step(const std::vector<Sample>& samples) {
  if (samples.size() != ops_.size()) {
    // An op with a history (an earlier iterator of its dataset) goes on from it, so that each epoch does
    // not pay the same trials; a new one warms up first.
    ops_.assign(samples.size(), OpState{});
    joint_cooldown_ = 0;
    joint_failures_ = 0;
    for (size_t i = 0; i < samples.size(); ++i) {
      const TuningHistory& h = samples[i].history;
      if (h.parallelism < 0) continue;
      ops_[i].fresh = false;
      ops_[i].learned = h;
      joint_cooldown_ = std::max(joint_cooldown_, h.joint_cooldown);
      joint_failures_ = std::max(joint_failures_, h.joint_failures);
    }
    trial_ = false;
    trial_joint_ = false;
    stable_periods_ = 0;
  }
  ++stable_periods_;
  if (joint_cooldown_ > 0) --joint_cooldown_;
  for (size_t i = 0; i < samples.size(); ++i) {
    OpState& op = ops_[i];
    ++op.age;
    if (op.learned.raise_cooldown > 0) --op.learned.raise_cooldown;
    if (op.learned.lower_cooldown > 0) --op.learned.lower_cooldown;
    if (samples[i].rate >= 0) {
      op.before_rate = op.last_rate;
      op.last_rate = samples[i].rate;
      op.learned.peak_rate = std::max(op.last_rate, op.learned.peak_rate * config_.peak_decay);
    }
  }
  std::vector<Change> changes;
  if (trial_ && trial_by_rate_) return JudgeByRate(samples);
  if (trial_) {
    // The period just sampled ran with the raise: keep it only if the op's consumer now waits clearly
    // less (or hardly at all); otherwise the op is not what holds the consumer back, so undo it.
    trial_ = false;
    const Sample& s = samples[trial_index_];
    bool paid = s.wait_fraction < config_.min_wait || s.wait_fraction <= trial_baseline_ * (1 - config_.min_gain);
    if (!paid) {
      changes.push_back(Change{
          trial_index_, std::max(std::max(1, s.min_parallelism), std::min(s.parallelism, trial_previous_))});
      ops_[trial_index_].learned.raise_cooldown = config_.cooldown_periods;
      stable_periods_ = 0;
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
  const int cpu_limit = config_.cpu_budget + config_.cpu_oversubscription;
  if (cpu_total > cpu_limit) {
    // The budget shrank (a shared pool's share): lower the most parallel CPU tunable by one. No
    // cooldown: nothing rises while the sum is at the limit, and when the share grows back the op
    // should climb again at once.
    const size_t largest = CostliestAboveOne(samples, /*uses_cpu=*/true);
    if (largest != samples.size()) {
      changes.push_back(Change{largest, samples[largest].parallelism - 1});
      stable_periods_ = 0;
      return changes;
    }
  }
  const bool ram_limited = config_.ram_budget_bytes > 0;
  if (ram_limited && ram_total > config_.ram_budget_bytes) {
    // Elements grew past the budget: shrink the buffer holding the most bytes by one element.
    const size_t largest = CostliestAboveOne(samples, /*uses_cpu=*/false);
    if (largest != samples.size()) {
      changes.push_back(Change{largest, samples[largest].parallelism - 1});
      ops_[largest].learned.raise_cooldown = config_.cooldown_periods;
      stable_periods_ = 0;
      return changes;
    }
  }
  // Settings that only pay together are never found by one-op moves, so the inline-capable ops
  // (rate-judged parallel Maps and Interleaves) are also moved as one: all to one worker when all are
  // inline, all inline when two or more have workers. On the quick start both inline ran 2.7x (1, 1)
  // while either alone inline ran 0.7x; on 12 shards into a 2 us Map both with a worker ran ~1.4x
  // inline while either alone ran 0.8-1.1x.
  auto joint_trial = [&](bool up) {
    if (joint_cooldown_ > 0) return false;
    std::vector<size_t> group;
    size_t movable = 0;
    for (size_t i = 0; i < samples.size(); ++i) {
      const Sample& s = samples[i];
      if (s.rate < 0 || !s.uses_cpu || s.min_parallelism > 0) continue;
      if (!HasBaseline(ops_[i])) return false;
      group.push_back(i);
      if (up ? s.parallelism == 0 && s.max_parallelism >= 1 : s.parallelism > 0) ++movable;
    }
    // Up: every op of the group inline; down: two or more of them above.
    if (group.size() < 2 || (up ? movable < group.size() : movable < 2)) return false;
    if (up && cpu_total + static_cast<int>(group.size()) > cpu_limit) return false;
    // Judged by the rate of the group's last op (the one nearest the consumer).
    StartTrial(samples[group.back()], group.back(), up ? 1 : 0, /*lower=*/!up);
    trial_joint_ = true;
    trial_group_ = group;
    trial_group_previous_.clear();
    for (size_t i : group) {
      trial_group_previous_.push_back(samples[i].parallelism);
      changes.push_back(Change{i, trial_to_});
    }
    return true;
  };
  if (joint_trial(/*up=*/true)) return changes;
  bool found = false;
  size_t best = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const Sample& s = samples[i];
    if (ops_[i].learned.raise_cooldown > 0 || s.parallelism >= s.max_parallelism ||
        s.wait_fraction < config_.min_wait)
      continue;
    if (s.rate >= 0 && !HasBaseline(ops_[i])) continue;
    if (s.uses_cpu && cpu_total >= cpu_limit) continue;
    if (!s.uses_cpu && ram_limited && ram_total + s.unit_bytes > config_.ram_budget_bytes) continue;
    if (!found || s.wait_fraction > samples[best].wait_fraction) {
      best = i;
      found = true;
    }
  }
  if (!found) {
    // Nothing to raise: first the whole group inline, then one op one unit down.
    if (joint_trial(/*up=*/false)) return changes;
    // Probe a rate-judged op one unit down, in case fewer units do as well.
    for (size_t i = 0; i < samples.size(); ++i) {
      const Sample& s = samples[i];
      if (s.rate < 0 || !s.uses_cpu || s.parallelism <= s.min_parallelism ||
          ops_[i].learned.lower_cooldown > 0 || !HasBaseline(ops_[i])) {
        continue;
      }
      changes.push_back(Change{i, s.parallelism - 1});
      StartTrial(s, i, s.parallelism - 1, /*lower=*/true);
      return changes;
    }
    return changes;
  }
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
  StartTrial(chosen, best, raised, /*lower=*/false);
  return changes;
}

TuningHistory HillClimber::History(size_t index, int parallelism) const {
  TuningHistory h = index < ops_.size() ? ops_[index].learned : TuningHistory{};
  h.parallelism = trial_ && trial_index_ == index ? trial_previous_ : parallelism;
  if (trial_ && trial_joint_) {
    for (size_t k = 0; k < trial_group_.size(); ++k) {
      if (trial_group_[k] == index) h.parallelism = trial_group_previous_[k];
    }
  }
  h.joint_cooldown = joint_cooldown_;
  h.joint_failures = joint_failures_;
  return h;
}

Tuner::Tuner(Config config)
    : config_(config), trace_(std::getenv("SLUICE_AUTOTUNE_TRACE") != nullptr), climber_(config.climber) {
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
  entries_changed_ = true;
  entries_.push_back(
      Entry{tunable, tunable->consumer_wait_ns(), tunable->output_count(), tunable->remembered()});
}

void Tuner::Unregister(Tunable* tunable) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Entry& e : entries_) {
    if (e.tunable == tunable && e.history.parallelism >= 0) tunable->Remember(e.history);
  }
  entries_changed_ = true;
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [tunable](const Entry& e) { return e.tunable == tunable; }),
                 entries_.end());
}

void Tuner::StepForTest(int64_t elapsed_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  StepLocked(elapsed_ns);
}

void Tuner::SetAllForTest(int parallelism) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Entry& e : entries_) e.tunable->SetParallelism(parallelism);
}

// A trial's first period at the new setting is half a period when the op's rate fills even that with
// kMinProbeElements: a probe that loses clearly (most do, e.g. workers where elements cost less than a
// hand-off) is undone after it at half the cost. A new quick-start pipeline's epoch (~11 periods) makes
// one joint probe at ~0.37x of inline; halving it made such epochs 1.02x as fast. Fewer elements would
// make the rate too coarse to judge.
std::chrono::nanoseconds Tuner::NextPeriod() const {
  constexpr double kMinProbeElements = 256;
  const std::chrono::nanoseconds half = config_.period / 2;
  if (climber_.FirstProbeBaselineRate() * std::chrono::duration<double>(half).count() >= kMinProbeElements) {
    return half;
  }
  return config_.period;
}

void Tuner::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  auto last = std::chrono::steady_clock::now();
  while (!stop_) {
    wake_.wait_for(lock, NextPeriod(), [this] { return stop_; });
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
    double rate = -1;
    if (e.tunable->counts_output()) {
      const int64_t outputs = e.tunable->output_count();
      rate = static_cast<double>(outputs - e.last_outputs) * 1e9 / static_cast<double>(elapsed_ns);
      e.last_outputs = outputs;
    }
    samples.push_back(HillClimber::Sample{
        e.tunable->parallelism(), e.tunable->max_parallelism(), std::clamp(fraction, 0.0, 1.0),
        e.tunable->uses_cpu(), e.tunable->unit_bytes(), e.tunable->min_parallelism(), rate, e.history});
  }
  if (config_.cpu_share) {
    const int share = std::max(1, config_.cpu_share->load(std::memory_order_relaxed));
    climber_.set_cpu_budget(std::min(config_.climber.cpu_budget, share));
  }
  if (entries_changed_) climber_.Reset();
  entries_changed_ = false;
  if (trace_) TracePeriod(samples);
  const std::vector<HillClimber::Change> changes = climber_.Step(samples);
  if (trace_) TraceChanges(changes);
  for (const HillClimber::Change& change : changes) {
    Tunable* tunable = entries_[change.index].tunable;
    if (!change.settled || tunable->parallelism() != change.parallelism)
      tunable->SetParallelism(change.parallelism);
  }
  for (size_t i = 0; i < entries_.size(); ++i) {
    entries_[i].history = climber_.History(i, entries_[i].tunable->parallelism());
  }
  // A finished trial is kept at once (another iterator of the dataset may start meanwhile); every op's
  // history is kept when it unregisters.
  for (const HillClimber::Change& change : changes) {
    if (change.settled) entries_[change.index].tunable->Remember(entries_[change.index].history);
  }
}

// One line per period: each tunable's setting, output rate (elements/s; - when not counted) and wait.
void Tuner::TracePeriod(const std::vector<HillClimber::Sample>& samples) const {
  std::string line = absl::StrCat("sluice autotune ", absl::Hex(reinterpret_cast<uintptr_t>(this)), ":");
  for (const HillClimber::Sample& s : samples) {
    absl::StrAppend(&line, " [", s.parallelism, " ",
                    s.rate < 0 ? std::string("-") : absl::StrCat(static_cast<int64_t>(s.rate)), "/s wait ",
                    absl::SixDigits(s.wait_fraction), "]");
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

void Tuner::TraceChanges(const std::vector<HillClimber::Change>& changes) const {
  for (const HillClimber::Change& c : changes) {
    std::fprintf(stderr, "sluice autotune %s: op %zu -> %d%s\n",
                 absl::StrCat(absl::Hex(reinterpret_cast<uintptr_t>(this))).c_str(), c.index, c.parallelism,
                 c.settled ? " (trial ended)" : "");
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
