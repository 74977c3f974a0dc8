#include "examples/fashion_mnist_trainer/progress.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fashion_mnist {
namespace progress_test_file {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

int Count(const std::string& text, char c) { return static_cast<int>(std::count(text.begin(), text.end(), c)); }

TEST(ProgressTest, FormatDuration) {
  EXPECT_EQ(FormatDuration(0.0), "0:00");
  EXPECT_EQ(FormatDuration(7.9), "0:07");
  EXPECT_EQ(FormatDuration(754.0), "12:34");
  EXPECT_EQ(FormatDuration(3723.0), "1:02:03");
  EXPECT_EQ(FormatDuration(-5.0), "0:00");
  EXPECT_EQ(FormatDuration(1.0 / 0.0), "0:00");
}

TEST(ProgressTest, StatusLineShowsRateLossElapsedAndEta) {
  ManualProgressClock clock(1'000'000'000);
  std::ostringstream out;
  EpochProgress bar(out, clock, {.epoch = 2, .num_epochs = 5, .total_images = 1000, .bar_width = 10});
  EXPECT_EQ(bar.StatusLine(), "epoch 2/5 [          ]   0% 0/1000 0 img/s loss 0.0000 elapsed 0:00 eta ?");
  clock.AdvanceSeconds(2.0);
  bar.Update(100, 1.0);
  clock.AdvanceSeconds(2.0);
  bar.Update(300, 0.5);  // running mean weighted by images: (100 * 1 + 300 * 0.5) / 400 = 0.625
  EXPECT_EQ(bar.images(), 400);
  EXPECT_DOUBLE_EQ(bar.mean_loss(), 0.625);
  EXPECT_DOUBLE_EQ(bar.images_per_second(), 100.0);
  // 600 images left at 100 img/s: 6 s.
  EXPECT_EQ(bar.StatusLine(), "epoch 2/5 [====>     ]  40% 400/1000 100 img/s loss 0.6250 elapsed 0:04 eta 0:06");
}

TEST(ProgressTest, UnknownTotalHasNoBarOrEta) {
  ManualProgressClock clock;
  std::ostringstream out;
  EpochProgress bar(out, clock, {.epoch = 1, .num_epochs = 1, .total_images = 0});
  clock.AdvanceSeconds(1.0);
  bar.Update(50, 2.0);
  EXPECT_EQ(bar.StatusLine(), "epoch 1/1 50 images 50 img/s loss 2.0000 elapsed 0:01");
}

TEST(ProgressTest, LogModeWritesALineEveryTenthAndAFinalLine) {
  ManualProgressClock clock;
  std::ostringstream out;
  EpochProgress bar(out, clock, {.epoch = 1, .num_epochs = 3, .total_images = 1000, .interactive = false});
  for (int step = 0; step < 40; ++step) {  // 40 steps of 25 images: a tenth every 4 steps
    clock.AdvanceSeconds(0.01);
    bar.Update(25, 0.5);
  }
  const std::string text = out.str();
  EXPECT_EQ(Count(text, '\r'), 0);
  std::vector<std::string> lines = Lines(text);
  ASSERT_EQ(lines.size(), 9u);  // 10% .. 90%; 100% is left to Finish()
  EXPECT_THAT(lines[0], HasSubstr(" 10% 100/1000"));
  EXPECT_THAT(lines[8], HasSubstr(" 90% 900/1000"));
  clock.AdvanceSeconds(5.0);  // evaluation time after the last step must not count
  bar.Finish(0.8421, 0.4321);
  lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 10u);
  EXPECT_EQ(lines[9],
            "epoch 1/3: 1000 images in 0:00 (2500 img/s), loss 0.5000, test accuracy 0.8421, test loss 0.4321");
  bar.Finish();  // idempotent
  bar.Update(25, 0.5);  // ignored after Finish
  EXPECT_EQ(Lines(out.str()).size(), 10u);
}

TEST(ProgressTest, LogModeOneBigStepLogsOnceAndTimeTriggersLogs) {
  ManualProgressClock clock;
  std::ostringstream out;
  EpochProgress bar(out, clock,
                    {.epoch = 1,
                     .num_epochs = 1,
                     .total_images = 100,
                     .interactive = false,
                     .log_interval_seconds = 10});
  clock.AdvanceSeconds(1.0);
  bar.Update(55, 1.0);  // crosses 10% .. 50% at once
  EXPECT_EQ(Lines(out.str()).size(), 1u);
  clock.AdvanceSeconds(1.0);
  bar.Update(1, 1.0);  // 56%: no threshold, only 1 s since the last line
  EXPECT_EQ(Lines(out.str()).size(), 1u);
  clock.AdvanceSeconds(10.0);
  bar.Update(1, 1.0);  // 57%: no threshold, but 11 s since the last line
  std::vector<std::string> lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[1], HasSubstr(" 57% 57/100"));
}

