// Helpers shared by the op tests: draining a dataset, tensor shorthands.
#ifndef SLUICE_TESTS_OPS_TEST_HELPERS_H_
#define SLUICE_TESTS_OPS_TEST_HELPERS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "sluice/io/tensor.h"

namespace sluice::test_ops {

// Drains a dataset on this thread, at most `limit` elements; errors are kept as elements.
template <class T>
std::vector<absl::StatusOr<T>> Collect(const Dataset<T>& ds, int64_t limit = 1000000, Options options = {}) {
  std::vector<absl::StatusOr<T>> out;
  Iterator<T> it = ds.MakeIterator(options);
  for (absl::StatusOr<T> x : it) {
    out.push_back(std::move(x));
    if (static_cast<int64_t>(out.size()) >= limit) break;
  }
  return out;
}
template <class T>
std::vector<absl::StatusOr<T>> Collect(const Dataset<T>& ds, Options options) {
  return Collect(ds, 1000000, options);
}

// The values of Collect(); an error element fails the calling test.
template <class T>
std::vector<T> Values(const Dataset<T>& ds, int64_t limit = 1000000, Options options = {}) {
  std::vector<T> out;
  for (absl::StatusOr<T>& x : Collect(ds, limit, options)) {
    EXPECT_TRUE(x.ok()) << x.status();
    if (x.ok()) out.push_back(std::move(*x));
  }
  return out;
}
template <class T>
std::vector<T> Values(const Dataset<T>& ds, Options options) {
  return Values(ds, 1000000, options);
}

// The int64 values of a tensor (Range(n).Batch(k)'s elements are int64[k] tensors). A tensor of another
// dtype fails the calling test and gives no values.
inline std::vector<int64_t> Ints(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::kInt64) << "expected an int64 tensor";
  if (t.dtype() != DType::kInt64) return {};
  auto s = t.span<int64_t>();
  return std::vector<int64_t>(s.begin(), s.end());
}
// Ints of each tensor: the batches of Range(n).Batch(k) as vectors.
inline std::vector<std::vector<int64_t>> IntBatches(const std::vector<Tensor>& batches) {
  std::vector<std::vector<int64_t>> out;
  for (const Tensor& b : batches) out.push_back(Ints(b));
  return out;
}
// Ints of every tensor, in order: the scalars of Batch(k).Unbatch() as one vector.
inline std::vector<int64_t> AllInts(const std::vector<Tensor>& tensors) {
  std::vector<int64_t> out;
  for (const Tensor& t : tensors) {
    for (int64_t x : Ints(t)) out.push_back(x);
  }
  return out;
}

// A rank-1 int64 tensor [x, x, ..., x] of length x (tf's `tf.fill([x], x)`).
inline Tensor Fill(int64_t x) {
  std::vector<int64_t> v(static_cast<size_t>(x), x);
  return Tensor::FromVector<int64_t>(v);
}

}  // namespace sluice::test_ops

#endif  // SLUICE_TESTS_OPS_TEST_HELPERS_H_
