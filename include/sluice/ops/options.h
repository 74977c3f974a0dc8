// Options: how an iterator runs a pipeline. Passed to Dataset::MakeIterator.
//
// deterministic: ops with parallelism return elements in the order a sequential run would (default, as
//   tf.data); false lets them return in completion order where that is faster. An op's own
//   `deterministic` argument overrides this.
// thread_pool_size: 0 runs parallel work on ThreadPool::Default(); N > 0 gives this iterator a private
//   pool of N threads.
// autotune / cpu_budget / ram_budget_bytes: limits for the tuner of kAutotune parameters (0 = the
//   machine's cores / half its memory).
// compact_checkpoints: Iterator::Save writes source positions and counters, never buffered elements, so
//   the state stays small whatever the buffer sizes; the elements a Prefetch had buffered are read again
//   after a restore. Only for pipelines whose every op can keep its place that way (OpNode::
//   keeps_compact_state: sources with positions, Map, Filter, ParseExample, Batch, Take, Skip, Repeat,
//   Shuffle, Prefetch, Zip, Concatenate, Enumerate, Shard, Interleave and FlatMap (sequential or
//   parallel), and deterministic ParallelMap and parallel Batch); MakeIterator and RestoreIterator refuse any
//   other with InvalidArgument naming the first op that cannot (docs/checkpoint.md). An Interleave checks
//   each dataset its function makes when that dataset's slot opens (an error element naming the node).
#ifndef SLUICE_OPS_OPTIONS_H_
#define SLUICE_OPS_OPTIONS_H_

#include <cstdint>

namespace sluice {

struct Options {
  bool deterministic = true;
  int thread_pool_size = 0;
  bool autotune = true;
  int cpu_budget = 0;
  int64_t ram_budget_bytes = 0;
  bool compact_checkpoints = false;
};

}  // namespace sluice

#endif  // SLUICE_OPS_OPTIONS_H_