TEST(ProgressTest, InteractiveModeRedrawsInPlaceAndThrottles) {
  ManualProgressClock clock;
  std::ostringstream out;
  EpochProgress bar(out, clock,
                    {.epoch = 1, .num_epochs = 2, .total_images = 400, .interactive = true, .bar_width = 8,
                     .redraw_interval_seconds = 0.1});
  clock.AdvanceSeconds(0.05);
  bar.Update(100, 1.0);  // 0.05 s since start: throttled
  EXPECT_EQ(out.str(), "");
  clock.AdvanceSeconds(0.10);
  bar.Update(100, 1.0);  // drawn
  EXPECT_EQ(Count(out.str(), '\r'), 1);
  EXPECT_EQ(Count(out.str(), '\n'), 0);
  clock.AdvanceSeconds(0.01);
  bar.Update(100, 1.0);  // throttled again
  EXPECT_EQ(Count(out.str(), '\r'), 1);
  clock.AdvanceSeconds(0.01);
  bar.Update(100, 1.0);  // the last step of the epoch is always drawn
  EXPECT_EQ(Count(out.str(), '\r'), 2);
  EXPECT_THAT(out.str(), HasSubstr("\repoch 1/2 [========] 100% 400/400"));
  bar.Finish(0.9);
  const std::string text = out.str();
  EXPECT_EQ(Count(text, '\r'), 3);
  EXPECT_EQ(Count(text, '\n'), 1);
  EXPECT_EQ(text.back(), '\n');
  // The final line overwrites the longer bar line, padded with spaces so none of the bar remains.
  const std::string final_draw = text.substr(text.rfind('\r') + 1);
  EXPECT_THAT(final_draw, StartsWith("epoch 1/2: 400 images in 0:00 (2353 img/s), loss 1.0000, test accuracy 0.9000"));
  EXPECT_THAT(final_draw, Not(HasSubstr("eta")));
  const size_t second = text.find('\r', text.find('\r') + 1);
  const std::string last_bar_draw = text.substr(second + 1, text.rfind('\r') - second - 1);
  EXPECT_THAT(last_bar_draw, StartsWith("epoch 1/2 [========] 100%"));
  EXPECT_GE(final_draw.size() - 1, last_bar_draw.size());
}

TEST(ProgressTest, IsTerminalIsFalseForAFile) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  EXPECT_FALSE(IsTerminal(file));
  std::fclose(file);
  EXPECT_FALSE(IsTerminal(nullptr));
}

TEST(ProgressTest, WaitTrackerShares) {
  WaitTracker tracker(2);
  EXPECT_EQ(tracker.Share(), 0.0);
  tracker.Record(0, 10, 100);
  tracker.Record(1, 30, 100);
  tracker.Record(1, 0, 100);
  EXPECT_EQ(tracker.steps(), 3);
  EXPECT_DOUBLE_EQ(tracker.Share(), 40.0 / 300.0);
  EXPECT_DOUBLE_EQ(tracker.Share(0), 0.1);
  EXPECT_DOUBLE_EQ(tracker.Share(1), 0.15);
  // Invalid records are ignored.
  tracker.Record(2, 10, 10);
  tracker.Record(-1, 10, 10);
  tracker.Record(0, -1, 10);
  tracker.Record(0, 1, -10);
  EXPECT_EQ(tracker.steps(), 3);
  EXPECT_EQ(tracker.Share(7), 0.0);
  tracker.Reset();
  EXPECT_EQ(tracker.steps(), 0);
  EXPECT_EQ(tracker.Share(), 0.0);
}

TEST(ProgressTest, WaitTrackerUnderConcurrentReplicas) {
#if defined(SLUICE_SANITIZED_BUILD)
  constexpr int kSteps = 2000;
#else
  constexpr int kSteps = 50000;
#endif
  constexpr int kReplicas = 4;
  WaitTracker tracker(kReplicas);
  std::atomic<bool> done{false};
  std::vector<std::thread> replicas;
  for (int r = 0; r < kReplicas; ++r) {
    replicas.emplace_back([&tracker, r] {
      // Replica r waits (r + 1) ns of every 10 ns step.
      for (int step = 0; step < kSteps; ++step) tracker.Record(r, r + 1, 10);
    });
  }
  // A reader polls while the replicas write; every snapshot must stay within [0, 1].
  std::thread reader([&tracker, &done] {
    for (int i = 0; i < 100000 && !done.load(std::memory_order_acquire); ++i) {
      const double share = tracker.Share();
      ASSERT_GE(share, 0.0);
      ASSERT_LE(share, 1.0);
    }
  });
  for (std::thread& t : replicas) t.join();
  done.store(true, std::memory_order_release);
  reader.join();
  EXPECT_EQ(tracker.steps(), kReplicas * kSteps);
  EXPECT_EQ(tracker.wait_nanos(), int64_t{kSteps} * (1 + 2 + 3 + 4));
  EXPECT_EQ(tracker.step_nanos(), int64_t{kSteps} * kReplicas * 10);
  EXPECT_DOUBLE_EQ(tracker.Share(), 10.0 / 40.0);
  for (int r = 0; r < kReplicas; ++r) EXPECT_DOUBLE_EQ(tracker.Share(r), (r + 1) / 10.0);
}

TEST(ProgressTest, RunSummary) {
  RunSummary summary{.epochs = 5,
                     .num_replicas = 2,
                     .images = 300000,
                     .train_seconds = 25.0,
                     .test_accuracy = 0.87124,
                     .test_loss = 0.36211,
                     .input_wait_share = 0.0321};
  EXPECT_EQ(FormatRunSummary(summary),
            "run: 5 epochs, 2 replicas, 300000 images in 0:25 (12000 img/s)\n"
            "test accuracy 0.8712, test loss 0.3621\n"
            "replicas waited for input 3.2% of their step time\n");
  summary.epochs = 1;
  summary.num_replicas = 1;
  summary.train_seconds = 0.0;
  EXPECT_THAT(FormatRunSummary(summary), StartsWith("run: 1 epoch, 1 replica, 300000 images in 0:00 (0 img/s)\n"));
}

}  // namespace
}  // namespace progress_test_file
}  // namespace fashion_mnist
