// `sluice bench fanout`: the fan-out of a DistributedIterator (MirroredStrategy) to 2, 4 and 8 replicas,
// each a thread calling its ReplicaIterator's NextBlocking, against a hand-written fan-out: one producer
// thread slicing each global batch into per-replica views and pushing them into one bounded
// mutex-and-condition-variable queue per replica (capacity: the replica count, sluice's default prefetch
// window). The producer is free on both sides (one pre-built float32 batch of 32 rows per replica, whose
// slices share its buffer), so the figures measure the fan-out: splitting, queues, parking and wake-ups.
// Metric: per-replica batches/s; each side also reports its Next() latency p50 and p99 (all replicas'
// calls together). --size: global batches per run. With more replica threads than cores this measures
// the scheduler as much as the queues.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sluice/dataset.h"
#include "sluice/distribute.h"
#include "sluice/io/tensor.h"
#include "tools/sluice/bench_scenarios.h"
#include "tools/sluice/bench_stats.h"

namespace sluice::tools {
namespace {

constexpr int64_t kDefaultSteps = 20000;
constexpr int64_t kRowsPerReplica = 32;

Tensor GlobalBatch(int replicas) {
  return Tensor::Zeros(DType::kFloat32, Shape({kRowsPerReplica * replicas, 8}));
}

struct ReplicaLog {
  int64_t batches = 0;
  int64_t rows = 0;
  std::vector<double> latencies_us;
  absl::Status status;
};

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Per-replica batches/s, with p50/p99 of every Next() and a check that every row arrived.
absl::StatusOr<Sample> Collect(std::vector<ReplicaLog>& logs, double seconds, int64_t steps, int replicas) {
  std::vector<double> all;
  int64_t batches = 0, rows = 0;
  for (ReplicaLog& log : logs) {
    if (!log.status.ok()) return log.status;
    batches += log.batches;
    rows += log.rows;
    all.insert(all.end(), log.latencies_us.begin(), log.latencies_us.end());
  }
  if (rows != steps * kRowsPerReplica * replicas) {
    return absl::InternalError(
        absl::StrCat("replicas received ", rows, " rows of ", steps * kRowsPerReplica * replicas));
  }
  std::sort(all.begin(), all.end());
  Sample sample;
  sample.value = static_cast<double>(batches) / replicas / seconds;
  sample.extra["next_p50_us"] = Percentile(all, 0.50);
  sample.extra["next_p99_us"] = Percentile(all, 0.99);
  return sample;
}

void RunReplica(ReplicaIterator<Tensor> replica, int64_t steps, ReplicaLog* log) {
  log->latencies_us.reserve(static_cast<size_t>(steps) + 1);
  for (;;) {
    const int64_t start = NowNs();
    auto next = replica.NextBlocking();
    log->latencies_us.push_back(static_cast<double>(NowNs() - start) / 1e3);
    if (!next.ok()) {
      log->status = next.status();
      return;
    }
    if (!next->has_value()) return;
    ++log->batches;
    log->rows += (*next)->shape().dims()[0];
  }
}

absl::StatusOr<Sample> SluiceFanout(int replicas, int64_t steps) {
  MirroredStrategy strategy(replicas);
  auto dist = strategy.DistributeDataset(FromVector<Tensor>({GlobalBatch(replicas)}).Repeat(steps));
  std::vector<ReplicaLog> logs(static_cast<size_t>(replicas));
  const auto start = std::chrono::steady_clock::now();
  {
    auto it = dist.MakeIterator();
    std::vector<std::jthread> threads;
    for (int r = 0; r < replicas; ++r) {
      threads.emplace_back(RunReplica, it.Replica(r), steps, &logs[static_cast<size_t>(r)]);
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return Collect(logs, seconds, steps, replicas);
}

// The hand-written peer: a bounded blocking queue per replica.
class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity) : capacity_(capacity) {}
  void Push(std::optional<Tensor> item) {
    std::unique_lock lock(mu_);
    not_full_.wait(lock, [&] { return items_.size() < capacity_; });
    items_.push_back(std::move(item));
    not_empty_.notify_one();
  }
  std::optional<Tensor> Pop() {
    std::unique_lock lock(mu_);
    not_empty_.wait(lock, [&] { return !items_.empty(); });
    std::optional<Tensor> item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }

 private:
  std::mutex mu_;
  std::condition_variable not_full_, not_empty_;
  std::deque<std::optional<Tensor>> items_;  // nullopt: the end
  const size_t capacity_;
};

absl::StatusOr<Sample> HandFanout(int replicas, int64_t steps) {
  const Tensor batch = GlobalBatch(replicas);
  std::vector<std::unique_ptr<BoundedQueue>> queues;
  for (int r = 0; r < replicas; ++r) queues.push_back(std::make_unique<BoundedQueue>(replicas));
  std::vector<ReplicaLog> logs(static_cast<size_t>(replicas));
  absl::Status producer_status;
  const auto start = std::chrono::steady_clock::now();
  {
    std::vector<std::jthread> threads;
    threads.emplace_back([&] {
      for (int64_t step = 0; step < steps; ++step) {
        for (int r = 0; r < replicas; ++r) {
          absl::StatusOr<Tensor> slice = batch.Slice(r * kRowsPerReplica, (r + 1) * kRowsPerReplica);
          if (!slice.ok()) {
            producer_status = slice.status();
            break;
          }
          queues[static_cast<size_t>(r)]->Push(std::move(*slice));
        }
      }
      for (auto& q : queues) q->Push(std::nullopt);
    });
    for (int r = 0; r < replicas; ++r) {
      threads.emplace_back([&, r] {
        ReplicaLog& log = logs[static_cast<size_t>(r)];
        log.latencies_us.reserve(static_cast<size_t>(steps) + 1);
        for (;;) {
          const int64_t t0 = NowNs();
          std::optional<Tensor> item = queues[static_cast<size_t>(r)]->Pop();
          log.latencies_us.push_back(static_cast<double>(NowNs() - t0) / 1e3);
          if (!item.has_value()) return;
          ++log.batches;
          log.rows += item->shape().dims()[0];
        }
      });
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!producer_status.ok()) return producer_status;
  return Collect(logs, seconds, steps, replicas);
}

absl::StatusOr<ScenarioResult> RunFanout(const BenchConfig& config) {
  const int64_t steps = config.size.value_or(kDefaultSteps);
  ScenarioResult result;
  result.scenario = "fanout";
  result.parameters.emplace_back("global batches", absl::StrCat(steps));
  result.parameters.emplace_back("rows per replica", absl::StrCat(kRowsPerReplica));
  result.parameters.emplace_back("repeat", absl::StrCat(config.repeat));
  for (int replicas : {2, 4, 8}) {
    CaseResult c;
    c.name = absl::StrCat(replicas, " replicas");
    c.metric = "batches/s/rep";
    c.x_label = "replicas";
    c.x = replicas;
    absl::Status s = RunAlternating(config,
                                    {{"sluice", [&] { return SluiceFanout(replicas, steps); }},
                                     {"mutex+cv", [&] { return HandFanout(replicas, steps); }}},
                                    &c);
    if (!s.ok()) return s;
    result.cases.push_back(std::move(c));
  }
  return result;
}

}  // namespace

Scenario FanoutScenario() {
  Scenario s;
  s.name = "fanout";
  s.description = "per-replica batch rate and Next() latency p50/p99 for 2, 4, 8 replicas";
  s.size_unit = "global batches";
  s.default_size = kDefaultSteps;
  s.run = RunFanout;
  return s;
}

}  // namespace sluice::tools
