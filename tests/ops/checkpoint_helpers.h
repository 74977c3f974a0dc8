// Helpers shared by the checkpoint tests: elements with their errors, pulled, shown and sorted.
#ifndef SLUICE_TESTS_OPS_CHECKPOINT_HELPERS_H_
#define SLUICE_TESTS_OPS_CHECKPOINT_HELPERS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
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
