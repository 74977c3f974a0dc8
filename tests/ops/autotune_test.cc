#include "sluice/ops/autotune.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/thread_pool.h"
#include "sluice/ops/dataset.h"

namespace sluice {
namespace autotune_test_file {
namespace {

using Sample = HillClimber::Sample;
using Change = HillClimber::Change;

// Exactly `cpu` units (no oversubscription, see OversubscribesTheCpuBudgetByOneUnit), short cooldowns,
// no warm-up.
HillClimber::Config Budget(int cpu) {
  HillClimber::Config config;
  config.cpu_budget = cpu;
  config.cpu_oversubscription = 0;
  config.cooldown_periods = 3;
  config.warmup_periods = 0;
  return config;
}

TEST(HillClimberTest, RaisesTheOpWhoseConsumerWaitsMost) {
  HillClimber climber(Budget(8));
  std::vector<Change> changes = climber.Step({{1, 4, 0.2}, {1, 4, 0.7}, {1, 4, 0.5}});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].index, 1u);
  EXPECT_EQ(changes[0].parallelism, 2);
}

TEST(HillClimberTest, KeepsARaiseThatPaidAndMovesOn) {
  HillClimber climber(Budget(8));
  ASSERT_EQ(climber.Step({{1, 4, 0.8}, {1, 4, 0.3}}).size(), 1u);
  // The trial period: op 0's wait fell from 0.8 to 0.4 (paid): nothing undone.
  EXPECT_TRUE(climber.Step({{2, 4, 0.4}, {1, 4, 0.3}}).empty());
  // Next period: op 0 still waits most, raise again.
  std::vector<Change> changes = climber.Step({{2, 4, 0.4}, {1, 4, 0.3}});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].index, 0u);
  EXPECT_EQ(changes[0].parallelism, 3);
}

TEST(HillClimberTest, UndoesARaiseThatDidNotPayAndCoolsDown) {
  HillClimber climber(Budget(8));
  ASSERT_EQ(climber.Step({{1, 4, 0.5}, {1, 4, 0.3}}).size(), 1u);
  // Only 4% better: undo.
  std::vector<Change> undo = climber.Step({{2, 4, 0.48}, {1, 4, 0.3}});
  ASSERT_EQ(undo.size(), 1u);
  EXPECT_EQ(undo[0].index, 0u);
  EXPECT_EQ(undo[0].parallelism, 1);
  // While op 0 cools down, the next-worst op gets the trial.
  std::vector<Change> next = climber.Step({{1, 4, 0.5}, {1, 4, 0.3}});
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].index, 1u);
  EXPECT_TRUE(climber.Step({{1, 4, 0.5}, {2, 4, 0.1}}).empty());  // paid
  // Cooldown over (3 periods since the undo): op 0 is tried again.
  std::vector<Change> retry = climber.Step({{1, 4, 0.5}, {2, 4, 0.1}});
  ASSERT_EQ(retry.size(), 1u);
  EXPECT_EQ(retry[0].index, 0u);
}

TEST(HillClimberTest, RespectsBudgetMaximumAndMinimumWait) {
  HillClimber at_budget(Budget(3));
  EXPECT_TRUE(at_budget.Step({{2, 4, 0.9}, {1, 4, 0.9}}).empty());

  HillClimber at_max(Budget(8));
  std::vector<Change> changes = at_max.Step({{4, 4, 0.9}, {1, 4, 0.3}});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].index, 1u);  // op 0 is at its maximum

  HillClimber idle(Budget(8));
  EXPECT_TRUE(idle.Step({{1, 4, 0.01}, {1, 4, 0.0}}).empty());  // gains vanished: nobody waits

  // A raise that brings the wait under min_wait counts as paid even if the relative gain is small.
  HillClimber small(Budget(8));
  ASSERT_EQ(small.Step({{1, 4, 0.021}}).size(), 1u);
  EXPECT_TRUE(small.Step({{2, 4, 0.019}}).empty());
}

// Buffers (uses_cpu false) cost memory, not threads: they grow within the RAM budget, whatever the CPU.
TEST(HillClimberTest, BuffersGrowWithinTheRamBudgetNotTheCpuBudget) {
  HillClimber::Config config = Budget(1);
  config.ram_budget_bytes = 1000;
  HillClimber climber(config);
  // The CPU op is at the CPU budget; the buffer (2 x 300 bytes) may take one more element (900 <= 1000).
  std::vector<Change> changes = climber.Step({{1, 4, 0.9, true, 0}, {2, 64, 0.5, false, 300}});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].index, 1u);
  EXPECT_EQ(changes[0].parallelism, 3);
  EXPECT_TRUE(climber.Step({{1, 4, 0.9, true, 0}, {3, 64, 0.2, false, 300}}).empty());  // paid
  // A fourth element would need 1200 bytes: refused, and nothing else may grow.
  EXPECT_TRUE(climber.Step({{1, 4, 0.9, true, 0}, {3, 64, 0.2, false, 300}}).empty());
}

