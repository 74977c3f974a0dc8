// Autotuning of kAutotune parameters (parallel Map's and parallel Interleave's num_parallel_calls, and
// Prefetch's buffer size): one Tuner per iterator, hill climbing on the consumer's wait. The model is
// described in docs/autotune.md.
//
// Contract:
// - A tunable op (a stream implementing Tunable) registers with its iterator's Tuner (TunerFor(context))
//   when it is made and unregisters in its destructor; after Unregister returns the tuner never touches it.
// - Every `period` the tuner's thread samples each tunable's cumulative consumer wait (the time the op's
//   consumer spent in its WaitReady) and, for ops that count their output, its output rate, and hands the
//   samples to HillClimber::Step, which returns at most one change: raise the op whose consumer waited
//   most (a worker tunable by one, a buffer to twice its size). An op that counts its output (parallel Map
//   and Interleave) is judged by rate over alternating periods of the new and the old setting, and probed
//   one unit down (to 0, inline: sequential on the consumer's thread) when nothing is worth raising; a
//   buffer keeps a raise if its consumer's wait fell by at least `min_gain`. An undone raise is not
//   retried for `cooldown_periods`, doubling per failure. See docs/autotune.md.
// - Budgets: a CPU tunable (parallelism) is raised only while the sum of CPU tunables' units is below the
//   CPU budget (Options::cpu_budget, else the pool's threads) plus HillClimber::Config::cpu_oversubscription
//   (1: ops waiting on I/O or on their input hold idle units). A RAM tunable (a buffer; a unit is one
//   element of about unit_bytes()) is raised only if the sum over RAM tunables of units x unit_bytes stays
//   within the RAM budget (Options::ram_budget_bytes, else half the machine's memory); when growing
//   elements push that sum over the budget, the largest RAM tunable is lowered by one unit per period.
//   Parallel ops' own buffers (2 elements per unit of parallelism) are not counted. An iterator with a
//   share of a pool (IteratorContext::cpu_share) keeps its CPU tunables within min(budget, share) plus
//   the oversubscription, read every period: when the share shrinks below their sum, the most parallel
//   one is lowered by one unit per period.
// - Tuned Maps and Interleaves start inline (0) unless an earlier iterator of their node was tuned. When
//   two or more of them are inline they are first tried all at one worker together, and when two or
//   more run with workers, all inline together: settings that only pay together are never found by
//   one-op moves.
// - Options::autotune = false: kAutotune becomes a fixed default (the CPU budget) and no tuner runs.
// - Threading: Tuner is thread-safe; tunables' SetParallelism must be thread-safe. The tuner thread stops
//   and joins in the destructor (the IteratorContext owns the tuner, so it dies after every stream).
// - HillClimber is a pure state machine (no clocks, no threads), so its decisions are unit-tested with
//   fake samples.
// - SLUICE_AUTOTUNE_TRACE=1 in the environment prints every period's samples and every change to stderr.
//
//   Dataset<int64_t> ds = Range(1 << 20).Map(Expensive, kAutotune);   // the tuner picks the parallelism
//   Iterator<int64_t> it = ds.MakeIterator();
#ifndef SLUICE_OPS_AUTOTUNE_H_
#define SLUICE_OPS_AUTOTUNE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sluice/export.h"
#include "sluice/ops/op_node.h"

namespace sluice {

struct BufferStats {
  int64_t size = 0;
  int64_t capacity = 0;
};

// What the tuner learned about one op: where it left the op and how long each direction stays untried
// (in periods). Kept in the op's dataset node, so that the next iterator of the dataset (the next epoch)
// goes on from there instead of trying the same trials again.
struct TuningHistory {
  int parallelism = -1;  // -1: no iterator of the node was tuned yet
  int raise_cooldown = 0;
  int raise_failures = 0;  // raises in a row that did not pay
  int lower_cooldown = 0;
  int lower_failures = 0;  // lowering probes in a row that cost output
  double peak_rate = 0;    // the op's highest output rate per period, decaying (see HillClimber)
  // The tuner's joint trials (all inline-capable ops inline, or all at one worker, at once; the same in
  // every op of a pipeline).
  int joint_cooldown = 0;
  int joint_failures = 0;
};

// A node's TuningHistory, shared with its iterators' ops (thread-safe).
class TuningMemory {
 public:
  TuningHistory Load() const {
    std::lock_guard<std::mutex> lock(mu_);
    return history_;
  }
  void Store(const TuningHistory& history) {
    std::lock_guard<std::mutex> lock(mu_);
    history_ = history;
  }

