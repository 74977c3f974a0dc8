// ThreadPool micro-benchmarks. All figures are wall-clock (UseRealTime): the work runs on pool threads,
// not on the benchmark's own thread. `per_op` is the time of one hop (or one task).
//
//   build/bin/thread_pool_benchmark
#include <atomic>
#include <cstdint>

#include "benchmark/benchmark.h"
#include "sluice/engine/async_scope.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "sluice/engine/thread_pool.h"

namespace sluice {
namespace {

constexpr int kHopsPerBatch = 1'000;
constexpr int kTasksPerBatch = 10'000;

void ReportNsPerOp(benchmark::State& state, std::int64_t ops_per_iteration) {
  // A rate, inverted: seconds per op, printed with an SI prefix (e.g. "68.7ns").
  state.counters["per_op"] =
      benchmark::Counter(static_cast<double>(state.iterations() * ops_per_iteration),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// `pool` outlives the task (the benchmark body owns it and SyncWaits).
Task<void> YieldLoop(ThreadPool* pool, int hops) {
  co_await pool->Schedule();
  for (int i = 0; i < hops; ++i) co_await pool->Yield();
}

Task<void> ScheduleLoop(ThreadPool* pool, int hops) {
  co_await pool->Schedule();
  for (int i = 0; i < hops; ++i) co_await pool->Schedule();
}

Task<void> HopOnce(ThreadPool* pool) { co_await pool->Schedule(); }

Task<void> HopAndCount(ThreadPool* pool, std::atomic<std::int64_t>* count) {
  co_await pool->Schedule();
  count->fetch_add(1, std::memory_order_relaxed);
}

// A worker requeueing itself on its own pool: local push, local pop (plus a waker check).
void BM_YieldFromWorker(benchmark::State& state) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  for (auto _ : state) SyncWait(YieldLoop(&pool, kHopsPerBatch));
  ReportNsPerOp(state, kHopsPerBatch);
}
BENCHMARK(BM_YieldFromWorker)->Arg(1)->Arg(2)->UseRealTime();

void BM_ScheduleFromWorker(benchmark::State& state) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  for (auto _ : state) SyncWait(ScheduleLoop(&pool, kHopsPerBatch));
  ReportNsPerOp(state, kHopsPerBatch);
}
BENCHMARK(BM_ScheduleFromWorker)->Arg(1)->Arg(2)->UseRealTime();

// Round trip from a plain thread: shared-queue push, worker wake-up, resume, then SyncWait's wake-up of
// this thread.
void BM_ScheduleFromExternalThread(benchmark::State& state) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  for (auto _ : state) SyncWait(HopOnce(&pool));
  ReportNsPerOp(state, 1);
}
BENCHMARK(BM_ScheduleFromExternalThread)->Arg(1)->Arg(2)->UseRealTime();

// Throughput: kTasksPerBatch tiny tasks spawned from this thread, each hopping onto the pool.
void BM_SpawnedTaskThroughput(benchmark::State& state) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  std::atomic<std::int64_t> count{0};
  for (auto _ : state) {
    AsyncScope scope;
    for (int i = 0; i < kTasksPerBatch; ++i) scope.Spawn(HopAndCount(&pool, &count));
    scope.JoinBlocking();
  }
  if (count.load() != state.iterations() * kTasksPerBatch) state.SkipWithError("lost tasks");
  ReportNsPerOp(state, kTasksPerBatch);
}
BENCHMARK(BM_SpawnedTaskThroughput)->Arg(1)->Arg(2)->UseRealTime();

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