TEST(HillClimberTest, ElementsGrowingPastTheRamBudgetShrinkTheLargestBuffer) {
  HillClimber::Config config = Budget(4);
  config.ram_budget_bytes = 1000;
  HillClimber climber(config);
  // 4 x 200 + 3 x 100 = 1100 bytes > 1000: the 800-byte buffer loses one element.
  std::vector<Change> changes = climber.Step({{4, 64, 0.0, false, 200}, {3, 64, 0.5, false, 100}});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].index, 0u);
  EXPECT_EQ(changes[0].parallelism, 3);
  // Without a RAM budget (0) buffers are limited only by their maximum.
  HillClimber unlimited(Budget(1));
  changes = unlimited.Step({{40, 64, 0.5, false, 1 << 20}});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].parallelism, 64);  // doubling, capped at the maximum
}

TEST(HillClimberTest, BuffersDoubleAndAnUnpaidDoublingIsUndone) {
  HillClimber::Config config = Budget(1);
  config.ram_budget_bytes = 1 << 20;
  HillClimber climber(config);
  std::vector<Change> changes = climber.Step({{4, 64, 0.5, false, 100}});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].parallelism, 8);
  EXPECT_TRUE(climber.Step({{8, 64, 0.2, false, 100}}).empty());  // paid
  changes = climber.Step({{8, 64, 0.2, false, 100}});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].parallelism, 16);
  changes = climber.Step({{16, 64, 0.19, false, 100}});  // 5% better: undone, back to 8
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].parallelism, 8);
}

TEST(HillClimberTest, ClimbsToTheBudgetOnASteadyBottleneck) {
  // One op whose consumer's wait halves with every worker: it climbs until the budget, then stops.
  HillClimber climber(Budget(4));
  int parallelism = 1;
  for (int period = 0; period < 40; ++period) {
    double wait = 0.9 / parallelism;
    for (const Change& c : climber.Step({{parallelism, 16, wait}})) parallelism = c.parallelism;
  }
  EXPECT_EQ(parallelism, 4);
}

TEST(HillClimberTest, StopsWhereGainsVanish) {
  // The wait stops falling after 2 workers (the input is the bottleneck): it settles on 2.
  HillClimber climber(Budget(8));
  int parallelism = 1;
  for (int period = 0; period < 40; ++period) {
    double wait = parallelism >= 2 ? 0.3 : 0.6;
    for (const Change& c : climber.Step({{parallelism, 8, wait}})) parallelism = c.parallelism;
    EXPECT_LE(parallelism, 3);
  }
  EXPECT_EQ(parallelism, 2);
}

TEST(HillClimberTest, AShrunkCpuBudgetLowersTheMostParallelOpOneUnitAPeriod) {
  HillClimber climber(Budget(8));
  int a = 3;
  int b = 2;
  climber.set_cpu_budget(3);  // a shared pool's share fell from 8 to 3: 5 units are 2 too many
  for (int period = 0; period < 2; ++period) {
    std::vector<Change> changes = climber.Step({{a, 4, 0.5}, {b, 4, 0.5}, {4, 8, 0.9, false, 100}});
    ASSERT_EQ(changes.size(), 1u) << period;
    EXPECT_NE(changes[0].index, 2u) << "a buffer costs no CPU";
    EXPECT_EQ(changes[0].parallelism, (changes[0].index == 0 ? a : b) - 1);
    (changes[0].index == 0 ? a : b) = changes[0].parallelism;
  }
  EXPECT_EQ(a + b, 3);
  EXPECT_EQ(std::max(a, b), 2);
  // Within the budget again: no CPU op rises (the sum is at the budget), the buffer may.
  for (const Change& c : climber.Step({{a, 4, 0.5}, {b, 4, 0.5}, {4, 8, 0.9, false, 100}})) {
    EXPECT_EQ(c.index, 2u);
  }
}

// Rate-judged ops (rate >= 0): a trial alternates the new and the old setting a period each (B A B A B A)
// and keeps the new one only if the median of B / mean(neighbouring A) beats 1 + min_gain.
Sample Rated(int parallelism, int max, double wait, double rate, int min = 0) {
  Sample s{parallelism, max, wait};
  s.min_parallelism = min;
  s.rate = rate;
  return s;
}

