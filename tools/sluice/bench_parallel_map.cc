// `sluice bench parallel-map`: a CPU-bound function (a dependent multiply-add chain of about 10 us, not a
// sleep) over --size elements, with 1, 2, 4, ... up to --threads threads: sluice's Map(f, T) on a
// private T-thread pool, deterministic (input order) and not, against T std::threads each running the
// function over a contiguous share of the elements (the hand-written ideal: no queue, no hand-off).
// The metric is elements/s; `speedup` is each run's rate over the median of sluice's sequential Map.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sluice/dataset.h"
#include "tools/sluice/bench_scenarios.h"

namespace sluice::tools {
namespace {

constexpr int64_t kParallelMapDefaultElements = 4000;

struct Work {
  int64_t operator()(int64_t x) const {
    uint64_t acc = static_cast<uint64_t>(x) | 1;
    for (int i = 0; i < 9000; ++i) {
      acc = acc * 6364136223846793005ull + 1442695040888963407ull;
      asm volatile("" : "+r"(acc));  // keeps the chain: the compiler cannot fold it
    }
    return static_cast<int64_t>(acc >> 1);
  }
};

template <class Run>
absl::StatusOr<Sample> ElementsPerSecond(int64_t n, Run run) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<int64_t> count = run();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!count.ok()) return count.status();
  if (*count != n) return absl::InternalError(absl::StrCat("processed ", *count, " of ", n, " elements"));
  Sample sample;
  sample.value = static_cast<double>(n) / seconds;
  return sample;
}

absl::StatusOr<Sample> SluiceMap(int64_t n, int threads, bool deterministic) {
  return ElementsPerSecond(n, [&]() -> absl::StatusOr<int64_t> {
    Options options;
    options.thread_pool_size = threads;
    auto ds = threads == 0 ? Range(n).Map(Work{}) : Range(n).Map(Work{}, threads, deterministic);
    auto it = ds.MakeIterator(options);
    int64_t count = 0;
    for (;;) {
      auto x = it.NextBlocking();
      if (!x.ok()) return x.status();
      if (!x->has_value()) return count;
      ++count;
    }
  });
}

absl::StatusOr<Sample> HandThreads(int64_t n, int threads) {
  return ElementsPerSecond(n, [&]() -> absl::StatusOr<int64_t> {
    std::vector<int64_t> counts(static_cast<size_t>(threads), 0);
    {
      std::vector<std::jthread> workers;
      for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&counts, n, t, threads] {
          uint64_t sum = 0;  // unsigned: the results are hashes and their sum wraps
          for (int64_t i = n * t / threads; i < n * (t + 1) / threads; ++i) {
            sum += static_cast<uint64_t>(Work{}(i));
            ++counts[static_cast<size_t>(t)];
          }
          asm volatile("" : "+r"(sum));
        });
      }
    }
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    return total;
  });
}

absl::StatusOr<ScenarioResult> RunParallelMap(const BenchConfig& config) {
  const int64_t n = config.size.value_or(kParallelMapDefaultElements);
  const int max_threads = BenchThreads(config);
  ScenarioResult result;
  result.scenario = "parallel-map";
  result.parameters.emplace_back("elements", absl::StrCat(n));
  result.parameters.emplace_back("threads", absl::StrCat("1..", max_threads));
  result.parameters.emplace_back("repeat", absl::StrCat(config.repeat));

  CaseResult sequential;
  sequential.name = "sequential Map";
  sequential.metric = "elements/s";
  sequential.x_label = "threads";
  sequential.x = 1;
  absl::Status s = RunAlternating(
      config,
      {{"sluice", [&] { return SluiceMap(n, 0, true); }}, {"hand loop", [&] { return HandThreads(n, 1); }}},
      &sequential);
  if (!s.ok()) return s;
  std::vector<double> base = sequential.sides[0].samples;
  std::sort(base.begin(), base.end());
  const double base_rate = base[base.size() / 2];
  result.cases.push_back(std::move(sequential));

  std::vector<int> counts;
  for (int t = 1; t < max_threads; t *= 2) counts.push_back(t);
  counts.push_back(max_threads);
  for (int threads : counts) {
    for (bool deterministic : {true, false}) {
      CaseResult c;
      c.name = absl::StrCat(deterministic ? "det" : "nondet", ", ", threads,
                            threads == 1 ? " thread" : " threads");
      c.metric = "elements/s";
      c.x_label = "threads";
      c.x = threads;
      s = RunAlternating(config,
                         {{"sluice", [&] { return SluiceMap(n, threads, deterministic); }},
                          {"std::thread", [&] { return HandThreads(n, threads); }}},
                         &c);
      if (!s.ok()) return s;
      for (SideResult& side : c.sides) {
        for (double rate : side.samples) side.extra["speedup"].push_back(rate / base_rate);
      }
      result.cases.push_back(std::move(c));
    }
  }
  result.notes.push_back("speedup: over the median of sluice's sequential Map");
  return result;
}

}  // namespace

Scenario ParallelMapScenario() {
  Scenario s;
  s.name = "parallel-map";
  s.description = "speed-up of a CPU-bound parallel Map over thread counts, deterministic and not";
  s.size_unit = "elements (about 10 us each)";
  s.default_size = kParallelMapDefaultElements;
  s.run = RunParallelMap;
  return s;
}

}  // namespace sluice::tools
