#include "sluice/engine/channel.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <latch>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/engine/async_scope.h"
#include "sluice/engine/executor.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "tests/sanitized_build.h"

namespace sluice {
namespace channel_test_file {
namespace {

// Test coroutines are free functions: no capturing lambda coroutines (STYLE.md).
Task<absl::Status> PushOne(Channel<int>* ch, int v) { co_return co_await ch->Push(v); }

Task<absl::StatusOr<std::optional<int>>> PopOne(Channel<int>* ch) { co_return co_await ch->Pop(); }

// Records the outcome of one Pop in *out, for tasks spawned into a scope.
Task<void> PopInto(Channel<int>* ch, std::optional<absl::StatusOr<std::optional<int>>>* out) {
  absl::StatusOr<std::optional<int>> r = co_await ch->Pop();
  out->emplace(std::move(r));
}

Task<void> PushInto(Channel<int>* ch, int v, std::optional<absl::Status>* out) {
  absl::Status s = co_await ch->Push(v);
  out->emplace(std::move(s));
}

// Pushes [first, first + n), counting successes; stops at the first error.
Task<absl::Status> PushRange(Channel<int>* ch, int first, int n, int* pushed) {
  for (int i = first; i < first + n; ++i) {
    absl::Status s = co_await ch->Push(i);
    if (!s.ok()) co_return s;
    ++*pushed;
  }
  co_return absl::OkStatus();
}

// Pops until end of stream, appending to *out.
Task<absl::Status> PopAll(Channel<int>* ch, std::vector<int>* out) {
  for (;;) {
    absl::StatusOr<std::optional<int>> v = co_await ch->Pop();
    if (!v.ok()) co_return v.status();
    if (!v->has_value()) co_return absl::OkStatus();
    out->push_back(**v);
  }
}

TEST(ChannelTest, CapacityAndEmptyState) {
  Channel<int> ch(3);
  EXPECT_EQ(ch.capacity(), 3u);
  EXPECT_EQ(ch.size(), 0u);
  EXPECT_FALSE(ch.closed());
  Channel<int> zero(0);
  EXPECT_EQ(zero.capacity(), 1u);
}

TEST(ChannelTest, CoroutinePushThenPopIsFifo) {
  Channel<int> ch(8);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(SyncWait(PushOne(&ch, i)).ok());
  EXPECT_EQ(ch.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    absl::StatusOr<std::optional<int>> v = SyncWait(PopOne(&ch));
    ASSERT_TRUE(v.ok());
    ASSERT_TRUE(v->has_value());
    EXPECT_EQ(**v, i);
  }
  EXPECT_EQ(ch.size(), 0u);
}

TEST(ChannelTest, TryPushTryPop) {
  Channel<std::unique_ptr<int>> ch(2);
  EXPECT_EQ(ch.TryPop(), std::nullopt);
  std::unique_ptr<int> a = std::make_unique<int>(1);
  std::unique_ptr<int> b = std::make_unique<int>(2);
  std::unique_ptr<int> c = std::make_unique<int>(3);
  EXPECT_TRUE(ch.TryPush(a));
  EXPECT_EQ(a, nullptr);  // moved into the channel
  EXPECT_TRUE(ch.TryPush(b));
  EXPECT_FALSE(ch.TryPush(c));  // full: left with the caller
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(*c, 3);
  std::optional<std::unique_ptr<int>> got = ch.TryPop();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(**got, 1);
  EXPECT_TRUE(ch.TryPush(c));
  EXPECT_EQ(**ch.TryPop(), 2);
  EXPECT_EQ(**ch.TryPop(), 3);
  EXPECT_EQ(ch.TryPop(), std::nullopt);
}

TEST(ChannelTest, LimitBoundsTheBufferAndRaisingItLetsWaitingPushersIn) {
  Channel<int> ch(8);
  EXPECT_EQ(ch.limit(), 8u);
  ch.SetLimit(2);
  ch.SetLimit(0);  // clamped to 1
  EXPECT_EQ(ch.limit(), 1u);
  ch.SetLimit(2);
  int v = 1;
  EXPECT_TRUE(ch.TryPush(v));
  v = 2;
  EXPECT_TRUE(ch.TryPush(v));
  v = 3;
  EXPECT_FALSE(ch.TryPush(v));  // at the limit, below the capacity
  std::atomic<bool> pushed{false};
  std::thread producer([&] {
    EXPECT_TRUE(ch.PushBlocking(3).ok());
    pushed.store(true);
  });
  // Bounded wait until the producer is parked (its value cannot go in while the limit is 2).
  for (int i = 0; i < 200 && ch.size() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ch.SetLimit(3);  // the waiting pusher's value goes in now
  producer.join();
  EXPECT_TRUE(pushed.load());
  EXPECT_EQ(ch.size(), 3u);
  ch.SetLimit(1);  // below the count: nothing is dropped, pushes wait until pops bring it under
  v = 4;
  EXPECT_FALSE(ch.TryPush(v));
  EXPECT_EQ(*ch.TryPop(), 1);
  EXPECT_EQ(*ch.TryPop(), 2);
  EXPECT_FALSE(ch.TryPush(v));
  EXPECT_EQ(*ch.TryPop(), 3);
  EXPECT_TRUE(ch.TryPush(v));
  EXPECT_EQ(*ch.TryPop(), 4);
  EXPECT_EQ(ch.capacity(), 8u);
}

TEST(ChannelTest, PendingPopIsWokenByPush) {
  Channel<int> ch(4);
  std::optional<absl::StatusOr<std::optional<int>>> out;
  AsyncScope scope;
  scope.Spawn(PopInto(&ch, &out));
  EXPECT_FALSE(out.has_value());  // suspended: nothing to pop
  EXPECT_EQ(scope.pending(), 1u);
  int v = 42;
  EXPECT_TRUE(ch.TryPush(v));
  // Resumed inline by TryPush (no executor): the value went straight to the waiter.
  ASSERT_TRUE(out.has_value());
  ASSERT_TRUE(out->ok());
  EXPECT_EQ(**out, std::optional<int>(42));
  EXPECT_EQ(ch.size(), 0u);
  scope.JoinBlocking();
}

TEST(ChannelTest, BackpressureSuspendsProducerUntilPop) {
  Channel<int> ch(2);
  int pushed = 0;
  AsyncScope scope;
  scope.Spawn(PushRange(&ch, 0, 5, &pushed));
  EXPECT_EQ(pushed, 2);  // blocked on the third
  EXPECT_EQ(ch.size(), 2u);
  EXPECT_EQ(ch.TryPop(), std::optional<int>(0));
  EXPECT_EQ(pushed, 3);  // the waiting value took the freed slot, then blocked on the fourth
  EXPECT_EQ(ch.size(), 2u);
  std::vector<int> rest;
  while (std::optional<int> v = ch.TryPop()) rest.push_back(*v);
  EXPECT_EQ(rest, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(pushed, 5);
  scope.JoinBlocking();
  EXPECT_TRUE(scope.first_error().ok());
}

TEST(ChannelTest, CloseDrainsThenEnds) {
  Channel<int> ch(4);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(SyncWait(PushOne(&ch, i)).ok());
  ch.Close();
  ch.Close();  // idempotent
  EXPECT_TRUE(ch.closed());
  absl::Status s = SyncWait(PushOne(&ch, 9));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  int v = 9;
  EXPECT_FALSE(ch.TryPush(v));
  EXPECT_EQ(v, 9);
  std::vector<int> got;
  ASSERT_TRUE(SyncWait(PopAll(&ch, &got)).ok());
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2}));
  absl::StatusOr<std::optional<int>> end = ch.PopBlocking();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
}

TEST(ChannelTest, CloseWakesPendingPopsWithEnd) {
  Channel<int> ch(4);
  std::optional<absl::StatusOr<std::optional<int>>> a, b;
  AsyncScope scope;
  scope.Spawn(PopInto(&ch, &a));
  scope.Spawn(PopInto(&ch, &b));
  EXPECT_FALSE(a.has_value());
  ch.Close();
  ASSERT_TRUE(a.has_value() && b.has_value());
  ASSERT_TRUE(a->ok());
  ASSERT_TRUE(b->ok());
  EXPECT_FALSE((*a)->has_value());
  EXPECT_FALSE((*b)->has_value());
  scope.JoinBlocking();
}

TEST(ChannelTest, CloseFailsPendingPushesButKeepsBuffered) {
  Channel<int> ch(1);
  int first = 1;
  ASSERT_TRUE(ch.TryPush(first));
  std::optional<absl::Status> p2, p3;
  AsyncScope scope;
  scope.Spawn(PushInto(&ch, 2, &p2));
  scope.Spawn(PushInto(&ch, 3, &p3));
  EXPECT_FALSE(p2.has_value());
  ch.Close();
  ASSERT_TRUE(p2.has_value() && p3.has_value());
  EXPECT_EQ(p2->code(), absl::StatusCode::kFailedPrecondition) << *p2;
  EXPECT_EQ(p3->code(), absl::StatusCode::kFailedPrecondition) << *p3;
  EXPECT_EQ(ch.TryPop(), std::optional<int>(1));
  EXPECT_EQ(ch.TryPop(), std::nullopt);
  scope.JoinBlocking();
}

TEST(ChannelTest, StopRequestedBeforeAwaitCancelsWithoutTouchingChannel) {
  Channel<int> ch(2);
  int v = 5;
  ASSERT_TRUE(ch.TryPush(v));
  std::stop_source stop;
  stop.request_stop();
  absl::StatusOr<std::optional<int>> pop = SyncWait(PopOne(&ch), stop.get_token());
  EXPECT_EQ(pop.status().code(), absl::StatusCode::kCancelled);
  absl::Status push = SyncWait(PushOne(&ch, 6), stop.get_token());
  EXPECT_EQ(push.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(ch.size(), 1u);
  EXPECT_EQ(ch.PopBlocking(stop.get_token()).status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(ch.PushBlocking(7, stop.get_token()).code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(ch.TryPop(), std::optional<int>(5));
}

TEST(ChannelTest, CancelPendingPopConsumesNothing) {
  Channel<int> ch(2);
  std::optional<absl::StatusOr<std::optional<int>>> out;
  {
    AsyncScope scope;
    scope.Spawn(PopInto(&ch, &out));
    EXPECT_FALSE(out.has_value());
    scope.RequestStop();
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(out->status().code(), absl::StatusCode::kCancelled) << out->status();
  }
  int v = 11;
  ASSERT_TRUE(ch.TryPush(v));  // no stale waiter takes it
  EXPECT_EQ(ch.TryPop(), std::optional<int>(11));
}

TEST(ChannelTest, CancelPendingPushEnqueuesNothing) {
  Channel<int> ch(1);
  int first = 1;
  ASSERT_TRUE(ch.TryPush(first));
  std::optional<absl::Status> out;
  {
    AsyncScope scope;
    scope.Spawn(PushInto(&ch, 2, &out));
    scope.RequestStop();
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(out->code(), absl::StatusCode::kCancelled) << *out;
  }
  EXPECT_EQ(ch.TryPop(), std::optional<int>(1));
  EXPECT_EQ(ch.TryPop(), std::nullopt);
}

TEST(ChannelTest, CancelOneOfSeveralWaitersKeepsOthersInOrder) {
  Channel<int> ch(1);
  std::optional<absl::StatusOr<std::optional<int>>> a, b, c;
  AsyncScope scope_a, scope_b, scope_c;
  scope_a.Spawn(PopInto(&ch, &a));
  scope_b.Spawn(PopInto(&ch, &b));
  scope_c.Spawn(PopInto(&ch, &c));
  scope_b.RequestStop();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->status().code(), absl::StatusCode::kCancelled);
  int v1 = 1, v2 = 2;
  ASSERT_TRUE(ch.TryPush(v1));
  ASSERT_TRUE(ch.TryPush(v2));
  ASSERT_TRUE(a.has_value() && c.has_value());
  EXPECT_EQ(**a, std::optional<int>(1));
  EXPECT_EQ(**c, std::optional<int>(2));
}

TEST(ChannelTest, BlockingSideFifoAcrossThreads) {
  constexpr int kItems = 20000 / testing_util::kSanitizerSlowdown;
  Channel<int> ch(16);
  std::thread producer([&ch] {
    for (int i = 0; i < kItems; ++i) ASSERT_TRUE(ch.PushBlocking(i).ok());
    ch.Close();
  });
  std::vector<int> got;
  for (;;) {
    absl::StatusOr<std::optional<int>> v = ch.PopBlocking();
    ASSERT_TRUE(v.ok());
    if (!v->has_value()) break;
    got.push_back(**v);
  }
  producer.join();
  ASSERT_EQ(got.size(), static_cast<size_t>(kItems));
  for (int i = 0; i < kItems; ++i) ASSERT_EQ(got[i], i);
}

TEST(ChannelTest, CoroutineFifoAcrossThreads) {
  constexpr int kItems = 20000 / testing_util::kSanitizerSlowdown;
  Channel<int> ch(4);
  int pushed = 0;
  std::thread producer([&] {
    EXPECT_TRUE(SyncWait(PushRange(&ch, 0, kItems, &pushed)).ok());
    ch.Close();
  });
  std::vector<int> got;
  EXPECT_TRUE(SyncWait(PopAll(&ch, &got)).ok());
  producer.join();
  EXPECT_EQ(pushed, kItems);
  ASSERT_EQ(got.size(), static_cast<size_t>(kItems));
  for (int i = 0; i < kItems; ++i) ASSERT_EQ(got[i], i);
}

TEST(ChannelTest, BlockingPopCancelledFromAnotherThread) {
  Channel<int> ch(2);
  std::stop_source stop;
  std::thread stopper([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // usually lets the pop block first
    stop.request_stop();
  });
  absl::StatusOr<std::optional<int>> v = ch.PopBlocking(stop.get_token());
  stopper.join();
  EXPECT_EQ(v.status().code(), absl::StatusCode::kCancelled) << v.status();
  int x = 3;
  ASSERT_TRUE(ch.TryPush(x));
  EXPECT_EQ(ch.TryPop(), std::optional<int>(3));
}

TEST(ChannelTest, BlockingPushCancelledFromAnotherThread) {
  Channel<int> ch(1);
  ASSERT_TRUE(ch.PushBlocking(1).ok());
  std::stop_source stop;
  std::thread stopper([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stop.request_stop();
  });
  absl::Status s = ch.PushBlocking(2, stop.get_token());
  stopper.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  EXPECT_EQ(ch.size(), 1u);
  EXPECT_EQ(ch.TryPop(), std::optional<int>(1));
}

// --- Multi-producer multi-consumer -------------------------------------------------------------------

struct Totals {
  std::atomic<int64_t> sum{0};
  std::atomic<int64_t> count{0};
};

Task<absl::Status> ProduceRange(Channel<int64_t>* ch, int64_t first, int64_t n) {
  for (int64_t i = first; i < first + n; ++i) {
    absl::Status s = co_await ch->Push(i);
    if (!s.ok()) co_return s;
  }
  co_return absl::OkStatus();
}

// Counts every value as it arrives, so a round cancelled halfway keeps what it received.
Task<absl::Status> ConsumeAll(Channel<int64_t>* ch, Totals* totals) {
  for (;;) {
    absl::StatusOr<std::optional<int64_t>> v = co_await ch->Pop();
    if (!v.ok()) co_return v.status();
    if (!v->has_value()) co_return absl::OkStatus();
    totals->sum.fetch_add(**v, std::memory_order_relaxed);
    totals->count.fetch_add(1, std::memory_order_relaxed);
  }
}

TEST(ChannelTest, MultiProducerMultiConsumerMixedSides) {
  constexpr int kProducers = 4;
  constexpr int kConsumers = 4;
  constexpr int64_t kPerProducer = 50000 / testing_util::kSanitizerSlowdown;
  Channel<int64_t> ch(64);
  Totals totals;
  std::vector<std::thread> producers, consumers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&ch, p] {
      const int64_t first = p * kPerProducer;
      if (p % 2 == 0) {
        EXPECT_TRUE(SyncWait(ProduceRange(&ch, first, kPerProducer)).ok());
      } else {
        for (int64_t i = first; i < first + kPerProducer; ++i) ASSERT_TRUE(ch.PushBlocking(i).ok());
      }
    });
  }
  for (int c = 0; c < kConsumers; ++c) {
    consumers.emplace_back([&ch, &totals, c] {
      if (c % 2 == 0) {
        EXPECT_TRUE(SyncWait(ConsumeAll(&ch, &totals)).ok());
      } else {
        int64_t sum = 0, count = 0;
        for (;;) {
          absl::StatusOr<std::optional<int64_t>> v = ch.PopBlocking();
          ASSERT_TRUE(v.ok());
          if (!v->has_value()) break;
          sum += **v;
          ++count;
        }
        totals.sum += sum;
        totals.count += count;
      }
    });
  }
  for (std::thread& t : producers) t.join();
  ch.Close();
  for (std::thread& t : consumers) t.join();
  const int64_t n = kProducers * kPerProducer;
  EXPECT_EQ(totals.count.load(), n);
  EXPECT_EQ(totals.sum.load(), n * (n - 1) / 2);
}

// --- Cancellation storm ------------------------------------------------------------------------------

// A thread's current stop source, replaceable between rounds. The stopper requests stop under mu so the
// owning thread cannot destroy the source mid-request.
struct StopSlot {
  std::mutex mu;
  std::stop_source source;
};

// Pushes values from *next on, advancing it only for values that were enqueued.
Task<absl::Status> ProduceRound(Channel<int64_t>* ch, int64_t* next, int64_t end) {
  while (*next < end) {
    absl::Status s = co_await ch->Push(*next);
    if (!s.ok()) co_return s;
    ++*next;
  }
  co_return absl::OkStatus();
}

TEST(ChannelTest, CancellationStormLosesNothing) {
  constexpr int kProducers = 3;
  constexpr int kConsumers = 4;
  constexpr int64_t kPerProducer = 20000 / testing_util::kSanitizerSlowdown;
  constexpr int kMinStops = 50;
  constexpr int kMaxStops = 100000 / testing_util::kSanitizerSlowdown;
  Channel<int64_t> ch(8);
  Totals totals;
  std::vector<StopSlot> slots(kProducers + kConsumers);
  std::atomic<int> cancelled_rounds{0};
  std::atomic<bool> done{false};

  auto new_token = [&slots](int i) {
    std::lock_guard<std::mutex> lock(slots[i].mu);
    slots[i].source = std::stop_source();
    return slots[i].source.get_token();
  };

  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      int64_t next = p * kPerProducer;
      const int64_t end = next + kPerProducer;
      for (int round = 0; next < end && round < 1000000; ++round) {
        std::stop_token token = new_token(p);
        absl::Status s = p == 0 ? ch.PushBlocking(next, token) : SyncWait(ProduceRound(&ch, &next, end), token);
        if (p == 0 && s.ok()) ++next;
        if (s.code() == absl::StatusCode::kCancelled) ++cancelled_rounds;
        ASSERT_TRUE(s.ok() || s.code() == absl::StatusCode::kCancelled) << s;
      }
      EXPECT_EQ(next, end);
    });
  }
  for (int c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&, c] {
      const int slot = kProducers + c;
      for (int round = 0; round < 1000000; ++round) {
        std::stop_token token = new_token(slot);
        if (c == 0) {
          absl::StatusOr<std::optional<int64_t>> v = ch.PopBlocking(token);
          if (v.ok() && !v->has_value()) return;
          if (v.ok()) {
            totals.sum += **v;
            ++totals.count;
          } else {
            ASSERT_EQ(v.status().code(), absl::StatusCode::kCancelled) << v.status();
            ++cancelled_rounds;
          }
        } else {
          absl::Status s = SyncWait(ConsumeAll(&ch, &totals), token);
          if (s.ok()) return;  // end of stream
          ASSERT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
          ++cancelled_rounds;
        }
      }
    });
  }
  // Stops a random thread's current round every few microseconds for as long as the producers run (at
  // least kMinStops times, at most kMaxStops).
  std::thread stopper([&] {
    uint32_t rng = 12345;
    for (int i = 0; i < kMaxStops && (i < kMinStops || !done.load()); ++i) {
      rng = rng * 1103515245u + 12345u;
      StopSlot& slot = slots[(rng >> 16) % slots.size()];
      {
        std::lock_guard<std::mutex> lock(slot.mu);
        slot.source.request_stop();
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  });
  for (int i = 0; i < kProducers; ++i) threads[i].join();
  done = true;
  stopper.join();  // before Close, so every stop lands while the consumers still run
  ch.Close();
  for (size_t i = kProducers; i < threads.size(); ++i) threads[i].join();
  const int64_t n = kProducers * kPerProducer;
  EXPECT_EQ(totals.count.load(), n);
  EXPECT_EQ(totals.sum.load(), n * (n - 1) / 2);
  EXPECT_EQ(ch.size(), 0u);
  // The exact number depends on scheduling; at least one of kMinStops stops hits a live round.
  EXPECT_GT(cancelled_rounds.load(), 0);
  std::printf("cancelled rounds: %d\n", cancelled_rounds.load());
}

// A pop waiter is cancelled while a push is handing it a value: exactly one of them wins.
TEST(ChannelTest, CancelRacingWithWakeUp) {
  constexpr int kIterations = 2000 / testing_util::kSanitizerSlowdown;
  int delivered = 0, cancelled = 0;
  for (int i = 0; i < kIterations; ++i) {
    Channel<int> ch(1);
    std::optional<absl::StatusOr<std::optional<int>>> out;
    AsyncScope scope;
    scope.Spawn(PopInto(&ch, &out));
    std::latch start(2);
    std::thread pusher([&] {
      start.arrive_and_wait();
      int v = i;
      EXPECT_TRUE(ch.TryPush(v));
    });
    std::thread stopper([&] {
      start.arrive_and_wait();
      scope.RequestStop();
    });
    pusher.join();
    stopper.join();
    scope.JoinBlocking();
    ASSERT_TRUE(out.has_value());
    if (out->ok()) {
      ASSERT_EQ(**out, std::optional<int>(i));
      EXPECT_EQ(ch.size(), 0u);
      ++delivered;
    } else {
      ASSERT_EQ(out->status().code(), absl::StatusCode::kCancelled);
      EXPECT_EQ(ch.TryPop(), std::optional<int>(i));  // the value stayed in the channel
      ++cancelled;
    }
  }
  EXPECT_EQ(delivered + cancelled, kIterations);
}

// A push waiting on a full channel is cancelled while a pop frees its slot: the value is either in the
// channel (push OK) or nowhere (push Cancelled), never both or lost.
TEST(ChannelTest, CancelPushRacingWithPop) {
  constexpr int kIterations = 2000 / testing_util::kSanitizerSlowdown;
  int pushed = 0, cancelled = 0;
  for (int i = 0; i < kIterations; ++i) {
    Channel<int> ch(1);
    int first = -1;
    ASSERT_TRUE(ch.TryPush(first));
    std::optional<absl::Status> out;
    AsyncScope scope;
    scope.Spawn(PushInto(&ch, i, &out));
    std::latch start(2);
    std::thread popper([&] {
      start.arrive_and_wait();
      EXPECT_EQ(ch.TryPop(), std::optional<int>(-1));
    });
    std::thread stopper([&] {
      start.arrive_and_wait();
      scope.RequestStop();
    });
    popper.join();
    stopper.join();
    scope.JoinBlocking();
    ASSERT_TRUE(out.has_value());
    if (out->ok()) {
      EXPECT_EQ(ch.TryPop(), std::optional<int>(i));
      ++pushed;
    } else {
      ASSERT_EQ(out->code(), absl::StatusCode::kCancelled) << *out;
      EXPECT_EQ(ch.size(), 0u);
      ++cancelled;
    }
  }
  EXPECT_EQ(pushed + cancelled, kIterations);
}

// --- Executor -----------------------------------------------------------------------------------------

// Runs handed-over coroutines on one background thread, to check resumption goes through the executor.
class OneThreadExecutor final : public Executor {
 public:
  OneThreadExecutor() : thread_([this] { Loop(); }) {}
  ~OneThreadExecutor() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  void Execute(std::coroutine_handle<> handle) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(handle);
    }
    cv_.notify_one();
  }
  std::thread::id id() const { return thread_.get_id(); }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      std::coroutine_handle<> h = queue_.front();
      queue_.erase(queue_.begin());
      lock.unlock();
      detail::Resume(h);
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::coroutine_handle<>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