// Runs one rate-judged trial of a single op whose output rate at parallelism p is rate(p); returns the
// changes of every period, the last one the settled decision.
template <class RateOf>
std::vector<Change> RunTrial(HillClimber* climber, int* parallelism, int max, RateOf rate) {
  std::vector<Change> all;
  for (int period = 0; period < 7; ++period) {
    for (const Change& c : climber->Step({Rated(*parallelism, max, 0.9, rate(*parallelism))})) {
      all.push_back(c);
      *parallelism = c.parallelism;
    }
    if (!all.empty() && all.back().settled) break;
  }
  return all;
}

TEST(HillClimberTest, ARateJudgedRaiseAlternatesSettingsAndStaysWhenItPays) {
  HillClimber climber(Budget(4));
  int p = 0;
  // Two periods with no change give a baseline; then B (1) A (0) B A B A. One worker gains 30%: more
  // than min_gain, less than early_keep_ratio, so the whole trial runs.
  EXPECT_TRUE(climber.Step({Rated(p, 4, 0.9, 100)}).empty());
  std::vector<Change> trial = RunTrial(&climber, &p, 4, [](int q) { return 100.0 + 30.0 * q; });
  ASSERT_EQ(trial.size(), 7u);
  std::vector<int> settings;
  for (const Change& c : trial) settings.push_back(c.parallelism);
  EXPECT_EQ(settings, (std::vector<int>{1, 0, 1, 0, 1, 0, 1}));
  EXPECT_TRUE(trial.back().settled);
  EXPECT_EQ(p, 1);
}

TEST(HillClimberTest, ARaiseThatCostsOutputIsUndoneAndRetriedLaterAndLater) {
  HillClimber::Config config = Budget(4);
  config.cooldown_periods = 4;
  HillClimber climber(config);
  int p = 0;
  // Inline is 3x faster than one worker (elements cheaper than a hand-off).
  auto rate = [](int q) { return q == 0 ? 300.0 : 100.0; };
  std::vector<int> trial_starts;
  bool in_trial = false;
  for (int period = 0; period < 80; ++period) {
    for (const Change& c : climber.Step({Rated(p, 4, 0.9, rate(p))})) {
      if (!in_trial && c.parallelism == 1) trial_starts.push_back(period);
      in_trial = !c.settled;
      p = c.parallelism;
      if (c.settled) {
        EXPECT_EQ(c.parallelism, 0) << period;
      }
    }
  }
  EXPECT_EQ(p, 0);
  // Retries back off: each gap (cooldown plus the trial's 2 periods and 2 stable ones) at least twice
  // the one before, less those 4.
  ASSERT_GE(trial_starts.size(), 3u);
  for (size_t i = 2; i < trial_starts.size(); ++i) {
    EXPECT_GE(trial_starts[i] - trial_starts[i - 1], 2 * (trial_starts[i - 1] - trial_starts[i - 2]) - 4)
        << i;
  }
}

TEST(HillClimberTest, ATrialThatLosesClearlyInItsFirstRoundEndsThere) {
  HillClimber climber(Budget(4));
  int p = 0;
  EXPECT_TRUE(climber.Step({Rated(p, 4, 0.9, 300)}).empty());
  // One worker gives a third of inline's output: B, A, then undone (2 periods, not 6).
  std::vector<Change> trial = RunTrial(&climber, &p, 4, [](int q) { return q == 0 ? 300.0 : 100.0; });
  ASSERT_EQ(trial.size(), 3u);
  EXPECT_TRUE(trial.back().settled);
  EXPECT_EQ(p, 0);
}

TEST(HillClimberTest, SaysWhenTheNextPeriodIsATrialsFirstAtTheNewSetting) {
  HillClimber climber(Budget(4));
  EXPECT_EQ(climber.FirstProbeBaselineRate(), 0);
  EXPECT_TRUE(climber.Step({Rated(0, 4, 0.9, 300)}).empty());
  EXPECT_EQ(climber.FirstProbeBaselineRate(), 0);
  const std::vector<Change> raise = climber.Step({Rated(0, 4, 0.9, 310)});
  ASSERT_EQ(raise.size(), 1u);
  EXPECT_EQ(climber.FirstProbeBaselineRate(), 310);  // B next, the period the Tuner may halve
  const std::vector<Change> back = climber.Step({Rated(1, 4, 0.9, 280)});
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].parallelism, 0);
  EXPECT_EQ(climber.FirstProbeBaselineRate(), 0);  // A, a whole period
}

