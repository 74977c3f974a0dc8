// Helpers shared by the checkpoint tests: elements with their errors, pulled, shown and sorted.
#ifndef SLUICE_TESTS_OPS_CHECKPOINT_HELPERS_H_
#define SLUICE_TESTS_OPS_CHECKPOINT_HELPERS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/xxhash64.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"

namespace sluice::checkpoint_testing {

using Elements = std::vector<absl::StatusOr<int64_t>>;

inline std::string Show(const absl::StatusOr<int64_t>& e) {
  return e.ok() ? absl::StrCat(*e) : e.status().ToString();
}

// Up to `limit` elements, errors included; stops at the end.
template <class T>
std::vector<absl::StatusOr<T>> Pull(Iterator<T>& it, size_t limit) {
  std::vector<absl::StatusOr<T>> out;
  while (out.size() < limit) {
    auto next = it.NextBlocking();
    if (next.ok() && !next->has_value()) break;
    if (next.ok()) {
      out.emplace_back(std::move(**next));
    } else {
      out.emplace_back(next.status());
    }
  }
  return out;
}

// Hand-made states: `trials` copies of `state`, each changed by `corrupt` behind a resealed checksum (what
// a state edited on purpose could hold, so that the bytes reach the decoders), restored with `options`.
// Each must fail with DataLoss or FailedPrecondition, or restore something that runs (`pull` elements
// pulled). Returns the failures' messages.
template <class T>
std::vector<std::string> RestoreCorruptedStates(const Dataset<T>& ds, const std::string& state, int trials,
                                                const Options& options, size_t pull,
                                                const std::function<void(std::string*)>& corrupt) {
  constexpr size_t kHeader = 13;  // "SLCK", the version, the checksum at byte 5
  std::vector<std::string> failures;
  for (int trial = 0; trial < trials; ++trial) {
    std::string bad = state;
    corrupt(&bad);
    if (bad.size() < kHeader) continue;
    const uint64_t checksum = XxHash64(std::string_view(bad).substr(kHeader));
    std::memcpy(bad.data() + 5, &checksum, sizeof checksum);
    absl::StatusOr<Iterator<T>> restored = ds.RestoreIterator(bad, options);
    if (!restored.ok()) {
      EXPECT_TRUE(restored.status().code() == absl::StatusCode::kDataLoss ||
                  restored.status().code() == absl::StatusCode::kFailedPrecondition)
          << restored.status();
      failures.emplace_back(restored.status().message());
      continue;
    }
    Pull(*restored, pull);
  }
  return failures;
}

// Flips one bit after the header, drawn from `draw` (a linear congruential sequence it advances).
inline void FlipOneBit(std::string* bytes, uint64_t* draw) {
  constexpr size_t kHeader = 13;
  *draw = *draw * 6364136223846793005ULL + 1442695040888963407ULL;
  const size_t at = kHeader + (*draw >> 33) % (bytes->size() - kHeader);
  (*bytes)[at] = static_cast<char>((*bytes)[at] ^ (1 << ((*draw >> 20) % 8)));
}

// In a fixed order, for comparing the output of nondeterministic ops as multisets.
inline Elements Sorted(Elements e) {
  std::sort(e.begin(), e.end(), [](const absl::StatusOr<int64_t>& a, const absl::StatusOr<int64_t>& b) {
    return Show(a) < Show(b);
  });
  return e;
}

// A map function that fails on some elements, so that error elements cross the checkpoints too.
inline absl::StatusOr<int64_t> MaybeFail(int64_t x) {
  if (x % 11 == 7) return absl::InvalidArgumentError(absl::StrCat("seven mod eleven: ", x));
  return x * 3 + 1;
}

// The number in a rank-0 int64 tensor (a row of Range(n).Batch(k).Unbatch()), so that batched int64
// pipelines come back to Dataset<int64_t>.
inline int64_t IntOf(const Tensor& scalar) { return scalar.data<int64_t>()[0]; }
// A batch of int64 (Range(n).Batch(k)'s int64[k] tensor) folded into one number, its size first.
inline int64_t SumOfBatch(const Tensor& batch) {
  int64_t sum = batch.shape().rank() == 0 ? 0 : batch.shape().dim(0);
  for (int64_t x : batch.span<int64_t>()) sum = sum * 7 + x;
  return sum;
}

// 0, 1, ..., n - 1 from a FromGenerator, an op that cannot be saved (its state is the callable's).
inline Dataset<int64_t> GeneratedRange(int64_t n) {
  return FromGenerator([n] {
    return [n, i = int64_t{0}]() mutable -> std::optional<int64_t> {
      if (i >= n) return std::nullopt;
      return i++;
    };
  });
}

}  // namespace sluice::checkpoint_testing

#endif  // SLUICE_TESTS_OPS_CHECKPOINT_HELPERS_H_
