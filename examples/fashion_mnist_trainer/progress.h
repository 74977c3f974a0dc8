// Terminal progress for the Fashion-MNIST trainer: a per-epoch bar, per-epoch and end-of-run summaries, and
// WaitTracker, which measures how much of the replicas' step time went to waiting for input.
//
// Contract:
// - EpochProgress draws one epoch. Interactive mode (the stream is a terminal) redraws a single line in place
//   with '\r' at most every `redraw_interval`; log mode (a pipe or file) writes a plain line each time another
//   `log_every_fraction` of the epoch is done or `log_interval` has passed, so logs stay short and greppable.
//   Finish() writes the final line of the epoch (ending the in-place line with '\n' in interactive mode).
// - Figures: images/s = images so far / time since construction; loss = running mean weighted by images (so a
//   short last batch counts for what it holds); ETA = remaining images / current rate (shown as "?" before the
//   rate is known or when the total is unknown).
// - Time comes from a ProgressClock and text goes to a std::ostream, both supplied by the caller, so tests drive
//   a ManualClock and read a std::ostringstream.
// - Errors: none; a stream in a failed state simply stays failed.
// - Threading: EpochProgress is used by one thread (the one that applies the averaged step). WaitTracker is
//   thread-safe: every replica thread calls Record() concurrently, readers may call Share() at any time.
//
//   SteadyProgressClock clock;
//   EpochProgress bar(std::cout, clock, {.epoch = 1, .num_epochs = 5, .total_images = 60000,
//                                        .interactive = IsTerminal(stdout)});
//   for (...) bar.Update(/*images=*/256, /*mean_loss=*/loss);
//   bar.Finish(/*test_accuracy=*/0.85);
#ifndef SLUICE_EXAMPLES_FASHION_MNIST_TRAINER_PROGRESS_H_
#define SLUICE_EXAMPLES_FASHION_MNIST_TRAINER_PROGRESS_H_

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

namespace fashion_mnist {

// A monotonic clock in nanoseconds.
class ProgressClock {
 public:
  virtual ~ProgressClock() = default;
  virtual int64_t NowNanos() const = 0;
};

// std::chrono::steady_clock.
class SteadyProgressClock final : public ProgressClock {
 public:
  int64_t NowNanos() const override;
};

// A clock that moves only when told to; for tests. Thread-safe.
class ManualProgressClock final : public ProgressClock {
 public:
  explicit ManualProgressClock(int64_t start_nanos = 0) : now_(start_nanos) {}
  int64_t NowNanos() const override { return now_.load(std::memory_order_relaxed); }
  void AdvanceNanos(int64_t nanos) { now_.fetch_add(nanos, std::memory_order_relaxed); }
  void AdvanceSeconds(double seconds) { AdvanceNanos(static_cast<int64_t>(seconds * 1e9)); }

 private:
  std::atomic<int64_t> now_;
};

// True when `stream` is a terminal (isatty on its file descriptor).
bool IsTerminal(std::FILE* stream);

// "0:07", "12:34", "1:02:03" (whole seconds, rounded down; negative counts as 0).
std::string FormatDuration(double seconds);

struct ProgressOptions {
  int epoch = 1;             // 1-based, for the label "epoch 1/5"
  int num_epochs = 1;
  int64_t total_images = 0;  // images in the epoch; 0 = unknown (no percentage, bar or ETA)
  bool interactive = false;  // redraw in place with '\r' instead of writing log lines
  int bar_width = 30;
  double redraw_interval_seconds = 0.1;
  double log_every_fraction = 0.1;
  double log_interval_seconds = 10.0;
};

class EpochProgress {
 public:
  // `out` and `clock` must outlive this object. The epoch's clock starts now.
  EpochProgress(std::ostream& out, const ProgressClock& clock, ProgressOptions options);

  // One finished global step of `images` images whose mean loss was `mean_loss`. Draws or logs when due.
  void Update(int64_t images, double mean_loss);

  // Writes the epoch's final line, e.g.
  //   epoch 1/5: 60000 images in 0:05 (11834 img/s), loss 0.5123, test accuracy 0.8421
  // Training time is measured up to the last Update(), so evaluation after the epoch does not lower the rate.
  // Later calls do nothing.
  void Finish(std::optional<double> test_accuracy = std::nullopt, std::optional<double> test_loss = std::nullopt);

  // Continues an epoch a checkpoint stopped in: `images` already trained with `loss_sum` (mean loss times
  // images) count towards the epoch's totals and mean loss, not towards this run's rate.
  void Resume(int64_t images, double loss_sum);

  int64_t images() const { return images_; }
  double loss_sum() const { return loss_sum_; }
  double mean_loss() const { return images_ > 0 ? loss_sum_ / static_cast<double>(images_) : 0.0; }
  double elapsed_seconds() const;
  double images_per_second() const;

  // The current status text without '\r' or newline, e.g.
  //   epoch 1/5 [=========>                    ]  33% 19968/60000 11234 img/s loss 0.6012 elapsed 0:01 eta 0:03
  std::string StatusLine() const;

 private:
  std::ostream& out_;
  const ProgressClock& clock_;
  ProgressOptions options_;
  int64_t start_ns_;
  int64_t last_update_ns_;
  int64_t last_draw_ns_;
  int64_t last_log_ns_;
  int64_t images_ = 0;
  int64_t resumed_images_ = 0;  // images_ trained before a resume (Resume)
  double loss_sum_ = 0.0;
  int next_log_index_ = 1;  // log once images / total reaches next_log_index_ * log_every_fraction
  size_t drawn_width_ = 0;  // length of the in-place line, to blank leftovers when it shrinks
  bool finished_ = false;
};

// Accumulates, per replica, the time spent waiting for the next batch and the whole step time.
// Record() is lock-free (relaxed atomic adds: the totals are statistics, no other memory depends on them).
class WaitTracker {
 public:
  explicit WaitTracker(int num_replicas);

  int num_replicas() const { return num_replicas_; }

  // One step of `replica`: `wait_ns` of the step's `step_ns` went to waiting for input. Out-of-range replicas
  // and negative durations are ignored (they would corrupt the shares).
  void Record(int replica, int64_t wait_ns, int64_t step_ns);

  // wait / step time over all replicas, in [0, 1] when every wait <= its step; 0 before any step.
  double Share() const;
  double Share(int replica) const;
  int64_t steps() const;
  int64_t wait_nanos() const;
  int64_t step_nanos() const;

  void Reset();

 private:
  // One cache line per replica so that replicas do not bounce a shared line on every step.
  struct alignas(64) Slot {
    std::atomic<int64_t> wait_ns{0};
    std::atomic<int64_t> step_ns{0};
    std::atomic<int64_t> steps{0};
  };
  int num_replicas_;
  std::unique_ptr<Slot[]> slots_;
};

struct RunSummary {
  int epochs = 0;
  int num_replicas = 1;
  int64_t images = 0;            // training images processed over the whole run
  double train_seconds = 0.0;    // time spent in training epochs (evaluation excluded)
  double test_accuracy = 0.0;    // after the last epoch
  double test_loss = 0.0;
  double input_wait_share = 0.0; // WaitTracker::Share()
};

// Multi-line end-of-run report, ending with '\n':
//   run: 5 epochs, 2 replicas, 300000 images in 0:25 (12000 img/s)
//   test accuracy 0.8712, test loss 0.3621
//   replicas waited for input 3.2% of their step time
std::string FormatRunSummary(const RunSummary& summary);

}  // namespace fashion_mnist

#endif  // SLUICE_EXAMPLES_FASHION_MNIST_TRAINER_PROGRESS_H_