TEST(HillClimberTest, ATrialThatWinsClearlyInItsFirstRoundEndsThere) {
  HillClimber climber(Budget(4));
  int p = 0;
  EXPECT_TRUE(climber.Step({Rated(p, 4, 0.9, 100)}).empty());
  // One worker doubles the output: B, A, then kept (2 periods, not 6).
  std::vector<Change> trial = RunTrial(&climber, &p, 4, [](int q) { return q == 0 ? 100.0 : 200.0; });
  ASSERT_EQ(trial.size(), 3u);
  EXPECT_TRUE(trial.back().settled);
  EXPECT_EQ(p, 1);
}

TEST(HillClimberTest, AbPeriodsCancelAPhaseChangeDuringTheTrial) {
  HillClimber climber(Budget(4));
  int p = 0;
  EXPECT_TRUE(climber.Step({Rated(p, 4, 0.9, 10)}).empty());
  // The run speeds up 100x (startup over) just as the trial starts; one worker does not change the rate.
  int period = 0;
  std::vector<Change> trial = RunTrial(&climber, &p, 4, [&](int) { return period++ == 0 ? 10.0 : 1000.0; });
  ASSERT_FALSE(trial.empty());
  EXPECT_TRUE(trial.back().settled);
  EXPECT_EQ(p, 0);
}

TEST(HillClimberTest, ProbesDownAndKeepsFewerUnitsThatDoAsWell) {
  HillClimber climber(Budget(4));
  int p = 2;
  // One unit less gives the same output: the lowering stays, then the next one too, down to inline.
  for (int period = 0; period < 40; ++period) {
    for (const Change& c : climber.Step({Rated(p, 4, 0.01, 500)})) p = c.parallelism;
  }
  EXPECT_EQ(p, 0);
}

// Two inline-capable ops that only pay inline together: one-op probes see a loss each time.
struct TwoOps {
  int p0 = 1;
  int p1 = 1;
  double all_inline_rate = 300;
  double workers_rate = 100;  // both with workers
  double Rate() const {
    return p0 == 0 && p1 == 0 ? all_inline_rate : (p0 == 0 || p1 == 0 ? 80.0 : workers_rate);
  }
  // Runs `periods` periods; returns how many periods of joint trials ran both ops inline.
  int Run(HillClimber* climber, int periods) {
    int joint_trials = 0;
    for (int period = 0; period < periods; ++period) {
      const double r = Rate();
      const std::vector<Change> changes = climber->Step({Rated(p0, 2, 0.01, r), Rated(p1, 2, 0.01, r)});
      if (changes.size() == 2 && p0 > 0 && p1 > 0 && !changes[0].settled) ++joint_trials;
      for (const Change& c : changes) {
        (c.index == 0 ? p0 : p1) = c.parallelism;
        if (c.settled) (c.index == 0 ? settled0 : settled1) = c.parallelism;
      }
    }
    return joint_trials;
  }
  // Where each op's last trial left it (-1: none ended); a run may end inside a later trial.
  int settled0 = -1;
  int settled1 = -1;
};

TEST(HillClimberTest, TriesInlineOpsInlineTogether) {
  HillClimber climber(Budget(2));
  TwoOps ops;
  ops.Run(&climber, 40);
  EXPECT_EQ(ops.p0, 0);
  EXPECT_EQ(ops.p1, 0);
}

TEST(HillClimberTest, AJointInlineTrialThatCostsOutputIsUndoneAndBacksOff) {
  HillClimber::Config config = Budget(2);
  config.cooldown_periods = 10;
  HillClimber climber(config);
  TwoOps ops;
  ops.all_inline_rate = 50;
  const int trials = ops.Run(&climber, 200);
  EXPECT_EQ(ops.p0, 1);
  EXPECT_EQ(ops.p1, 1);
  // Cooldowns of 10, 20, 40, 80 periods after each failure: about 5 trials in 200 periods, not 20 (each
  // ends after its first round, one period inline, as it loses clearly).
  EXPECT_GE(trials, 3);
  EXPECT_LE(trials, 6);
}

TEST(HillClimberTest, TriesInlineOpsWithAWorkerTogether) {
  // Both inline (how tuned ops start) run at 100, either alone with a worker at 80, both with one at
  // 250: one-op raises would each be undone.
  HillClimber climber(Budget(2));
  TwoOps ops;
  ops.p0 = 0;
  ops.p1 = 0;
  ops.all_inline_rate = 100;
  ops.workers_rate = 250;
  ops.Run(&climber, 40);
  EXPECT_EQ(ops.settled0, 1);
  EXPECT_EQ(ops.settled1, 1);
  // Where workers do not pay together either, the pair stays inline.
  HillClimber other(Budget(2));
  TwoOps inline_best;
  inline_best.p0 = 0;
  inline_best.p1 = 0;
  inline_best.Run(&other, 40);
  EXPECT_EQ(inline_best.settled0, 0);
  EXPECT_EQ(inline_best.settled1, 0);
}

