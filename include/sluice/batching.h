// BatchTraits<B>: what ops and the distribution stage need to know about a batched value B.
//
// Contract:
// - Rows(b): the number of elements in the batch (its leading dimension).
// - Slice(b, start, limit): rows [start, limit) as a batch of the same type; shares storage where the
//   type allows it (Tensor views) and copies otherwise (std::vector). Requires 0 <= start <= limit <=
//   Rows(b); out-of-range arguments return InvalidArgument.
// - Specializations exist for std::vector<T> and Tensor (rows along dim 0). Other batched types
//   (tuples of tensors, parsed Examples) add their own specialization next to the op that makes them;
//   `IsBatchable<B>` tells whether one exists.
// - Threading: pure functions of their arguments.
//
//   std::vector<int> rows = {1, 2, 3, 4};
//   std::vector<int> tail = *BatchTraits<std::vector<int>>::Slice(rows, 2, 4);  // {3, 4}
#ifndef SLUICE_BATCHING_H_
#define SLUICE_BATCHING_H_

#include <concepts>
#include <cstdint>
#include <iterator>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/tensor.h"

namespace sluice {

template <class B>
struct BatchTraits;

namespace detail {
// A plain bool first, so the compiler sees the guard and prunes the copy on the error path (GCC 12 warns
// about out-of-bounds copies it cannot rule out otherwise).
inline bool InSliceRange(int64_t start, int64_t limit, int64_t rows) {
  return start >= 0 && start <= limit && limit <= rows;
}
inline absl::Status SliceRangeError(int64_t start, int64_t limit, int64_t rows) {
  return absl::InvalidArgumentError(
      absl::StrCat("batch slice [", start, ", ", limit, ") is outside a batch of ", rows, " rows"));
}
}  // namespace detail

template <class T>
struct BatchTraits<std::vector<T>> {
  static int64_t Rows(const std::vector<T>& batch) { return static_cast<int64_t>(batch.size()); }
  static absl::StatusOr<std::vector<T>> Slice(const std::vector<T>& batch, int64_t start, int64_t limit) {
    if (!detail::InSliceRange(start, limit, Rows(batch))) return detail::SliceRangeError(start, limit, Rows(batch));
    return std::vector<T>(batch.begin() + start, batch.begin() + limit);
  }
  // Moves the rows out of a batch the caller no longer needs.
  static absl::StatusOr<std::vector<T>> Slice(std::vector<T>&& batch, int64_t start, int64_t limit) {
    if (!detail::InSliceRange(start, limit, Rows(batch))) return detail::SliceRangeError(start, limit, Rows(batch));
    return std::vector<T>(std::make_move_iterator(batch.begin() + start),
                          std::make_move_iterator(batch.begin() + limit));
  }
};

template <>
struct BatchTraits<Tensor> {
  // A rank-0 tensor is not a batch: it has no rows.
  static int64_t Rows(const Tensor& batch) { return batch.shape().rank() == 0 ? 0 : batch.shape().dim(0); }
  static absl::StatusOr<Tensor> Slice(const Tensor& batch, int64_t start, int64_t limit) {
    if (!detail::InSliceRange(start, limit, Rows(batch))) return detail::SliceRangeError(start, limit, Rows(batch));
    return batch.Slice(start, limit);
  }
};

template <class B>
concept IsBatchable = requires(const B& b) {
  { BatchTraits<B>::Rows(b) } -> std::convertible_to<int64_t>;
  { BatchTraits<B>::Slice(b, int64_t{0}, int64_t{0}) } -> std::convertible_to<absl::StatusOr<B>>;
};

}  // namespace sluice

#endif  // SLUICE_BATCHING_H_
