#include "sluice/distribute/detail/replica_queue.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/engine/status_macros.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "sluice/engine/thread_pool.h"

namespace sluice::distribute {
namespace replica_queue_test_file {
namespace {

#if defined(SLUICE_SANITIZED_BUILD)
constexpr int64_t kManyItems = 100'000;
#else
constexpr int64_t kManyItems = 1'000'000;
#endif

// Waits (bounded: 10 s) until `pred` holds; returns whether it did.
template <class Pred>
bool WaitFor(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Pops until the end; checks FIFO order 0, 1, 2, ... and returns the count.
Task<absl::StatusOr<int64_t>> ConsumeInOrder(ReplicaQueue<int64_t>* queue) {
  int64_t expected = 0;
  for (;;) {
    SLUICE_CO_ASSIGN_OR_RETURN(std::optional<int64_t> v, co_await queue->Pop());
    if (!v) co_return expected;
    if (*v != expected) {
      co_return absl::InternalError("out of order");
    }
    ++expected;
  }
}

Task<absl::Status> ProduceRange(ReplicaQueue<int64_t>* queue, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    SLUICE_CO_RETURN_IF_ERROR(co_await queue->Push(i));
  }
  queue->Close();
  co_return absl::OkStatus();
}

Task<absl::StatusOr<std::optional<int64_t>>> PopOnce(ReplicaQueue<int64_t>* queue) {
  co_return co_await queue->Pop();
}

Task<absl::Status> PushOnce(ReplicaQueue<int64_t>* queue, int64_t v) { co_return co_await queue->Push(v); }

TEST(ReplicaQueueTest, FifoWithinCapacityAndTryPushFailsWhenFull) {
  ReplicaQueue<int64_t> q(3);
  EXPECT_EQ(q.capacity(), 3u);
  EXPECT_TRUE(q.TryPush(1));
  EXPECT_TRUE(q.TryPush(2));
  EXPECT_TRUE(q.TryPush(3));
  int64_t four = 4;
  EXPECT_FALSE(q.TryPush(std::move(four)));
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(q.TryPop(), 1);
  EXPECT_TRUE(q.TryPush(4));
  EXPECT_EQ(q.TryPop(), 2);
  EXPECT_EQ(q.TryPop(), 3);
  EXPECT_EQ(q.TryPop(), 4);
  EXPECT_EQ(q.TryPop(), std::nullopt);
}

TEST(ReplicaQueueTest, ZeroCapacityMeansOne) {
  ReplicaQueue<int64_t> q(0);
  EXPECT_EQ(q.capacity(), 1u);
  EXPECT_TRUE(q.TryPush(1));
  EXPECT_FALSE(q.TryPush(2));
}

TEST(ReplicaQueueTest, MoveOnlyValuesWithoutDefaultConstructor) {
  struct NoDefault {
    explicit NoDefault(int v) : p(std::make_unique<int>(v)) {}
    std::unique_ptr<int> p;
  };
  ReplicaQueue<NoDefault> q(2);
  EXPECT_TRUE(q.PushBlocking(NoDefault(7)).ok());
  absl::StatusOr<std::optional<NoDefault>> v = q.PopBlocking();
  ASSERT_TRUE(v.ok());
  ASSERT_TRUE(v->has_value());
  EXPECT_EQ(*(*v)->p, 7);
}

TEST(ReplicaQueueTest, CloseDrainsThenEnds) {
  ReplicaQueue<int64_t> q(4);
  ASSERT_TRUE(q.PushBlocking(10).ok());
  ASSERT_TRUE(q.PushBlocking(11).ok());
  q.Close();
  q.Close();  // idempotent
  EXPECT_TRUE(q.closed());
  absl::Status after = q.PushBlocking(12);
  EXPECT_EQ(after.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(after.message(), "ReplicaQueue::Push: queue closed");
  EXPECT_FALSE(q.TryPush(13));
  EXPECT_EQ(SyncWait(PushOnce(&q, 14)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(*q.PopBlocking(), 10);
  EXPECT_EQ(*SyncWait(PopOnce(&q)), 11);
  absl::StatusOr<std::optional<int64_t>> end = q.PopBlocking();
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(*end, std::nullopt);
  EXPECT_EQ(*SyncWait(PopOnce(&q)), std::nullopt);
}

TEST(ReplicaQueueTest, CloseWakesParkedPopWithEnd) {
  ReplicaQueue<int64_t> q(2);
  absl::StatusOr<std::optional<int64_t>> result = absl::UnknownError("unset");
  std::thread consumer([&] { result = SyncWait(PopOnce(&q)); });
  ASSERT_TRUE(WaitFor([&] { return q.pop_waiting(); }));
  q.Close();
  consumer.join();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*result, std::nullopt);
}

TEST(ReplicaQueueTest, CloseFailsParkedPush) {
  ReplicaQueue<int64_t> q(1);
  ASSERT_TRUE(q.TryPush(1));
  absl::Status result = absl::UnknownError("unset");
  std::thread producer([&] { result = q.PushBlocking(2); });
  ASSERT_TRUE(WaitFor([&] { return q.push_waiting(); }));
  q.Close();
  producer.join();
  EXPECT_EQ(result.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(q.TryPop(), 1);  // the parked value was dropped, the buffered one drains
  EXPECT_EQ(q.TryPop(), std::nullopt);
}

TEST(ReplicaQueueTest, ParkedPopWokenByPush) {
  ReplicaQueue<int64_t> q(2);
  absl::StatusOr<std::optional<int64_t>> result = absl::UnknownError("unset");
  std::thread consumer([&] { result = SyncWait(PopOnce(&q)); });
  ASSERT_TRUE(WaitFor([&] { return q.pop_waiting(); }));
  EXPECT_TRUE(q.TryPush(42));
  consumer.join();
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(*result, 42);
}

TEST(ReplicaQueueTest, CancelParkedCoroutinePop) {
  ReplicaQueue<int64_t> q(2);
  std::stop_source stop;
  absl::StatusOr<std::optional<int64_t>> result = absl::UnknownError("unset");
  std::thread consumer([&] { result = SyncWait(PopOnce(&q), stop.get_token()); });
  ASSERT_TRUE(WaitFor([&] { return q.pop_waiting(); }));
  stop.request_stop();
  consumer.join();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_FALSE(q.pop_waiting());
  // The cancelled pop consumed nothing; the queue still works both ways.
  EXPECT_TRUE(q.TryPush(5));
  EXPECT_EQ(*SyncWait(PopOnce(&q)), 5);
}

TEST(ReplicaQueueTest, CancelParkedCoroutinePush) {
  ReplicaQueue<int64_t> q(1);
  ASSERT_TRUE(q.TryPush(1));
  std::stop_source stop;
  absl::Status result = absl::UnknownError("unset");
  std::thread producer([&] { result = SyncWait(PushOnce(&q, 2), stop.get_token()); });
  ASSERT_TRUE(WaitFor([&] { return q.push_waiting(); }));
  stop.request_stop();
  producer.join();
  EXPECT_EQ(result.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(q.size(), 1u);  // the cancelled value was never enqueued
  EXPECT_EQ(q.TryPop(), 1);
  EXPECT_EQ(q.TryPop(), std::nullopt);
  EXPECT_TRUE(q.TryPush(3));
}

TEST(ReplicaQueueTest, CancelBlockingCallsAndAlreadyStopped) {
  ReplicaQueue<int64_t> q(1);
  std::stop_source stop;
  absl::StatusOr<std::optional<int64_t>> popped = absl::UnknownError("unset");
  std::thread consumer([&] { popped = q.PopBlocking(stop.get_token()); });
  ASSERT_TRUE(WaitFor([&] { return q.pop_waiting(); }));
  stop.request_stop();
  consumer.join();
  EXPECT_EQ(popped.status().code(), absl::StatusCode::kCancelled);
  // Stop already requested: no effect even when the operation could complete at once.
  EXPECT_EQ(q.PushBlocking(1, stop.get_token()).code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(q.size(), 0u);
  EXPECT_EQ(SyncWait(PushOnce(&q, 1), stop.get_token()).code(), absl::StatusCode::kCancelled);
  ASSERT_TRUE(q.TryPush(2));
  EXPECT_EQ(q.PopBlocking(stop.get_token()).status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(SyncWait(PopOnce(&q), stop.get_token()).status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(q.TryPop(), 2);
}

// Races a stop request against a push that would wake the parked pop: exactly one wins, and no element is
// lost or duplicated either way.
TEST(ReplicaQueueTest, CancelRacesWakeUp) {
  constexpr int kRounds = 200;
  for (int round = 0; round < kRounds; ++round) {
    ReplicaQueue<int64_t> q(1);
    std::stop_source stop;
    absl::StatusOr<std::optional<int64_t>> result = absl::UnknownError("unset");
    std::thread consumer([&] { result = SyncWait(PopOnce(&q), stop.get_token()); });
    std::thread canceller([&] { stop.request_stop(); });
    EXPECT_TRUE(q.TryPush(round));
    canceller.join();
    consumer.join();
    if (result.ok()) {
      EXPECT_EQ(*result, round);
      EXPECT_EQ(q.TryPop(), std::nullopt);
    } else {
      EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
      EXPECT_EQ(q.TryPop(), round);
    }
  }
}

TEST(ReplicaQueueTest, SpscOrderCoroutineConsumerBlockingProducer) {
  ReplicaQueue<int64_t> q(64);
  std::thread producer([&] {
    for (int64_t i = 0; i < kManyItems; ++i) {
      if (!q.PushBlocking(i).ok()) return;
    }
    q.Close();
  });
  absl::StatusOr<int64_t> count = SyncWait(ConsumeInOrder(&q));
  producer.join();
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, kManyItems);
}

TEST(ReplicaQueueTest, SpscOrderBlockingConsumerCoroutineProducer) {
  ReplicaQueue<int64_t> q(64);
  absl::Status produced = absl::UnknownError("unset");
  std::thread producer([&] { produced = SyncWait(ProduceRange(&q, kManyItems)); });
  int64_t expected = 0;
  bool in_order = true;
  for (;;) {
    absl::StatusOr<std::optional<int64_t>> v = q.PopBlocking();
    ASSERT_TRUE(v.ok()) << v.status();
    if (!v->has_value()) break;
    in_order = in_order && **v == expected;
    ++expected;
  }
  producer.join();
  EXPECT_TRUE(produced.ok()) << produced;
  EXPECT_TRUE(in_order);
  EXPECT_EQ(expected, kManyItems);
}

TEST(ReplicaQueueTest, CapacityOneBlockingBothSidesEveryPopSucceeds) {
  ReplicaQueue<int64_t> q(1);
  const int64_t n = kManyItems / 10;
  std::thread producer([&] {
    for (int64_t i = 0; i < n; ++i) {
      if (!q.PushBlocking(i).ok()) return;
    }
    q.Close();
  });
  int64_t expected = 0;
  int errors = 0;
  for (;;) {
    absl::StatusOr<std::optional<int64_t>> v = q.PopBlocking();
    if (!v.ok()) {
      ++errors;
      continue;
    }
    if (!v->has_value()) break;
    EXPECT_EQ(**v, expected);
    ++expected;
  }
  producer.join();
  EXPECT_EQ(errors, 0);
  EXPECT_EQ(expected, n);
}

TEST(ReplicaQueueTest, CoroutinesOnBothSidesResumeThroughExecutor) {
  ThreadPool pool(2);
  ReplicaQueue<int64_t> q(8, &pool);
  absl::Status produced = absl::UnknownError("unset");
  std::thread producer([&] { produced = SyncWait(ProduceRange(&q, kManyItems / 10)); });
  absl::StatusOr<int64_t> count = SyncWait(ConsumeInOrder(&q));
  producer.join();
  EXPECT_TRUE(produced.ok()) << produced;
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, kManyItems / 10);
}

class CountingExecutor final : public Executor {
 public:
  void Execute(std::coroutine_handle<> handle) override {
    executed.fetch_add(1, std::memory_order_relaxed);
    detail::Resume(handle);
  }
  std::atomic<int> executed{0};
};

TEST(ReplicaQueueTest, WokenCoroutineGoesThroughGivenExecutor) {
  CountingExecutor executor;
  ReplicaQueue<int64_t> q(1, &executor);
  absl::StatusOr<std::optional<int64_t>> result = absl::UnknownError("unset");
  std::thread consumer([&] { result = SyncWait(PopOnce(&q)); });
  ASSERT_TRUE(WaitFor([&] { return q.pop_waiting(); }));
  ASSERT_TRUE(q.TryPush(9));
  consumer.join();
  EXPECT_EQ(*result, 9);
  EXPECT_EQ(executor.executed.load(), 1);
}

// The producer is never more than `capacity` elements ahead of the consumer.
TEST(ReplicaQueueTest, BackpressureBoundsElementsInFlight) {
  constexpr size_t kCapacity = 4;
  const int64_t n = kManyItems / 20;
  ReplicaQueue<int64_t> q(kCapacity);
  std::atomic<int64_t> popped{0};
  std::atomic<int64_t> max_ahead{0};
  std::thread producer([&] {
    for (int64_t i = 0; i < n; ++i) {
      if (!q.PushBlocking(i).ok()) return;
      // i + 1 pushed; the consumer counts a pop just after taking it, so allow that one in transit.
      int64_t ahead = (i + 1) - popped.load(std::memory_order_acquire);
      int64_t prev = max_ahead.load(std::memory_order_relaxed);
      while (ahead > prev && !max_ahead.compare_exchange_weak(prev, ahead)) {
      }
      EXPECT_LE(q.size(), kCapacity);
    }
    q.Close();
  });
  for (;;) {
    absl::StatusOr<std::optional<int64_t>> v = q.PopBlocking();
    ASSERT_TRUE(v.ok());
    if (!v->has_value()) break;
    popped.fetch_add(1, std::memory_order_release);
    if (**v % 1024 == 0) std::this_thread::yield();  // let the producer fill up now and then
  }
  producer.join();
  EXPECT_EQ(popped.load(), n);
  EXPECT_LE(max_ahead.load(), static_cast<int64_t>(kCapacity) + 1);
  EXPECT_GE(max_ahead.load(), 1);
}

// Counts live instances, so that memory held by the queue can be bounded.
struct Tracked {
  static std::atomic<int64_t> live;
  static std::atomic<int64_t> max_live;
  explicit Tracked(int64_t v) : value(v) { Add(); }
  Tracked(Tracked&& other) noexcept : value(other.value) { Add(); }
  Tracked& operator=(Tracked&& other) noexcept {
    value = other.value;
    return *this;
  }
  ~Tracked() { live.fetch_sub(1, std::memory_order_relaxed); }
  static void Add() {
    int64_t now = live.fetch_add(1, std::memory_order_relaxed) + 1;
    int64_t prev = max_live.load(std::memory_order_relaxed);
    while (now > prev && !max_live.compare_exchange_weak(prev, now)) {
    }
  }
  int64_t value;
  std::vector<char> payload = std::vector<char>(256);
};
std::atomic<int64_t> Tracked::live{0};
std::atomic<int64_t> Tracked::max_live{0};

Task<absl::Status> ProduceTracked(ReplicaQueue<Tracked>* queue, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    Tracked t(i);
    SLUICE_CO_RETURN_IF_ERROR(co_await queue->Push(std::move(t)));
  }
  queue->Close();
  co_return absl::OkStatus();
}

TEST(ReplicaQueueTest, SlowConsumerFastProducerHoldsBoundedMemory) {
  constexpr size_t kCapacity = 8;
  constexpr int64_t kItems = 2'000;
  Tracked::live = 0;
  Tracked::max_live = 0;
  {
    ReplicaQueue<Tracked> q(kCapacity);
    absl::Status produced = absl::UnknownError("unset");
    std::thread producer([&] { produced = SyncWait(ProduceTracked(&q, kItems)); });
    int64_t expected = 0;
    for (;;) {
      absl::StatusOr<std::optional<Tracked>> v = q.PopBlocking();
      ASSERT_TRUE(v.ok());
      if (!v->has_value()) break;
      EXPECT_EQ((*v)->value, expected);
      ++expected;
      if (expected % 100 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    producer.join();
    EXPECT_TRUE(produced.ok()) << produced;
    EXPECT_EQ(expected, kItems);
  }
  // Buffered (capacity) + the producer's local, its awaiter copy and one in the storage's move + the
  // consumer's result and slot: a small constant, independent of kItems.
  EXPECT_LE(Tracked::max_live.load(), static_cast<int64_t>(kCapacity) + 8);
  EXPECT_EQ(Tracked::live.load(), 0);
}

// One producer thread feeds N queues round-robin; N consumer threads each drain one. Every item arrives
// exactly once, in order per queue.
TEST(ReplicaQueuesTest, FanOutRoundRobinEveryItemOnce) {
  // Capacity 1 makes both sides park and wake all the time, which once exposed a wake-up meant for an
  // element the consumer had already taken (a woken Pop found nothing): every pop must succeed.
  for (std::pair<int, size_t> config : {std::pair<int, size_t>{2, 64}, {4, 64}, {3, 1}}) {
    const int n = config.first;  // not a structured binding: clang 14 cannot capture those in lambdas
    const size_t capacity = config.second;
    ReplicaQueues<int64_t> queues(n, capacity);
    std::atomic<int> errors{0};
    ASSERT_EQ(queues.size(), n);
    const int64_t total = kManyItems / 20;
    std::vector<std::vector<int64_t>> got(static_cast<size_t>(n));
    std::vector<std::thread> consumers;
    for (int r = 0; r < n; ++r) {
      consumers.emplace_back([&queues, &got, &errors, r] {
        for (;;) {
          absl::StatusOr<std::optional<int64_t>> v = queues[r].PopBlocking();
          if (!v.ok()) {
            errors.fetch_add(1);
            continue;  // keep draining, so the producer is never stuck on a full queue
          }
          if (!v->has_value()) return;
          got[static_cast<size_t>(r)].push_back(**v);
        }
      });
    }
    std::thread producer([&] {
      for (int64_t i = 0; i < total; ++i) {
        if (!queues[static_cast<int>(i % n)].PushBlocking(i).ok()) return;
      }
      queues.Close();
    });
    producer.join();
    for (std::thread& t : consumers) t.join();
    std::vector<int> seen(static_cast<size_t>(total), 0);
    for (int r = 0; r < n; ++r) {
      int64_t prev = -1;
      for (int64_t v : got[static_cast<size_t>(r)]) {
        ASSERT_GE(v, 0);
        ASSERT_LT(v, total);
        EXPECT_EQ(v % n, r);
        EXPECT_GT(v, prev);
        prev = v;
        ++seen[static_cast<size_t>(v)];
      }
    }
    int64_t once = 0;
    for (int s : seen) once += (s == 1) ? 1 : 0;
    EXPECT_EQ(once, total);
    EXPECT_EQ(errors.load(), 0);
  }
}

TEST(ReplicaQueuesTest, CloseEndsEveryReplica) {
  ReplicaQueues<int64_t> queues(3, 2);
  ASSERT_TRUE(queues[1].TryPush(7));
  queues.Close();
  for (int r = 0; r < 3; ++r) EXPECT_TRUE(queues[r].closed());
  EXPECT_EQ(*queues[1].PopBlocking(), 7);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(*queues[r].PopBlocking(), std::nullopt);
  ReplicaQueues<int64_t> none(0, 2);
  EXPECT_EQ(none.size(), 0);
}

}  // namespace
}  // namespace replica_queue_test_file
}  // namespace sluice::distribute