TEST(HillClimberTest, AKeptChangeLetsAnotherOpTryItsRaiseAgain) {
  // Op 0's second worker pays only once op 1 has its second: op 0's first raise is undone and would
  // cool down for 1000 periods, but op 1's kept raise moves the pipeline, so op 0 is tried again.
  HillClimber::Config config = Budget(4);
  config.cooldown_periods = 1000;
  HillClimber climber(config);
  int p0 = 1;
  int p1 = 1;
  auto rate = [&] { return p1 >= 2 ? (p0 >= 2 ? 400.0 : 200.0) : 100.0; };
  for (int period = 0; period < 60; ++period) {
    const double r = rate();
    // Op 0's consumer waits most, so it is tried first.
    for (const Change& c : climber.Step({Rated(p0, 2, 0.9, r, 1), Rated(p1, 2, 0.5, r, 1)})) {
      (c.index == 0 ? p0 : p1) = c.parallelism;
    }
  }
  EXPECT_EQ(p1, 2);
  EXPECT_EQ(p0, 2);
}

TEST(HillClimberTest, OversubscribesTheCpuBudgetByOneUnit) {
  // Two ops at one unit each on a budget of 2: a third unit is tried, and kept where it pays, as ops
  // waiting on I/O hold idle units; a fourth is not tried.
  auto run = [](int oversubscription) {
    HillClimber::Config config = Budget(2);
    config.cpu_oversubscription = oversubscription;
    HillClimber climber(config);
    int p0 = 1;
    int p1 = 1;
    for (int period = 0; period < 60; ++period) {
      const double r = 100.0 * (p0 + p1);
      for (const Change& c : climber.Step({Rated(p0, 4, 0.9, r, 1), Rated(p1, 4, 0.5, r, 1)})) {
        (c.index == 0 ? p0 : p1) = c.parallelism;
      }
    }
    return p0 + p1;
  };
  EXPECT_EQ(run(0), 2);
  EXPECT_EQ(run(1), 3);
}

TEST(HillClimberTest, ANewOpWarmsUpAndAnOpWithHistoryWaitsForItsSteadyRate) {
  HillClimber::Config config = Budget(4);
  config.warmup_periods = 5;
  HillClimber climber(config);
  for (int period = 0; period < 5; ++period) {
    EXPECT_TRUE(climber.Step({Rated(1, 4, 0.9, 100)}).empty()) << period;
  }
  EXPECT_FALSE(climber.Step({Rated(1, 4, 0.9, 100)}).empty());
  // An op whose history saw 1000/period starts no trial at an iterator's slow start, only at its pace.
  HillClimber next(config);
  Sample slow = Rated(1, 4, 0.9, 100);
  slow.history = TuningHistory{1, 0, 0, 0, 0, /*peak_rate=*/1000};
  for (int period = 0; period < 10; ++period) EXPECT_TRUE(next.Step({slow}).empty()) << period;
  Sample steady = slow;
  steady.rate = 900;
  EXPECT_TRUE(next.Step({steady}).empty());  // the rate jumped: not steady yet
  EXPECT_FALSE(next.Step({steady}).empty());
}

TEST(HillClimberTest, AnOpGoesOnFromTheHistoryOfAnEarlierIterator) {
  HillClimber::Config config = Budget(4);
  HillClimber remembering(config);
  HillClimber fresh(config);
  Sample s = Rated(1, 4, 0.9, 100);
  Sample continued = s;
  continued.history = TuningHistory{1, /*raise_cooldown=*/8, /*raise_failures=*/2, /*lower_cooldown=*/8,
                                    /*lower_failures=*/1};
  bool fresh_moved = false;
  for (int period = 0; period < 7; ++period) {
    EXPECT_TRUE(remembering.Step({continued}).empty()) << period;
    fresh_moved = fresh_moved || !fresh.Step({s}).empty();
  }
  EXPECT_TRUE(fresh_moved);
  // The failures go on counting from the history: the next undone raise backs off 2^2 times.
  const TuningHistory h = remembering.History(0, 1);
  EXPECT_EQ(h.parallelism, 1);
  EXPECT_EQ(h.raise_failures, 2);
  EXPECT_EQ(h.lower_failures, 1);
  EXPECT_EQ(h.raise_cooldown, 1);
  EXPECT_EQ(h.lower_cooldown, 1);
}

class FakeTunable : public Tunable {
 public:
  int parallelism() const override { return parallelism_; }
  int max_parallelism() const override { return 4; }
  void SetParallelism(int n) override { parallelism_ = std::clamp(n, 1, 4); }
  BufferStats buffer_stats() const override { return {}; }

 private:
  int parallelism_ = 1;
};

