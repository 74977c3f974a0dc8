// `sluice bench overhead`: the per-element cost of synchronous op chains, drained by NextBlocking on the
// calling thread, against a hand-written loop doing the same work in the same run: Range -> Map(x + 1),
// and Range -> Map(x + 1) -> Filter(even) -> Batch(256). The metric is ns per input element (lower is
// better; the table's ratio is hand loop / sluice, so a ratio of 0.05 means sluice spends 20x the loop's
// time per element). --size: elements per run.
#include <chrono>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sluice/dataset.h"
#include "tools/sluice/bench_scenarios.h"

namespace sluice::tools {
namespace {

constexpr int64_t kOverheadDefaultElements = int64_t{1} << 24;
constexpr int64_t kBatch = 256;

// An optimisation barrier: the compiler must assume `x` is read and changed.
inline void Opaque(int64_t& x) { asm volatile("" : "+r"(x)); }

struct AddOne {
  int64_t operator()(int64_t x) const { return x + 1; }
};
struct IsEven {
  bool operator()(const int64_t& x) const { return x % 2 == 0; }
};

template <class T>
absl::StatusOr<int64_t> Drain(Iterator<T>& it) {
  int64_t sum = 0;
  for (;;) {
    auto next = it.NextBlocking();
    if (!next.ok()) return next.status();
    if (!next->has_value()) return sum;
    if constexpr (std::is_same_v<T, int64_t>) {
      sum += **next;
    } else {
      for (int64_t v : (**next).template span<int64_t>()) sum += v;  // an int64[kBatch] batch
    }
  }
}

template <class Make>
absl::StatusOr<Sample> NanosPerElement(int64_t elements, Make run) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<int64_t> sum = run();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!sum.ok()) return sum.status();
  int64_t keep = *sum;
  Opaque(keep);
  Sample sample;
  sample.value = seconds * 1e9 / static_cast<double>(elements);
  return sample;
}

absl::StatusOr<Sample> SluiceMap(int64_t n) {
  return NanosPerElement(n, [n]() -> absl::StatusOr<int64_t> {
    auto it = Range(n).Map(AddOne{}).MakeIterator();
    return Drain(it);
  });
}

absl::StatusOr<Sample> LoopMap(int64_t n) {
  return NanosPerElement(n, [n]() -> absl::StatusOr<int64_t> {
    int64_t sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      int64_t x = i + 1;
      Opaque(x);
      sum += x;
    }
    return sum;
  });
}

absl::StatusOr<Sample> SluiceChain(int64_t n) {
  return NanosPerElement(n, [n]() -> absl::StatusOr<int64_t> {
    auto it = Range(n).Map(AddOne{}).Filter(IsEven{}).Batch(kBatch).MakeIterator();
    return Drain(it);
  });
}

absl::StatusOr<Sample> LoopChain(int64_t n) {
  return NanosPerElement(n, [n]() -> absl::StatusOr<int64_t> {
    std::vector<int64_t> batch;
    batch.reserve(kBatch);
    int64_t sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      int64_t x = i + 1;
      Opaque(x);
      if (x % 2 != 0) continue;
      batch.push_back(x);
      if (static_cast<int64_t>(batch.size()) == kBatch) {
        for (int64_t v : batch) sum += v;
        batch.clear();
      }
    }
    for (int64_t v : batch) sum += v;
    return sum;
  });
}

absl::StatusOr<ScenarioResult> RunOverhead(const BenchConfig& config) {
  const int64_t n = config.size.value_or(kOverheadDefaultElements);
  ScenarioResult result;
  result.scenario = "overhead";
  result.parameters.emplace_back("elements", absl::StrCat(n));
  result.parameters.emplace_back("repeat", absl::StrCat(config.repeat));
  struct Chain {
    const char* name;
    int ops;
    absl::StatusOr<Sample> (*sluice)(int64_t);
    absl::StatusOr<Sample> (*loop)(int64_t);
  };
  for (const Chain& chain : {Chain{"Range->Map", 2, SluiceMap, LoopMap},
                             Chain{"Range->Map->Filter->Batch", 4, SluiceChain, LoopChain}}) {
    CaseResult c;
    c.name = chain.name;
    c.metric = "ns/element";
    c.higher_is_better = false;
    c.x_label = "ops";
    c.x = chain.ops;
    absl::Status s = RunAlternating(
        config, {{"sluice", [&] { return chain.sluice(n); }}, {"hand loop", [&] { return chain.loop(n); }}},
        &c);
    if (!s.ok()) return s;
    c.note = absl::StrCat(chain.ops, " ops see each input element");
    result.cases.push_back(std::move(c));
  }
  return result;
}

}  // namespace

Scenario OverheadScenario() {
  Scenario s;
  s.name = "overhead";
  s.description = "per-element cost of synchronous op chains vs a hand-written loop";
  s.size_unit = "elements";
  s.default_size = kOverheadDefaultElements;
  s.run = RunOverhead;
  return s;
}

}  // namespace sluice::tools
