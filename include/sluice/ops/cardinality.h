// Cardinality: how many elements a dataset yields, as tf.data counts it.
//
// A non-negative number is exact; kInfiniteCardinality means the dataset never ends (Repeat(-1) over a
// non-empty input); kUnknownCardinality means it cannot be known without iterating (Filter, FlatMap,
// Interleave, file sources). Ops propagate these as tf.data documents for each op.
#ifndef SLUICE_OPS_CARDINALITY_H_
#define SLUICE_OPS_CARDINALITY_H_

#include <cstdint>

namespace sluice {

inline constexpr int64_t kInfiniteCardinality = -1;
inline constexpr int64_t kUnknownCardinality = -2;

}  // namespace sluice

#endif  // SLUICE_OPS_CARDINALITY_H_