TEST(TunerTest, DrivesRegisteredTunablesFromTheirWaitCounters) {
  Tuner::Config config;
  config.climber.cpu_budget = 4;
  config.period = std::chrono::hours(1);  // the thread never fires during the test: steps are manual
  Tuner tuner(config);
  FakeTunable a;
  FakeTunable b;
  tuner.Register(&a);
  tuner.Register(&b);
  const int64_t period = 1000000;
  b.AddConsumerWait(period / 2);  // b's consumer waited half the period
  tuner.StepForTest(period);
  EXPECT_EQ(a.parallelism(), 1);
  EXPECT_EQ(b.parallelism(), 2);
  b.AddConsumerWait(period / 10);  // the raise paid
  tuner.StepForTest(period);
  EXPECT_EQ(b.parallelism(), 2);
  tuner.Unregister(&b);
  a.AddConsumerWait(period);
  tuner.StepForTest(period);
  EXPECT_EQ(a.parallelism(), 2);
  EXPECT_EQ(b.parallelism(), 2);  // no longer driven
  tuner.Unregister(&a);
}

// Counts its output and keeps what the tuner remembers of it, as a tuned Map or Interleave does.
class FakeTunedOp : public Tunable {
 public:
  explicit FakeTunedOp(TuningHistory remembered) : remembered_(remembered) {
    if (remembered.parallelism >= 0) parallelism_ = remembered.parallelism;
  }
  int parallelism() const override { return parallelism_; }
  int max_parallelism() const override { return 4; }
  int min_parallelism() const override { return 0; }
  void SetParallelism(int n) override { parallelism_ = std::clamp(n, 0, 4); }
  BufferStats buffer_stats() const override { return {}; }
  bool counts_output() const override { return true; }
  void Remember(const TuningHistory& history) override { kept = history; }
  TuningHistory remembered() const override { return remembered_; }

  TuningHistory kept;

 private:
  const TuningHistory remembered_;
  int parallelism_ = 1;
};

// One iterator's run of `periods` periods, its consumer waiting 90% of the time: a second worker does not
// add output, inline loses half of it. Counts the periods that changed the op's setting (trials) and
// returns what the op kept when it unregistered.
TuningHistory RunIterator(TuningHistory remembered, int periods, int* trials) {
  Tuner::Config config;
  config.climber.cpu_budget = 2;
  config.climber.cooldown_periods = 100;
  config.period = std::chrono::hours(1);  // steps are manual
  Tuner tuner(config);
  FakeTunedOp op(remembered);
  tuner.Register(&op);
  const int64_t period = 1000000;
  for (int step = 0; step < periods; ++step) {
    const int before = op.parallelism();
    for (int i = 0; i < (op.parallelism() == 0 ? 50 : 100); ++i) op.CountOutput();
    op.AddConsumerWait(period * 9 / 10);
    tuner.StepForTest(period);
    if (op.parallelism() != before) ++*trials;
  }
  tuner.Unregister(&op);
  return op.kept;
}

TEST(TunerTest, TheNextIteratorGoesOnFromWhatTheTunerLearned) {
  // The first iterator warms up, then tries a raise and a probe down, both undone.
  int first_trials = 0;
  TuningHistory history = RunIterator(TuningHistory{}, 30, &first_trials);
  EXPECT_GT(first_trials, 0);
  EXPECT_EQ(history.parallelism, 1);
  EXPECT_EQ(history.raise_failures, 1);
  EXPECT_EQ(history.lower_failures, 1);
  // The next iterators (short epochs) do not try them again until the backoff has passed; a fresh start
  // each epoch would pay the same trials every time.
  int later_trials = 0;
  for (int epoch = 0; epoch < 3; ++epoch) history = RunIterator(history, 12, &later_trials);
  EXPECT_EQ(later_trials, 0);
  EXPECT_EQ(history.parallelism, 1);
  int fresh_trials = 0;
  for (int epoch = 0; epoch < 3; ++epoch) RunIterator(TuningHistory{}, 12, &fresh_trials);
  EXPECT_GE(fresh_trials, 3);
}