Task<absl::StatusOr<std::thread::id>> PopThenReportThread(Channel<int>* ch) {
  absl::StatusOr<std::optional<int>> v = co_await ch->Pop();
  if (!v.ok()) co_return v.status();
  co_return std::this_thread::get_id();
}

TEST(ChannelTest, WokenWaiterResumesOnExecutor) {
  OneThreadExecutor executor;
  Channel<int> ch(1, &executor);
  std::thread consumer_thread;
  absl::StatusOr<std::thread::id> resumed_on = absl::UnknownError("not run");
  consumer_thread = std::thread([&] { resumed_on = SyncWait(PopThenReportThread(&ch)); });
  ASSERT_TRUE(ch.PushBlocking(1).ok());
  consumer_thread.join();
  ASSERT_TRUE(resumed_on.ok()) << resumed_on.status();
  // Either the pop found the value at once (ran on consumer_thread) or it waited and was resumed by
  // the executor; it is never resumed on this (the pushing) thread.
  EXPECT_NE(*resumed_on, std::this_thread::get_id());
}

Task<void> PopAndRecordThread(Channel<int>* ch, std::optional<absl::StatusOr<std::optional<int>>>* out,
                              std::thread::id* resumed_on) {
  absl::StatusOr<std::optional<int>> v = co_await ch->Pop();
  *resumed_on = std::this_thread::get_id();
  out->emplace(std::move(v));
}

TEST(ChannelTest, CancelledWaiterResumesOnExecutor) {
  OneThreadExecutor executor;
  Channel<int> ch(1, &executor);
  std::optional<absl::StatusOr<std::optional<int>>> out;
  std::thread::id resumed_on;
  AsyncScope scope;
  scope.Spawn(PopAndRecordThread(&ch, &out, &resumed_on));
  scope.RequestStop();  // the stop callback hands the coroutine to the executor instead of running it here
  scope.JoinBlocking();
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(resumed_on, executor.id());
}

}  // namespace
}  // namespace channel_test_file
}  // namespace sluice
