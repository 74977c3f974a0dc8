// Keyword-style arguments for the ops with several optional ones, as tf.data's keyword arguments:
//
//   ds.Batch(256, {.drop_remainder = true, .num_parallel_calls = ops::kAutotune})
//   ds.Map(decode, {.num_parallel_calls = ops::kAutotune, .deterministic = false})
//   files.Interleave(read, {.cycle_length = 4, .num_parallel_calls = ops::kAutotune})
//   ds.Shuffle(10'000, {.seed = 42, .reshuffle_each_iteration = false})
//   ds.Window(5, {.shift = 1, .drop_remainder = true});  ListFiles(patterns, {.shuffle = false})
//   SampleFromDatasets(datasets, weights, {.seed = 7, .rerandomize_each_iteration = true})
//   ds.PaddedBatch(4, PaddedBatchOptions{.drop_remainder = true})   // type spelled: a braced list
//   ds.BucketBySequenceLength(len, bounds, sizes, BucketBySequenceLengthOptions{...})   // reads as shapes
//
// Each field has the default of the op's positional form, which stays for the calls that read clearly
// (Batch(32), Shuffle(1000, 7)). Fields follow tf.data's argument names and order, so designated
// initializers are written in that order.
#ifndef SLUICE_OPS_OP_OPTIONS_H_
#define SLUICE_OPS_OP_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sluice/io/tensor.h"
#include "sluice/ops/padded_batch.h"
#include "sluice/ops/prefetch.h"

namespace sluice {

// Dataset::Batch. num_parallel_calls >= 2 or kAutotune stacks several batches at once on the pool;
// deterministic unset = Options::deterministic.
struct BatchOptions {
  bool drop_remainder = false;
  int64_t num_parallel_calls = 0;
  std::optional<bool> deterministic = std::nullopt;
};

// Dataset::Map. num_parallel_calls 0 or 1: sequential; kAutotune: tuned. `name` labels a lambda.
struct MapOptions {
  int64_t num_parallel_calls = 0;
  std::optional<bool> deterministic = std::nullopt;
  std::string name = "<function>";
};

// Dataset::Interleave. cycle_length kAutotune = the machine's cores; num_parallel_calls 0: sequential.
struct InterleaveOptions {
  int64_t cycle_length = ops::kAutotune;
  int64_t block_length = 1;
  int64_t num_parallel_calls = 0;
  std::optional<bool> deterministic = std::nullopt;
  std::string name = "<function>";
};

// Dataset::Shuffle. seed unset: a random seed drawn when the op is built.
struct ShuffleOptions {
  std::optional<uint64_t> seed = std::nullopt;
  bool reshuffle_each_iteration = true;
};

// Dataset::Window. shift unset = size.
struct WindowOptions {
  std::optional<int64_t> shift = std::nullopt;
  int64_t stride = 1;
  bool drop_remainder = false;
};

// Dataset::PaddedBatch: shapes and values one per component (empty: pad to the longest, with zeros).
struct PaddedBatchOptions {
  std::vector<ops::PaddedShape> padded_shapes = {};
  std::vector<Tensor> padding_values = {};
  bool drop_remainder = false;
};

// Dataset::BucketBySequenceLength, after the boundaries and batch sizes.
struct BucketBySequenceLengthOptions {
  std::vector<ops::PaddedShape> padded_shapes = {};
  std::vector<Tensor> padding_values = {};
  bool pad_to_bucket_boundary = false;
  bool no_padding = false;
  bool drop_remainder = false;
  std::string name = "<function>";
};

// SampleFromDatasets, after the datasets and weights.
struct SampleOptions {
  std::optional<uint64_t> seed = std::nullopt;
  bool stop_on_empty_dataset = false;
  bool rerandomize_each_iteration = false;
};

// ListFiles. shuffle: the order of the matches is shuffled (by `seed`, or a seed drawn per build).
struct ListFilesOptions {
  bool shuffle = true;
  std::optional<uint64_t> seed = std::nullopt;
};

}  // namespace sluice

#endif  // SLUICE_OPS_OP_OPTIONS_H_