TEST(TunerTest, FollowsTheIteratorsShareOfASharedPool) {
  auto share = std::make_shared<std::atomic<int>>(4);
  Tuner::Config config;
  config.climber.cpu_budget = 4;
  config.climber.cpu_oversubscription = 0;  // the share alone bounds the sum here
  config.cpu_share = share;
  config.period = std::chrono::hours(1);  // steps are manual
  Tuner tuner(config);
  FakeTunable a;
  tuner.Register(&a);
  const int64_t period = 1000000;
  for (int step = 0; step < 8; ++step) {
    a.AddConsumerWait(period / (2 * a.parallelism()));  // each raise halves the wait: it pays
    tuner.StepForTest(period);
  }
  EXPECT_EQ(a.parallelism(), 4);
  share->store(2);  // another task joined the worker
  for (int step = 0; step < 4; ++step) {
    a.AddConsumerWait(period / 2);
    tuner.StepForTest(period);
  }
  EXPECT_EQ(a.parallelism(), 2);
  share->store(8);  // more than the budget: the budget still holds
  for (int step = 0; step < 20; ++step) {
    a.AddConsumerWait(period / (2 * a.parallelism()));
    tuner.StepForTest(period);
  }
  EXPECT_EQ(a.parallelism(), 4);
  tuner.Unregister(&a);
}

TEST(TunerTest, IteratorContextMakesOneTunerUnlessDisabled) {
  IteratorContext context;
  context.options.cpu_budget = 3;
  EXPECT_EQ(CpuBudget(context), 3);
  Tuner* first = TunerFor(context);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(TunerFor(context), first);
  IteratorContext off;
  off.options.autotune = false;
  EXPECT_EQ(TunerFor(off), nullptr);
}

// End to end: a tuned parallel map and interleave keep their results while the tuner changes their
// worker counts underneath (the tuner runs every 10 ms; the pipelines run long enough to see steps).
int64_t Spin(int64_t x) {
  volatile uint64_t acc = static_cast<uint64_t>(x);
  for (int i = 0; i < 3000; ++i) acc = acc * 6364136223846793005ull + 1;
  return x;
}

TEST(TunerTest, TunedPipelinesKeepTheirOrder) {
#if defined(SLUICE_SANITIZED_BUILD)
  const int64_t n = 2000;
#else
  const int64_t n = 20000;
#endif
  Options options;
  options.thread_pool_size = 2;
  Iterator<int64_t> it = Range(n)
                             .Interleave([](int64_t x) { return Range(x * 10, x * 10 + 10); }, 4, 2, kAutotune)
                             .Map(Spin, kAutotune)
                             .MakeIterator(options);
  std::vector<int64_t> got;
  for (absl::StatusOr<int64_t> x : it) {
    ASSERT_TRUE(x.ok());
    got.push_back(*x);
    if (static_cast<int64_t>(got.size()) > n * 10) break;
  }
  std::vector<int64_t> want = [&] {
    std::vector<int64_t> w;
    Iterator<int64_t> seq =
        Range(n).Interleave([](int64_t x) { return Range(x * 10, x * 10 + 10); }, 4, 2).MakeIterator();
    for (absl::StatusOr<int64_t> x : seq) w.push_back(*x);
    return w;
  }();
  EXPECT_EQ(got, want);
}

// Tuned ops switch between inline (parallelism 0) and workers between any two elements: order, every
// element exactly once, and the end hold whatever the sequence of settings.
TEST(TunerTest, InlineAndParallelSwitchesKeepOrderAndElements) {
  ThreadPool pool(2);
  for (bool deterministic_map : {true, false}) {
    auto context = std::make_shared<IteratorContext>();
    context->pool = &pool;
    context->options.cpu_budget = 2;
    const int64_t n = 3000;
    Dataset<int64_t> ds =
        Range(n / 10)
            .Interleave([](int64_t x) { return Range(x * 10, x * 10 + 10); }, 3, 2, kAutotune)
            .Map(Spin, {.num_parallel_calls = kAutotune, .deterministic = deterministic_map});
    std::unique_ptr<Stream<int64_t>> stream = ds.node()->MakeStream(context);
    Tuner* tuner = TunerFor(*context);
    ASSERT_NE(tuner, nullptr);
    std::vector<int64_t> got;
    absl::StatusOr<int64_t> x;
    int step = 0;
    const int settings[] = {0, 1, 0, 2, 0, 0, 1, 2, 1, 0};
    for (int polls = 0; polls < 1000000; ++polls) {
      PollState state = stream->Poll(&x);
      if (state == PollState::kEnd) break;
      if (state == PollState::kPending) {
        SyncWait(stream->WaitReady());
        continue;
      }
      ASSERT_TRUE(x.ok());
      got.push_back(*x);
      if (got.size() % 97 == 0) tuner->SetAllForTest(settings[step++ % 10]);
    }
    std::vector<int64_t> want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] = i;
    if (!deterministic_map) std::sort(got.begin(), got.end());
    // The interleave is deterministic: cycle 3, blocks of 2 over runs of 10.
    std::vector<int64_t> seq;
    for (absl::StatusOr<int64_t> y :
         Range(n / 10)
             .Interleave([](int64_t v) { return Range(v * 10, v * 10 + 10); }, 3, 2)
             .MakeIterator()) {
      seq.push_back(*y);
    }
    if (!deterministic_map) std::sort(seq.begin(), seq.end());
    EXPECT_EQ(got, seq) << deterministic_map;
    stream.reset();
  }
}

