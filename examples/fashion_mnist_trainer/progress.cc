#include "progress.h"  // the example library has no repo-root include path

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fashion_mnist {
namespace {

constexpr double kNanosPerSecond = 1e9;

int64_t SecondsToNanos(double seconds) { return static_cast<int64_t>(seconds * kNanosPerSecond); }

}  // namespace

int64_t SteadyProgressClock::NowNanos() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool IsTerminal(std::FILE* stream) { return stream != nullptr && isatty(fileno(stream)) == 1; }

std::string FormatDuration(double seconds) {
  const int64_t total = seconds > 0.0 && std::isfinite(seconds) ? static_cast<int64_t>(seconds) : 0;
  const int64_t hours = total / 3600;
  const int64_t minutes = (total / 60) % 60;
  const int64_t secs = total % 60;
  if (hours > 0) return absl::StrFormat("%d:%02d:%02d", hours, minutes, secs);
  return absl::StrFormat("%d:%02d", minutes, secs);
}

// --- EpochProgress -------------------------------------------------------------------------------------------

EpochProgress::EpochProgress(std::ostream& out, const ProgressClock& clock, ProgressOptions options)
    : out_(out), clock_(clock), options_(options) {
  start_ns_ = clock_.NowNanos();
  last_update_ns_ = start_ns_;
  last_draw_ns_ = start_ns_;
  last_log_ns_ = start_ns_;
  options_.bar_width = std::max(options_.bar_width, 1);
  if (!(options_.log_every_fraction > 0.0)) options_.log_every_fraction = 1.0;
}

double EpochProgress::elapsed_seconds() const {
  return static_cast<double>(last_update_ns_ - start_ns_) / kNanosPerSecond;
}

double EpochProgress::images_per_second() const {
  const double seconds = elapsed_seconds();
  return seconds > 0.0 ? static_cast<double>(images_ - resumed_images_) / seconds : 0.0;
}

void EpochProgress::Resume(int64_t images, double loss_sum) {
  if (images <= 0) return;
  images_ += images;
  resumed_images_ += images;
  loss_sum_ += loss_sum;
  if (options_.total_images > 0) {
    const double fraction = static_cast<double>(images_) / options_.total_images;
    while (next_log_index_ * options_.log_every_fraction <= fraction + 1e-12) ++next_log_index_;
  }
}

std::string EpochProgress::StatusLine() const {
  std::string line = absl::StrCat("epoch ", options_.epoch, "/", options_.num_epochs);
  const double rate = images_per_second();
  if (options_.total_images > 0) {
    const double fraction = std::clamp(static_cast<double>(images_) / options_.total_images, 0.0, 1.0);
    const int width = options_.bar_width;
    // The epsilon keeps 57/100 from printing as 56% (0.57 * 100 is 56.99999... in binary).
    const int filled = static_cast<int>(fraction * width + 1e-9);
    std::string bar(static_cast<size_t>(width), ' ');
    std::fill(bar.begin(), bar.begin() + filled, '=');
    if (filled < width && images_ > 0) bar[static_cast<size_t>(filled)] = '>';
    absl::StrAppend(&line, " [", bar, "] ", absl::StrFormat("%3d%%", static_cast<int>(fraction * 100.0 + 1e-9)), " ",
                    images_, "/", options_.total_images);
  } else {
    absl::StrAppend(&line, " ", images_, " images");
  }
  absl::StrAppend(&line, absl::StrFormat(" %.0f img/s loss %.4f elapsed ", rate, mean_loss()),
                  FormatDuration(elapsed_seconds()));
  if (options_.total_images > 0) {
    const int64_t remaining = std::max<int64_t>(options_.total_images - images_, 0);
    absl::StrAppend(&line, " eta ",
                    rate > 0.0 ? FormatDuration(static_cast<double>(remaining) / rate) : std::string("?"));
  }
  return line;
}

void EpochProgress::Update(int64_t images, double mean_loss) {
  if (finished_ || images < 0) return;
  const int64_t now = clock_.NowNanos();
  last_update_ns_ = now;
  images_ += images;
  if (std::isfinite(mean_loss)) loss_sum_ += mean_loss * static_cast<double>(images);
  if (options_.interactive) {
    const bool complete = options_.total_images > 0 && images_ >= options_.total_images;
    if (!complete && now - last_draw_ns_ < SecondsToNanos(options_.redraw_interval_seconds)) return;
    last_draw_ns_ = now;
    const std::string line = StatusLine();
    // Pad with spaces when the line got shorter, so the tail of the previous draw does not linger.
    const size_t pad = drawn_width_ > line.size() ? drawn_width_ - line.size() : 0;
    out_ << '\r' << line << std::string(pad, ' ');
    out_.flush();
    drawn_width_ = line.size();
    return;
  }
  bool due = now - last_log_ns_ >= SecondsToNanos(options_.log_interval_seconds);
  if (options_.total_images > 0) {
    const double fraction = static_cast<double>(images_) / options_.total_images;
    // Advance past every threshold crossed by this step, so a large step logs once, not once per threshold.
    while (next_log_index_ * options_.log_every_fraction <= fraction + 1e-12 &&
           next_log_index_ * options_.log_every_fraction < 1.0 - 1e-12) {
      ++next_log_index_;
      due = true;
    }
  }
  if (due) {
    last_log_ns_ = now;
    out_ << StatusLine() << '\n';
  }
}

void EpochProgress::Finish(std::optional<double> test_accuracy, std::optional<double> test_loss) {
  if (finished_) return;
  finished_ = true;
  std::string line = absl::StrCat("epoch ", options_.epoch, "/", options_.num_epochs, ": ", images_,
                                  " images in ", FormatDuration(elapsed_seconds()),
                                  absl::StrFormat(" (%.0f img/s), loss %.4f", images_per_second(), mean_loss()));
  if (test_accuracy.has_value()) absl::StrAppend(&line, absl::StrFormat(", test accuracy %.4f", *test_accuracy));
  if (test_loss.has_value()) absl::StrAppend(&line, absl::StrFormat(", test loss %.4f", *test_loss));
  if (options_.interactive) {
    const size_t pad = drawn_width_ > line.size() ? drawn_width_ - line.size() : 0;
    out_ << '\r' << line << std::string(pad, ' ') << '\n';
  } else {
    out_ << line << '\n';
  }
  out_.flush();
}

// --- WaitTracker ---------------------------------------------------------------------------------------------

WaitTracker::WaitTracker(int num_replicas)
    : num_replicas_(std::max(num_replicas, 0)), slots_(std::make_unique<Slot[]>(static_cast<size_t>(num_replicas_))) {}

void WaitTracker::Record(int replica, int64_t wait_ns, int64_t step_ns) {
  if (replica < 0 || replica >= num_replicas_ || wait_ns < 0 || step_ns < 0) return;
  Slot& slot = slots_[static_cast<size_t>(replica)];
  slot.wait_ns.fetch_add(wait_ns, std::memory_order_relaxed);
  slot.step_ns.fetch_add(step_ns, std::memory_order_relaxed);
  slot.steps.fetch_add(1, std::memory_order_relaxed);
}

double WaitTracker::Share() const {
  const int64_t step = step_nanos();
  return step > 0 ? static_cast<double>(wait_nanos()) / static_cast<double>(step) : 0.0;
}

double WaitTracker::Share(int replica) const {
  if (replica < 0 || replica >= num_replicas_) return 0.0;
  const Slot& slot = slots_[static_cast<size_t>(replica)];
  const int64_t step = slot.step_ns.load(std::memory_order_relaxed);
  return step > 0 ? static_cast<double>(slot.wait_ns.load(std::memory_order_relaxed)) / static_cast<double>(step)
                  : 0.0;
}

int64_t WaitTracker::steps() const {
  int64_t total = 0;
  for (int r = 0; r < num_replicas_; ++r) total += slots_[static_cast<size_t>(r)].steps.load(std::memory_order_relaxed);
  return total;
}

int64_t WaitTracker::wait_nanos() const {
  int64_t total = 0;
  for (int r = 0; r < num_replicas_; ++r) {
    total += slots_[static_cast<size_t>(r)].wait_ns.load(std::memory_order_relaxed);
  }
  return total;
}

int64_t WaitTracker::step_nanos() const {
  int64_t total = 0;
  for (int r = 0; r < num_replicas_; ++r) {
    total += slots_[static_cast<size_t>(r)].step_ns.load(std::memory_order_relaxed);
  }
  return total;
}

void WaitTracker::Reset() {
  for (int r = 0; r < num_replicas_; ++r) {
    Slot& slot = slots_[static_cast<size_t>(r)];
    slot.wait_ns.store(0, std::memory_order_relaxed);
    slot.step_ns.store(0, std::memory_order_relaxed);
    slot.steps.store(0, std::memory_order_relaxed);
  }
}

// --- Run summary ---------------------------------------------------------------------------------------------

std::string FormatRunSummary(const RunSummary& summary) {
  const double rate =
      summary.train_seconds > 0.0 ? static_cast<double>(summary.images) / summary.train_seconds : 0.0;
  return absl::StrCat(
      "run: ", summary.epochs, summary.epochs == 1 ? " epoch, " : " epochs, ", summary.num_replicas,
      summary.num_replicas == 1 ? " replica, " : " replicas, ", summary.images, " images in ",
      FormatDuration(summary.train_seconds), absl::StrFormat(" (%.0f img/s)\n", rate),
      absl::StrFormat("test accuracy %.4f, test loss %.4f\n", summary.test_accuracy, summary.test_loss),
      absl::StrFormat("replicas waited for input %.1f%% of their step time\n", 100.0 * summary.input_wait_share));
}

}  // namespace fashion_mnist