 private:
  mutable std::mutex mu_;
  TuningHistory history_;
};

// An op parameter the tuner may change while the op runs.
class Tunable {
 public:
  virtual ~Tunable() = default;
  virtual int parallelism() const = 0;
  virtual int max_parallelism() const = 0;
  virtual void SetParallelism(int n) = 0;  // thread-safe; clamps to [1, max_parallelism()]
  virtual BufferStats buffer_stats() const = 0;
  // 0 for an op that can run inline (sequentially, on its consumer's thread, with no hand-off).
  virtual int min_parallelism() const { return 1; }
  // False for a buffer size, whose units cost memory (about unit_bytes() each) rather than threads.
  virtual bool uses_cpu() const { return true; }
  virtual int64_t unit_bytes() const { return 0; }
  // True when the op counts the elements it returns (CountOutput): its raises are judged by its output
  // rate over several periods, not by its consumer's wait.
  virtual bool counts_output() const { return false; }
  // What the tuner learned so far (after each trial, and when the op unregisters): an op may keep it for
  // the next iterator of its dataset.
  virtual void Remember(const TuningHistory& /*history*/) {}
  // What an earlier iterator's tuner learned about this op when the op was made (parallelism -1: nothing).
  virtual TuningHistory remembered() const { return {}; }
  // Total nanoseconds the op's consumer has waited for it (monotonic; added by the op's WaitReady, and by
  // an op running inline for the time its consumer spent in it).
  int64_t consumer_wait_ns() const { return wait_ns_.load(std::memory_order_relaxed); }
  void AddConsumerWait(int64_t ns) { wait_ns_.fetch_add(ns, std::memory_order_relaxed); }
  int64_t output_count() const { return outputs_.load(std::memory_order_relaxed); }
  // The op's consumer only (one writer): a plain store, no locked instruction per element.
  void CountOutput() {
    outputs_.store(outputs_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

 private:
  std::atomic<int64_t> wait_ns_{0};
  std::atomic<int64_t> outputs_{0};
};

// A Tunable whose dataset node keeps a TuningMemory for it: what the tuner learned goes there, and the
// node's next iterator starts from it. `memory` null (the op is not tuned): nothing is kept.
class RememberingTunable : public Tunable {
 public:
  // `remembered`: what `memory` held when the node made the op (loaded once, with the op's first setting).
  RememberingTunable(std::shared_ptr<TuningMemory> memory, TuningHistory remembered)
      : memory_(std::move(memory)), remembered_(remembered) {}
  void Remember(const TuningHistory& history) final {
    if (memory_ != nullptr) memory_->Store(history);
  }
  TuningHistory remembered() const final { return remembered_; }

 private:
  const std::shared_ptr<TuningMemory> memory_;
  const TuningHistory remembered_;
};

// The decision logic, separate from clocks and threads.
class SLUICE_EXPORT HillClimber {
 public:
  struct Config {
    int cpu_budget = 1;  // the sum of parallelism the tuner may reach, plus:
    // Units the sum of CPU tunables may exceed the budget by. An op waiting on I/O or on its input holds
    // its units idle, so the best rows of two parallel ops often sum above the cores (12 shards into a
    // 2 us Map: interleave 1 + map 2 on 2 pool threads ran 1.2-1.3x 1 + 1); raises past the budget are
    // judged by rate like any other.
    int cpu_oversubscription = 1;
    double min_wait = 0.02;       // below this fraction of a period, an op is not worth raising
    double min_gain = 0.10;       // a raise must cut the op's wait fraction by this (relative) to stay
    int cooldown_periods = 50;    // how long a raise that did not pay is not retried (doubling per
                                  // failure of the same op, up to 2^max_backoff_shift times)
    int max_backoff_shift = 5;
    int64_t ram_budget_bytes = 0; // the sum of RAM tunables' units x unit_bytes; 0: RAM is not limited
    // Rate-judged trials: rounds of one period at the new setting and one at the old (see JudgeByRate).
    int judge_periods = 3;
    // A kept raise is probed one unit down after this many periods (doubling per probe that cost output).
    int probe_periods = 10;
    // A trial whose first B period ran below this share of its A periods ends there, undone; one whose
    // first B ran at least early_keep_ratio times its A periods ends there, kept.
    double early_undo_ratio = 0.7;
    double early_keep_ratio = 1.5;
    // A rate-judged trial starts only in a steady phase of the run: the last two periods' rates within
    // steady_spread of each other, and the last one at least steady_share of the op's peak rate (which
    // decays by peak_decay per period, so that a pipeline that slowed for good is tried again).
    double steady_spread = 0.25;
    double steady_share = 0.5;
    double peak_decay = 0.995;
    // An op with no history (no earlier iterator) starts no rate-judged trial in its first periods: an
    // iterator's start (files opening, buffers filling) runs at a fraction of its steady rate, and the
    // peak that would tell so is not known yet.
    int warmup_periods = 8;
  };
  struct Sample {
    int parallelism = 1;
    int max_parallelism = 1;
    double wait_fraction = 0;  // of the last period, the consumer's wait on this op
    bool uses_cpu = true;      // false: a buffer, whose units cost unit_bytes each
    int64_t unit_bytes = 0;
    int min_parallelism = 1;
    double rate = -1;  // elements the op returned per second in the period; < 0: not counted
    // Where an op new to this climber goes on from (parallelism -1: a fresh start).
    TuningHistory history = {};
  };
  struct Change {
    size_t index = 0;
    int parallelism = 0;
    bool settled = false;  // a rate-judged trial ended here (kept or undone)
  };

  explicit HillClimber(Config config) : config_(config) {}

  // A new CPU budget for the next Steps (a shared pool's share changed).
  void set_cpu_budget(int budget) { config_.cpu_budget = budget; }

  // Samples of the same tunables, in the same order, every period (a new set of tunables resets the
  // state). Returns the changes to apply now (at most one raise, or one undo).
  std::vector<Change> Step(const std::vector<Sample>& samples);

  // The tunables changed (one left and another came): the next Step starts afresh from their histories.
  void Reset() { ops_.clear(); }

  // What the climber knows of op `index` of the last Step, at `parallelism` (its current setting): an op
  // on trial is remembered at the setting the trial started from.
  TuningHistory History(size_t index, int parallelism) const;

  // When the last Step started a rate-judged trial (the next period is the first at the new setting): the
  // op's output rate before it, in elements per second; else 0. The Tuner makes that period half as long
  // where it still holds enough elements to judge, since most probes lose clearly there and end
  // (early_undo_ratio).
  double FirstProbeBaselineRate() const {
    return trial_ && trial_by_rate_ && trial_rates_.empty() ? trial_baseline_ : 0;
  }

 private:
  struct OpState {
    // Cooldowns and failures of both directions, and the peak rate (its parallelism and the joint
    // fields are not used here: the samples and the climber hold those).
    TuningHistory learned;
    double last_rate = 0;    // rate-judged: the op's output rate in the last period
    double before_rate = 0;  // and in the period before
    int age = 0;             // periods since this climber met the op
    bool fresh = true;       // no history: warms up first
  };
  std::vector<Change> JudgeByRate(const std::vector<Sample>& samples);
  bool HasBaseline(const OpState& op) const;
  void StartTrial(const Sample& s, size_t index, int to, bool lower);

  Config config_;
  std::vector<OpState> ops_;
  // Periods since the last change of any op: a rate-judged trial needs two of them (HasBaseline).
  int stable_periods_ = 0;
  // A raise on trial: which op, and its wait (or rate) before the raise.
  bool trial_ = false;
  bool trial_by_rate_ = false;
  bool trial_lower_ = false;
  size_t trial_index_ = 0;
  int trial_previous_ = 1;
  double trial_baseline_ = 0;
  int trial_to_ = 1;                 // the setting on trial (B); trial_previous_ is A
  std::vector<double> trial_rates_;  // rate-judged: the periods since the trial began, B A B A ...
  // A joint trial: every op of trial_group_ at trial_to_ (B) against its setting before (A); judged by the
  // rate of trial_index_, the group's last op.
  bool trial_joint_ = false;
  std::vector<size_t> trial_group_;
  std::vector<int> trial_group_previous_;
  int joint_cooldown_ = 0;
  int joint_failures_ = 0;
};

class SLUICE_EXPORT Tuner {
 public:
  struct Config {
    HillClimber::Config climber;
    std::chrono::milliseconds period{10};
    // IteratorContext::cpu_share: when set, each period's CPU budget is min(climber.cpu_budget, share).
    std::shared_ptr<const std::atomic<int>> cpu_share;
  };
  explicit Tuner(Config config);
  Tuner(const Tuner&) = delete;
  Tuner& operator=(const Tuner&) = delete;
  ~Tuner();

  // Starts sampling `tunable` (which must stay alive until Unregister(tunable) returned).
  void Register(Tunable* tunable);
  void Unregister(Tunable* tunable);

  // Runs one period's decision now, as the thread does (for tests); `elapsed_ns` is the period length.
  void StepForTest(int64_t elapsed_ns);
  // Sets every registered tunable's parallelism, as a change would (for tests).
  void SetAllForTest(int parallelism);

 private:
  void Run();
  std::chrono::nanoseconds NextPeriod() const;  // under mu_
  void StepLocked(int64_t elapsed_ns);
  void TracePeriod(const std::vector<HillClimber::Sample>& samples) const;
  void TraceChanges(const std::vector<HillClimber::Change>& changes) const;

  const Config config_;
  const bool trace_;  // SLUICE_AUTOTUNE_TRACE is set: every period and change goes to stderr
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  struct Entry {
    Tunable* tunable;
    int64_t last_wait_ns;
    int64_t last_outputs;
    TuningHistory history;  // the op's remembered history, then the climber's after each Step
  };
  std::vector<Entry> entries_;
  bool entries_changed_ = false;  // since the last Step
  HillClimber climber_;
  std::thread thread_;
};

// The CPU budget of an iterator: Options::cpu_budget, else its pool's threads.
SLUICE_EXPORT int CpuBudget(const IteratorContext& context);
// The RAM budget of an iterator's tuned buffers: Options::ram_budget_bytes, else half the machine's memory.
SLUICE_EXPORT int64_t RamBudget(const IteratorContext& context);

// The iterator's tuner, made on first use (thread-safe). Null when Options::autotune is false.
SLUICE_EXPORT Tuner* TunerFor(const IteratorContext& context);

// Registers a tunable for its lifetime; declare it after the members the tuner's calls touch.
class TunerRegistration {
 public:
  TunerRegistration() = default;
  TunerRegistration(Tuner* tuner, Tunable* tunable) : tuner_(tuner), tunable_(tunable) {
    if (tuner_ != nullptr) tuner_->Register(tunable_);
  }
  TunerRegistration(const TunerRegistration&) = delete;
  TunerRegistration& operator=(const TunerRegistration&) = delete;
  ~TunerRegistration() { Reset(); }
  void Reset() {
    if (tuner_ != nullptr) tuner_->Unregister(tunable_);
    tuner_ = nullptr;
  }

 private:
  Tuner* tuner_ = nullptr;
  Tunable* tunable_ = nullptr;
};

}  // namespace sluice

#endif  // SLUICE_OPS_AUTOTUNE_H_