// A save taken while the tuned ops run inline or with workers restores to the same remaining elements,
// in full and in compact checkpoints.
TEST(TunerTest, SavesTakenInlineOrWithWorkersRestoreExactly) {
  const int64_t n = 1200;
  Dataset<int64_t> ds = Range(n / 10)
                            .Interleave([](int64_t x) { return Range(x * 10, x * 10 + 10); }, 3, 2, kAutotune)
                            .Map(Spin, kAutotune);
  std::vector<int64_t> want;
  for (absl::StatusOr<int64_t> y :
       Range(n / 10).Interleave([](int64_t v) { return Range(v * 10, v * 10 + 10); }, 3, 2).MakeIterator()) {
    want.push_back(*y);
  }
  for (bool compact : {false, true}) {
    for (int saved_at : {0, 1, 2}) {
      Options options;
      options.thread_pool_size = 2;
      options.compact_checkpoints = compact;
      Iterator<int64_t> it = ds.MakeIterator(options);
      std::vector<int64_t> got;
      for (int k = 0; k < 250; ++k) {
        absl::StatusOr<std::optional<int64_t>> x = it.NextBlocking();
        ASSERT_TRUE(x.ok() && x->has_value());
        got.push_back(**x);
        if (k == 50) TunerFor(it.context())->SetAllForTest(saved_at);
      }
      absl::StatusOr<std::string> state = it.SaveBlocking();
      ASSERT_TRUE(state.ok()) << state.status();
      absl::StatusOr<Iterator<int64_t>> restored = ds.RestoreIterator(*state, options);
      ASSERT_TRUE(restored.ok()) << restored.status();
      TunerFor(restored->context())->SetAllForTest(2 - saved_at);
      for (absl::StatusOr<int64_t> x : *restored) {
        ASSERT_TRUE(x.ok()) << x.status();
        got.push_back(*x);
      }
      EXPECT_EQ(got, want) << "compact " << compact << ", parallelism " << saved_at;
    }
  }
}

// Prefetch(kAutotune) is a RAM tunable: while the tuner resizes it, elements and order are unchanged.
TEST(TunerTest, TunedPrefetchKeepsOrderUnderASmallRamBudget) {
  const int64_t n = 3000;
  Options options;
  options.thread_pool_size = 2;
  options.ram_budget_bytes = 4096;
  Iterator<std::string> it = Range(n)
                                 .Map([](int64_t x) { return std::string(static_cast<size_t>(100 + x % 50), 'a'); })
                                 .Prefetch(kAutotune)
                                 .Map([](std::string s) {
                                   Spin(static_cast<int64_t>(s.size()));
                                   return s;
                                 })
                                 .MakeIterator(options);
  int64_t count = 0;
  for (absl::StatusOr<std::string> s : it) {
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(static_cast<int64_t>(s->size()), 100 + count % 50);
    ++count;
  }
  EXPECT_EQ(count, n);
}

// The prefetch stream as the tuner sees it: a buffer whose unit is one element of about the size seen.
TEST(TunerTest, PrefetchStreamIsABufferTunable) {
  ThreadPool pool(2);
  auto shared = std::make_shared<IteratorContext>();
  shared->pool = &pool;
  auto node = ops::MakePrefetch<std::string>(
      Dataset<int64_t>(Range(100)).Map([](int64_t) { return std::string(1000, 'x'); }).node(), kAutotune);
  std::unique_ptr<Stream<std::string>> stream = node->MakeStream(shared);
  auto* holder = dynamic_cast<ops::detail_teardown::TunableHolder*>(stream.get());
  ASSERT_NE(holder, nullptr);
  Tunable* tunable = holder->tunable();
  ASSERT_NE(tunable, nullptr);
  EXPECT_FALSE(tunable->uses_cpu());
  EXPECT_EQ(tunable->parallelism(), 2);
  EXPECT_EQ(tunable->max_parallelism(), 64);
  tunable->SetParallelism(5);
  absl::StatusOr<std::string> first;
  PollState state = stream->Poll(&first);  // starts the producer
  for (int i = 0; i < 2000 && tunable->buffer_stats().size < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(tunable->buffer_stats().size, 5);  // filled to the raised limit, no further
  EXPECT_EQ(tunable->buffer_stats().capacity, 5);
  EXPECT_GE(tunable->unit_bytes(), 1000);
  (void)state;
}

}  // namespace
}  // namespace autotune_test_file
}  // namespace sluice
