// Dataset<T>: an immutable, cheap-to-copy description of a stream of T. Every op returns a new Dataset;
// nothing runs until MakeIterator(), and every iterator starts from the beginning.
//
// Elements are ordinary C++ values. Semantics follow tf.data's documentation op by op (see each header
// in sluice/ops/). Argument errors (Batch(0), Shard(0, 0), Range step 0) cannot be thrown from a chain of
// builders, so such a dataset yields the InvalidArgument error as its one element.
//
//   Dataset<int64_t> ds = Range(100).Filter([](int64_t x) { return x % 2 == 0; }).Map([](int64_t x) {
//     return x * x;
//   });
//   Iterator<int64_t> it = ds.MakeIterator();
//   for (absl::StatusOr<int64_t> x : it) { ... }          // plain thread
//   while (true) { auto x = co_await it.Next(); ... }     // coroutine
#ifndef SLUICE_OPS_DATASET_H_
#define SLUICE_OPS_DATASET_H_

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sluice/engine/thread_pool.h"
#include "sluice/ops/auto_shard.h"
#include "sluice/ops/batch.h"
#include "sluice/ops/bucket_by_sequence_length.h"
#include "sluice/ops/cache.h"
#include "sluice/ops/cardinality.h"
#include "sluice/ops/checkpoint_state.h"
#include "sluice/ops/concatenate.h"
#include "sluice/ops/enumerate_shard.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/file_sources.h"
#include "sluice/ops/filter.h"
#include "sluice/ops/from_generator.h"
#include "sluice/ops/from_tensors.h"
#include "sluice/ops/from_vector.h"
#include "sluice/ops/function_registry.h"
#include "sluice/ops/ignore_errors.h"
#include "sluice/ops/interleave.h"
#include "sluice/ops/iterator.h"
#include "sluice/ops/map.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/op_options.h"
#include "sluice/ops/options.h"
#include "sluice/ops/padded_batch.h"
#include "sluice/ops/parallel_interleave.h"
#include "sluice/ops/parallel_map.h"
#include "sluice/ops/parse_example.h"
#include "sluice/ops/prefetch.h"
#include "sluice/ops/range.h"
#include "sluice/ops/rebatch.h"
#include "sluice/ops/registered_dataset.h"
#include "sluice/ops/repeat.h"
#include "sluice/ops/sample_from_datasets.h"
#include "sluice/ops/scan.h"
#include "sluice/ops/shuffle.h"
#include "sluice/ops/stateful_function.h"
#include "sluice/ops/take_skip.h"
#include "sluice/ops/take_while.h"
#include "sluice/ops/unbatch.h"
#include "sluice/ops/window.h"
#include "sluice/ops/zip.h"

namespace sluice {

namespace service {
struct ServiceOptions;
}  // namespace service

using ops::kAutotune;
// Save hooks for checkpoints (docs/checkpoint.md).
using ops::GeneratorHooks;
using ops::Stateful;

namespace detail {
template <class T>
struct IsVector : std::false_type {};
template <class U>
struct IsVector<std::vector<U>> : std::true_type {};
}  // namespace detail

template <class T>
class Dataset {
 public:
  using element_type = T;

  explicit Dataset(NodePtr<T> node) : node_(std::move(node)) {}

  const NodePtr<T>& node() const { return node_; }
  int64_t Cardinality() const { return node_->cardinality(); }
  // The dtype and static shape of each component of the elements (tf.data's element_spec), from the
  // graph alone; see ops/element_spec.h.
  DatasetSpec element_spec() const { return node_->element_spec(); }
  std::string DebugString() const { return sluice::DebugString(*node_); }

  // With Options::compact_checkpoints on a pipeline that cannot keep a compact state, the iterator's one
  // element is the InvalidArgument naming the op (CheckCompactCheckpoints).
  Iterator<T> MakeIterator(Options options = {}) const {
    IteratorContextPtr shared = MakeContext(options);
    if (options.compact_checkpoints) {
      if (absl::Status refused = CheckCompactCheckpoints(*node_, options); !refused.ok()) {
        NodePtr<T> error = ops::MakeErrorSource<T>("MakeIterator", std::move(refused));
        return Iterator<T>(error->MakeStream(shared), shared, error);
      }
    }
    return Iterator<T>(node_->MakeStream(shared), shared, node_);
  }

  // An iterator continuing exactly where the one that saved `state` stood (Iterator::Save,
  // docs/checkpoint.md), over fresh streams. FailedPrecondition when the state was saved from another
  // pipeline (naming the first differing op) or holds an op this build cannot restore; DataLoss when
  // the state is truncated or corrupt.
  absl::StatusOr<Iterator<T>> RestoreIterator(std::string_view state, Options options = {}) const {
    if (options.compact_checkpoints) {
      if (absl::Status refused = CheckCompactCheckpoints(*node_, options); !refused.ok()) return refused;
    }
    absl::StatusOr<CheckpointReader> reader = CheckpointReader::Parse(state, node_);
    if (!reader.ok()) return reader.status();
    std::shared_ptr<IteratorContext> context = MakeContext(options);
    if (absl::Status s = reader->RestoreRecords(context->state.get()); !s.ok()) return s;
    IteratorContextPtr shared = std::move(context);
    absl::StatusOr<std::unique_ptr<Stream<T>>> stream =
        node_->RestoreStream(shared, *reader, std::string(kRootNodePath));
    if (!stream.ok()) return stream.status();
    return Iterator<T>(std::move(*stream), shared, node_);
  }
  absl::StatusOr<Iterator<T>> RestoreIteratorFromFile(const std::string& path, Options options = {}) const {
    absl::StatusOr<std::string> state = ReadCheckpointFile(path);
    if (!state.ok()) return state.status();
    return RestoreIterator(*state, options);
  }

  // f: T -> U or absl::StatusOr<U>. `name` identifies f in DebugString and, once registered, on the wire.
  // (`name` is deduced, so that a braced MapOptions never reads as a string.)
  template <ops::NotFunctionHandle F>
  auto Map(F f) const {
    return Map(std::move(f), std::string("<function>"));
  }
  template <ops::NotFunctionHandle F, std::convertible_to<std::string> Name>
  auto Map(F f, Name name) const {
    using Node = ops::MapNode<T, F>;
    return Dataset<typename Node::U>(
        std::make_shared<Node>(node_, std::move(f), ops::FunctionLabelFor<F>(std::string(std::move(name)))));
  }

  // Parallel form: f on the pool, num_parallel_calls at once (0 or 1: sequential; kAutotune: tuned).
  // deterministic unset = Options::deterministic. See sluice/ops/parallel_map.h.
  template <ops::NotFunctionHandle F>
  auto Map(F f, int64_t num_parallel_calls, std::optional<bool> deterministic = std::nullopt,
           std::string name = "<function>") const {
    return Dataset<ops::UnwrapStatusOrT<std::invoke_result_t<F&, T>>>(ops::MakeParallelMap<T, F>(
        node_, std::move(f), num_parallel_calls, deterministic, ops::FunctionLabelFor<F>(std::move(name))));
  }

  // Map(f, {.num_parallel_calls = kAutotune, .deterministic = false}): sluice/ops/op_options.h.
  template <ops::NotFunctionHandle F>
  auto Map(F f, MapOptions options) const {
    return Map(std::move(f), options.num_parallel_calls, options.deterministic, std::move(options.name));
  }

  // predicate: const T& -> bool or absl::StatusOr<bool>.
  template <ops::NotFunctionHandle P>
  Dataset<T> Filter(P predicate, std::string name = "<function>") const {
    return Dataset<T>(std::make_shared<ops::FilterNode<T, P>>(node_, std::move(predicate),
                                                              ops::FunctionLabelFor<P>(std::move(name))));
  }

  // Registered functions (sluice/ops/function_registry.h): `f` is a Function<Sig> handle or one bound to
  // its arguments (kNormalize.With({{"mean", 0.5}})); Sig's argument is T. The op holds the name and the
  // arguments, so the pipeline can be serialized (sluice/ops/graph.h). A name not registered here, with
  // another signature, or whose factory fails, makes the dataset's one element that error.
  template <ops::FunctionHandle H>
  auto Map(const H& f) const {
    return WithFunction("Map", f, [this](auto fn, FunctionParam param) {
      using Fn = decltype(fn);
      using Node = ops::MapNode<T, Fn>;
      return Dataset<typename Node::U>(std::make_shared<Node>(node_, std::move(fn), std::move(param)));
    });
  }
  template <ops::FunctionHandle H>
  auto Map(const H& f, int64_t num_parallel_calls, std::optional<bool> deterministic = std::nullopt) const {
    return WithFunction("ParallelMap", f, [&](auto fn, FunctionParam param) {
      using Fn = decltype(fn);
      return Dataset<ops::UnwrapStatusOrT<std::invoke_result_t<Fn&, T>>>(ops::MakeParallelMap<T, Fn>(
          node_, std::move(fn), num_parallel_calls, deterministic, std::move(param)));
    });
  }
  template <ops::FunctionHandle H>
  auto Map(const H& f, const MapOptions& options) const {
    return Map(f, options.num_parallel_calls, options.deterministic);
  }
  template <ops::FunctionHandle H>
  Dataset<T> Filter(const H& predicate) const {
    return WithFunction("Filter", predicate, [this](auto fn, FunctionParam param) {
      return Dataset<T>(std::make_shared<ops::FilterNode<T, decltype(fn)>>(node_, std::move(fn), std::move(param)));
    });
  }
  template <ops::FunctionHandle H>
  Dataset<T> TakeWhile(const H& predicate) const {
    return WithFunction("TakeWhile", predicate, [this](auto fn, FunctionParam param) {
      return Dataset<T>(
          std::make_shared<ops::TakeWhileNode<T, decltype(fn)>>(node_, std::move(fn), std::move(param)));
    });
  }
  template <ops::FunctionHandle H>
  auto FlatMap(const H& f) const {
    return WithFunction("FlatMap", f, [this](auto fn, FunctionParam param) {
      using Node = ops::InterleaveNode<T, decltype(fn)>;
      return Dataset<typename Node::U>(std::make_shared<Node>("FlatMap", node_, std::move(fn), std::move(param), 1, 1));
    });
  }
  template <ops::FunctionHandle H>
  auto Interleave(const H& f, int64_t cycle_length = kAutotune, int64_t block_length = 1,
                  int64_t num_parallel_calls = 0, std::optional<bool> deterministic = std::nullopt) const {
    if (cycle_length == kAutotune) cycle_length = std::max<int64_t>(1, std::thread::hardware_concurrency());
    return WithFunction("Interleave", f, [&](auto fn, FunctionParam param) {
      using Fn = decltype(fn);
      return Dataset<typename ops::InterleaveNode<T, Fn>::U>(ops::MakeParallelInterleave<T, Fn>(
          node_, std::move(fn), cycle_length, block_length, num_parallel_calls, deterministic, std::move(param)));
    });
  }

  template <ops::FunctionHandle H>
  auto Interleave(const H& f, const InterleaveOptions& options) const {
    return Interleave(f, options.cycle_length, options.block_length, options.num_parallel_calls,
                      options.deterministic);
  }

  // Scan with a registered std::pair<State, U>(const State&, T) function; State needs an ElementCodec.
  template <class State, ops::FunctionHandle H>
  auto Scan(State initial_state, const H& f) const {
    return WithFunction("Scan", f, [&](auto fn, FunctionParam param) {
      using Node = ops::ScanNode<T, State, decltype(fn)>;
      return Dataset<typename Node::U>(
          std::make_shared<Node>(node_, std::move(initial_state), std::move(fn), std::move(param)));
    });
  }

  // BucketBySequenceLength with a registered length function (an integer of const T&).
  template <ops::FunctionHandle H>
  Dataset<Batched<T>> BucketBySequenceLength(const H& element_length_func, std::vector<int64_t> bucket_boundaries,
                                             std::vector<int64_t> bucket_batch_sizes,
                                             std::vector<ops::PaddedShape> padded_shapes = {},
                                             std::vector<Tensor> padding_values = {},
                                             bool pad_to_bucket_boundary = false, bool no_padding = false,
                                             bool drop_remainder = false) const {
    return WithFunction("BucketBySequenceLength", element_length_func, [&](auto fn, FunctionParam param) {
      return Dataset<Batched<T>>(ops::MakeBucketBySequenceLength<T>(
          node_, std::move(fn), std::move(param),
          ops::BucketOptions{std::move(bucket_boundaries), std::move(bucket_batch_sizes), std::move(padded_shapes),
                             std::move(padding_values), pad_to_bucket_boundary, no_padding, drop_remainder}));
    });
  }

  // Runs this pipeline on data-service workers; defined in sluice/distribute/service.h, which callers
  // include (ops/ knows nothing of the service).
  Dataset<T> Distribute(const service::ServiceOptions& options) const;

  Dataset<T> Take(int64_t count) const { return Dataset<T>(std::make_shared<ops::TakeNode<T>>(node_, count)); }
  Dataset<T> Skip(int64_t count) const { return Dataset<T>(std::make_shared<ops::SkipNode<T>>(node_, count)); }

  // Batched<T> (sluice/ops/batching.h): Tensors and numbers stacked into Tensors, tuples/pairs of them
  // per component, ParsedExamples stacked, anything else std::vector<T>.
  // num_parallel_calls >= 2 (or kAutotune) stacks several batches at once on the pool.
  Dataset<Batched<T>> Batch(int64_t batch_size, bool drop_remainder = false, int64_t num_parallel_calls = 0,
                            std::optional<bool> deterministic = std::nullopt) const {
    return Dataset<Batched<T>>(
        ops::MakeBatch<T>(node_, batch_size, drop_remainder, num_parallel_calls, deterministic));
  }

  // Batch(256, {.drop_remainder = true, .num_parallel_calls = kAutotune}): sluice/ops/op_options.h.
  Dataset<Batched<T>> Batch(int64_t batch_size, const BatchOptions& options) const {
    return Batch(batch_size, options.drop_remainder, options.num_parallel_calls, options.deterministic);
  }

  // The same groups as Batch, kept as std::vector<T> whatever T is: Range(10).BatchVectors(4) gives
  // {0, 1, 2, 3}, ... as std::vector<int64_t>, where Batch gives int64[4] tensors.
  Dataset<std::vector<T>> BatchVectors(int64_t batch_size, bool drop_remainder = false) const {
    return Dataset<std::vector<T>>(ops::MakeBatch<T, /*kIntoVectors=*/true>(node_, batch_size, drop_remainder,
                                                                            /*num_parallel_calls=*/0));
  }

  Dataset<T> Repeat(int64_t count = -1) const {
    return Dataset<T>(std::make_shared<ops::RepeatNode<T>>(node_, count));
  }

  Dataset<std::pair<int64_t, T>> Enumerate(int64_t start = 0) const {
    return Dataset<std::pair<int64_t, T>>(std::make_shared<ops::EnumerateNode<T>>(node_, start));
  }

  // num_shards = kShardHint: a placeholder for AutoShardPolicy HINT (sluice/ops/enumerate_shard.h).
  Dataset<T> Shard(int64_t num_shards, int64_t index) const {
    return Dataset<T>(ops::MakeShard<T>(node_, num_shards, index));
  }

  // This worker's share, by FILE, DATA, AUTO or HINT: see sluice/ops/auto_shard.h.
  Dataset<T> AutoShard(int64_t num_workers, int64_t worker_index,
                       AutoShardPolicy policy = AutoShardPolicy::kAuto) const {
    return Dataset<T>(ops::MakeAutoShard<T>(node_, num_workers, worker_index, policy));
  }

  Dataset<T> Prefetch(int64_t buffer_size) const { return Dataset<T>(ops::MakePrefetch<T>(node_, buffer_size)); }

  // seed unset: a random seed drawn now. See sluice/ops/shuffle.h.
  Dataset<T> Shuffle(int64_t buffer_size, std::optional<uint64_t> seed = std::nullopt,
                     bool reshuffle_each_iteration = true) const {
    return Dataset<T>(ops::MakeShuffle<T>(node_, buffer_size, seed, reshuffle_each_iteration));
  }

  Dataset<T> Shuffle(int64_t buffer_size, const ShuffleOptions& options) const {
    return Shuffle(buffer_size, options.seed, options.reshuffle_each_iteration);
  }

  // f: T -> Dataset<U> (or absl::StatusOr<Dataset<U>>). cycle_length kAutotune = the machine's cores.
  template <ops::NotFunctionHandle F>
  auto Interleave(F f, int64_t cycle_length = kAutotune, int64_t block_length = 1,
                  std::string name = "<function>") const {
    using Node = ops::InterleaveNode<T, F>;
    using U = typename Node::U;
    if (cycle_length == kAutotune) cycle_length = std::max<int64_t>(1, std::thread::hardware_concurrency());
    if (cycle_length <= 0 || block_length <= 0) {
      return Dataset<U>(ops::MakeErrorSource<U>(
          "Interleave", absl::InvalidArgumentError(absl::StrCat("Interleave: cycle_length (", cycle_length,
                                                                ") and block_length (", block_length,
                                                                ") must be > 0"))));
    }
    return Dataset<U>(std::make_shared<Node>("Interleave", node_, std::move(f),
                                             ops::FunctionLabelFor<F>(std::move(name)), cycle_length,
                                             block_length));
  }

  // Parallel form (num_parallel_calls 0: sequential; kAutotune: tuned); deterministic unset =
  // Options::deterministic. See sluice/ops/parallel_interleave.h.
  template <ops::NotFunctionHandle F>
  auto Interleave(F f, int64_t cycle_length, int64_t block_length, int64_t num_parallel_calls,
                  std::optional<bool> deterministic = std::nullopt, std::string name = "<function>") const {
    if (cycle_length == kAutotune) cycle_length = std::max<int64_t>(1, std::thread::hardware_concurrency());
    return Dataset<typename ops::InterleaveNode<T, F>::U>(
        ops::MakeParallelInterleave<T, F>(node_, std::move(f), cycle_length, block_length, num_parallel_calls,
                                          deterministic, ops::FunctionLabelFor<F>(std::move(name))));
  }

  // Interleave(f, {.cycle_length = 4, .num_parallel_calls = kAutotune}): sluice/ops/op_options.h.
  // (num_parallel_calls 0 builds the sequential Interleave.)
  template <ops::NotFunctionHandle F>
  auto Interleave(F f, InterleaveOptions options) const {
    return Interleave(std::move(f), options.cycle_length, options.block_length, options.num_parallel_calls,
                      options.deterministic, std::move(options.name));
  }

  // Interleave(f, 1, 1): each sub-dataset in full, in input order.
  template <ops::NotFunctionHandle F>
  auto FlatMap(F f, std::string name = "<function>") const {
    using Node = ops::InterleaveNode<T, F>;
    return Dataset<typename Node::U>(std::make_shared<Node>("FlatMap", node_, std::move(f),
                                                            ops::FunctionLabelFor<F>(std::move(name)), 1, 1));
  }

  template <ops::NotFunctionHandle P>
  Dataset<T> TakeWhile(P predicate, std::string name = "<function>") const {
    return Dataset<T>(std::make_shared<ops::TakeWhileNode<T, P>>(node_, std::move(predicate),
                                                                 ops::FunctionLabelFor<P>(std::move(name))));
  }

  Dataset<T> Concatenate(const Dataset<T>& other) const {
    return Dataset<T>(std::make_shared<ops::ConcatenateNode<T>>(node_, other.node()));
  }

  // The rows of each batch (vectors, Tensors, tuples of Tensors, ParsedExamples), see ops/unbatch.h.
  auto Unbatch() const
    requires ops::IsUnbatchable<T>
  {
    return Dataset<ops::Unbatched<T>>(std::make_shared<ops::UnbatchNode<T>>(node_));
  }

  // Datasets of `size` elements, window k starting at input element k * shift (default: size), taking
  // every stride-th element; see ops/window.h. Invalid arguments make the one InvalidArgument element.
  Dataset<Dataset<T>> Window(int64_t size, std::optional<int64_t> shift = std::nullopt, int64_t stride = 1,
                             bool drop_remainder = false) const {
    const int64_t window_shift = shift.value_or(size);
    const char* problem = size <= 0                           ? "Window size must be greater than zero."
                          : window_shift <= 0                 ? "Window shift must be greater than zero."
                          : stride <= 0                       ? "Window stride must be greater than zero."
                          : ops::WindowSpan(size, stride) < 0 ? "Window target buffer size overflow."
                                                              : nullptr;
    if (problem != nullptr) {
      return Dataset<Dataset<T>>(ops::MakeErrorSource<Dataset<T>>(
          "Window", absl::InvalidArgumentError(absl::StrCat(
                        problem, " (size=", size, ", shift=", window_shift, ", stride=", stride, ")"))));
    }
    return Dataset<Dataset<T>>(
        std::make_shared<ops::WindowNode<T>>(node_, size, window_shift, stride, drop_remainder));
  }

  Dataset<Dataset<T>> Window(int64_t size, const WindowOptions& options) const {
    return Window(size, options.shift, options.stride, options.drop_remainder);
  }

  // Elements that Batch stacks (Tensors, numbers, tuples/pairs of them) padded per batch into
  // Batched<T> (ops/padded_batch.h); shapes/values: one per component.
  Dataset<Batched<T>> PaddedBatch(int64_t batch_size, std::vector<ops::PaddedShape> padded_shapes = {},
                                  std::vector<Tensor> padding_values = {},
                                  bool drop_remainder = false) const requires ops::IsPaddable<T> {
    return Dataset<Batched<T>>(ops::MakePaddedBatch<T>(node_, batch_size, std::move(padded_shapes),
                                                       std::move(padding_values), drop_remainder));
  }

  // PaddedBatch(4, PaddedBatchOptions{.drop_remainder = true}): the type is spelled (deduced), because a
  // braced list there also reads as padded shapes.
  template <std::same_as<PaddedBatchOptions> O>
  Dataset<Batched<T>> PaddedBatch(int64_t batch_size, O options) const requires ops::IsPaddable<T> {
    return PaddedBatch(batch_size, std::move(options.padded_shapes), std::move(options.padding_values),
                       options.drop_remainder);
  }

  // Batches regrouped into batches of batch_size rows, or cycling through batch_sizes (ops/rebatch.h).
  Dataset<T> Rebatch(int64_t batch_size, bool drop_remainder = false) const
    requires IsConcatenable<T>
  {
    return Dataset<T>(ops::MakeRebatch<T>(node_, {batch_size}, drop_remainder));
  }
  Dataset<T> Rebatch(std::vector<int64_t> batch_sizes, bool drop_remainder = false) const
    requires IsConcatenable<T>
  {
    return Dataset<T>(ops::MakeRebatch<T>(node_, std::move(batch_sizes), drop_remainder));
  }

  // f: const T& -> integer length (or StatusOr). See ops/bucket_by_sequence_length.h.
  template <ops::NotFunctionHandle F>
  Dataset<Batched<T>> BucketBySequenceLength(F element_length_func, std::vector<int64_t> bucket_boundaries,
                                             std::vector<int64_t> bucket_batch_sizes,
                                             std::vector<ops::PaddedShape> padded_shapes = {},
                                             std::vector<Tensor> padding_values = {},
                                             bool pad_to_bucket_boundary = false, bool no_padding = false,
                                             bool drop_remainder = false, std::string name = "<function>") const {
    return Dataset<Batched<T>>(ops::MakeBucketBySequenceLength<T>(
        node_, std::move(element_length_func), ops::FunctionLabelFor<F>(std::move(name)),
        ops::BucketOptions{std::move(bucket_boundaries), std::move(bucket_batch_sizes),
                           std::move(padded_shapes), std::move(padding_values), pad_to_bucket_boundary,
                           no_padding, drop_remainder}));
  }

  // (..., BucketBySequenceLengthOptions{.pad_to_bucket_boundary = true}): spelled, as PaddedBatch's.
  template <ops::NotFunctionHandle F, std::same_as<BucketBySequenceLengthOptions> O>
  Dataset<Batched<T>> BucketBySequenceLength(F element_length_func, std::vector<int64_t> bucket_boundaries,
                                             std::vector<int64_t> bucket_batch_sizes, O options) const {
    return BucketBySequenceLength(std::move(element_length_func), std::move(bucket_boundaries),
                                  std::move(bucket_batch_sizes), std::move(options.padded_shapes),
                                  std::move(options.padding_values), options.pad_to_bucket_boundary,
                                  options.no_padding, options.drop_remainder, std::move(options.name));
  }

  // Serialized tf.train.Examples (one per string, or a batch per vector) parsed by `spec` (ops/parse_example.h).
  Dataset<ParsedExample> ParseExample(ParseSpec spec) const
    requires ops::IsSerializedExamples<T>
  {
    return Dataset<ParsedExample>(ops::MakeParseExample<T>(node_, std::move(spec)));
  }

  // Cache() caches in memory; Cache(path) in files that persist across runs ("" = memory, but needs an
  // ElementCodec like any path). See sluice/ops/cache.h.
  Dataset<T> Cache() const { return Dataset<T>(std::make_shared<ops::CacheNode<T>>(node_, "")); }
  Dataset<T> Cache(std::string filename) const {
    static_assert(HasElementCodec<T>, "Cache(filename): the element type has no sluice::ElementCodec "
                                      "(sluice/ops/element_codec.h); specialise it, or cache in memory with Cache()");
    return Dataset<T>(std::make_shared<ops::CacheNode<T>>(node_, std::move(filename)));
  }

  // f(const State&, T) -> std::pair<State, U> (or absl::StatusOr of it). See sluice/ops/scan.h.
  template <class State, ops::NotFunctionHandle F>
  auto Scan(State initial_state, F f, std::string name = "<function>") const {
    using Node = ops::ScanNode<T, State, F>;
    return Dataset<typename Node::U>(std::make_shared<Node>(node_, std::move(initial_state), std::move(f),
                                                            ops::FunctionLabelFor<F>(std::move(name))));
  }

  // Drops error elements, counting them in `counter` when given. See sluice/ops/ignore_errors.h.
  Dataset<T> IgnoreErrors(bool log_warning = false, std::shared_ptr<ErrorCounter> counter = nullptr) const {
    return Dataset<T>(std::make_shared<ops::IgnoreErrorsNode<T>>(node_, log_warning, std::move(counter)));
  }

 private:
  static std::shared_ptr<IteratorContext> MakeContext(const Options& options) {
    auto context = std::make_shared<IteratorContext>();
    context->options = options;
    if (options.thread_pool_size > 0) {
      context->private_pool = std::make_shared<ThreadPool>(options.thread_pool_size);
      context->pool = context->private_pool.get();
    } else {
      context->pool = &ThreadPool::Default();
    }
    return context;
  }

  // make(std::function<Sig>, FunctionParam) -> Dataset<U>, or an error source when the function cannot
  // be resolved in this process.
  template <class H, class Make>
  auto WithFunction(const char* op, const H& handle, Make make) const {
    const auto& bound = ops::Bind(handle);
    using Fn = std::remove_cvref_t<decltype(*bound.Resolve())>;
    using Arg = typename ops::FunctionArgOf<Fn>::type;
    static_assert(std::is_same_v<std::remove_cvref_t<Arg>, T>,
                  "the registered function's argument type is not the dataset's element type");
    using Result = decltype(make(std::declval<Fn>(), bound.param()));
    auto fn = bound.Resolve();
    if (!fn.ok()) {
      return Result(ops::MakeErrorSource<typename Result::element_type>(op, fn.status()));
    }
    return make(std::move(*fn), bound.param());
  }

  NodePtr<T> node_;
};

// Pairs of elements until the shorter dataset ends (tf.data.Dataset.zip; see sluice/ops/zip.h).
template <class A, class B>
Dataset<std::pair<A, B>> Zip(const Dataset<A>& a, const Dataset<B>& b) {
  return Dataset<std::pair<A, B>>(std::make_shared<ops::ZipNode<std::pair<A, B>, A, B>>(a.node(), b.node()));
}

// Tuples of elements from three or more datasets, until the shortest ends.
template <class A, class B, class C, class... Rest>
Dataset<std::tuple<A, B, C, Rest...>> Zip(const Dataset<A>& a, const Dataset<B>& b, const Dataset<C>& c,
                                          const Dataset<Rest>&... rest) {
  using Out = std::tuple<A, B, C, Rest...>;
  return Dataset<Out>(
      std::make_shared<ops::ZipNode<Out, A, B, C, Rest...>>(a.node(), b.node(), c.node(), rest.node()...));
}

// The files matching `patterns` (glob), sorted; shuffled by default as tf.data.Dataset.list_files.
inline Dataset<std::string> ListFiles(std::vector<std::string> patterns, bool shuffle = true,
                                      std::optional<uint64_t> seed = std::nullopt) {
  absl::StatusOr<std::vector<std::string>> files = ops::MatchFiles(patterns);
  if (!files.ok()) return Dataset<std::string>(ops::MakeErrorSource<std::string>("ListFiles", files.status()));
  return Dataset<std::string>(std::make_shared<ops::ListFilesNode>(std::move(*files), shuffle, seed));
}

inline Dataset<std::string> ListFiles(std::vector<std::string> patterns, const ListFilesOptions& options) {
  return ListFiles(std::move(patterns), options.shuffle, options.seed);
}

// The records of TFRecord files, file after file (tf.data.TFRecordDataset). read_mode: how uncompressed
// files are read (sluice/io/sequential_reader.h and docs/io.md "Read modes": kAuto is safe whatever
// another process does to the file; kMmap maps them, and a file truncated under the reader kills it).
inline Dataset<std::string> TFRecord(std::vector<std::string> files, Compression compression = Compression::kNone,
                                     ReadMode read_mode = ReadMode::kAuto) {
  return Dataset<std::string>(std::make_shared<ops::RecordFileNode>(
      std::move(files), ops::RecordFormat::kTFRecord, compression, ops::FixedLengthLayout{}, read_mode));
}

// TFRecord's keyword arguments, as tf.data.TFRecordDataset's.
struct TFRecordOptions {
  Compression compression = Compression::kNone;
  // Bytes per read (the readers' block size); 0 = their default (1 MiB, two reads in flight).
  int64_t buffer_size = 0;
  // 0: one file after another. N > 0: N files read at once by a parallel Interleave, their records
  // alternating one by one (tf.data's cycle_length = num_parallel_calls = N, block_length = 1);
  // kAutotune: as many files as cores, the parallelism tuned.
  int64_t num_parallel_reads = 0;
  // Parallel reads only: unset = Options::deterministic; false lets a slow file's records come later.
  std::optional<bool> deterministic = std::nullopt;
  ReadMode read_mode = ReadMode::kAuto;
};

// TFRecord(files, {.compression = Compression::kGzip, .num_parallel_reads = 4}). With parallel reads the
// graph is ListFiles(files, unshuffled) -> Interleave(kReadTFRecord), portable and sharded by FILE like
// any ListFiles. Negative values make the dataset one InvalidArgument element.
SLUICE_EXPORT Dataset<std::string> TFRecord(std::vector<std::string> files, const TFRecordOptions& options);

// The lines of text files, without their line endings (tf.data.TextLineDataset). read_mode: see TFRecord.
inline Dataset<std::string> TextLines(std::vector<std::string> files, Compression compression = Compression::kNone,
                                      ReadMode read_mode = ReadMode::kAuto) {
  return Dataset<std::string>(std::make_shared<ops::RecordFileNode>(
      std::move(files), ops::RecordFormat::kTextLines, compression, ops::FixedLengthLayout{}, read_mode));
}

// Range(stop) = Range(0, stop, 1), as tf.data.Dataset.range.
inline Dataset<int64_t> Range(int64_t start, int64_t stop, int64_t step = 1) {
  return Dataset<int64_t>(ops::MakeRange(start, stop, step));
}
inline Dataset<int64_t> Range(int64_t stop) { return Range(0, stop, 1); }

// The values in order (tf.data's from_tensor_slices over a list of elements).
template <class T>
Dataset<T> FromVector(std::vector<T> values) {
  return Dataset<T>(std::make_shared<ops::FromVectorNode<T>>(
      std::make_shared<const std::vector<T>>(std::move(values))));
}

// One element, `value` (tf.data.Dataset.from_tensors). See sluice/ops/from_tensors.h.
template <class T>
Dataset<T> FromTensors(T value) {
  return Dataset<T>(std::make_shared<ops::FromTensorsNode<T>>(std::move(value)));
}

// The rows of a Tensor, a tuple or pair of Tensors, or a ParsedExample along dimension 0
// (tf.data.Dataset.from_tensor_slices). See sluice/ops/from_tensors.h.
template <class T>
requires ops::IsTensorSliceable<T> Dataset<T> FromTensorSlices(T value) {
  return Dataset<T>(ops::MakeFromTensorSlices(std::move(value)));
}

// The dataset a registered factory makes (sluice/ops/registered_dataset.h); handle is a
// Function<Dataset<T>()>, bare or bound to its arguments. An unresolvable handle is the one error element.
template <ops::FunctionHandle H>
auto RegisteredDataset(const H& handle) {
  const auto& bound = ops::Bind(handle);
  using Fn = std::remove_cvref_t<decltype(*bound.Resolve())>;
  using D = std::invoke_result_t<Fn&>;
  using T = typename D::element_type;
  auto fn = bound.Resolve();
  if (!fn.ok()) return D(ops::MakeErrorSource<T>("RegisteredDataset", fn.status()));
  return D(std::make_shared<ops::RegisteredDatasetNode<T>>((*fn)().node(), bound.param()));
}

// factory() -> a callable returning std::optional<T> (or absl::StatusOr of it), or an AsyncGenerator;
// called anew for every iteration. See sluice/ops/from_generator.h.
template <class Factory>
auto FromGenerator(Factory factory, std::string name = "<function>") {
  using Node = ops::FromGeneratorNode<Factory>;
  return Dataset<typename Node::T>(std::make_shared<Node>(std::move(factory), FunctionLabel(std::move(name))));
}
// The same, saveable: `hooks` save and restore a source's state (sluice/ops/from_generator.h).
template <class Factory, class SaveFn, class RestoreFn>
auto FromGenerator(Factory factory, ops::GeneratorHooks<SaveFn, RestoreFn> hooks,
                   std::string name = "<function>") {
  using Node = ops::FromGeneratorNode<Factory, ops::GeneratorHooks<SaveFn, RestoreFn>>;
  return Dataset<typename Node::T>(
      std::make_shared<Node>(std::move(factory), FunctionLabel(std::move(name)), std::move(hooks)));
}

// Records of record_bytes from each file, after header_bytes and before footer_bytes
// (tf.data.FixedLengthRecordDataset). See sluice/ops/file_sources.h.
inline Dataset<std::string> FixedLengthRecords(std::vector<std::string> files, int64_t record_bytes,
                                               int64_t header_bytes = 0, int64_t footer_bytes = 0,
                                               Compression compression = Compression::kNone,
                                               ReadMode read_mode = ReadMode::kAuto) {
  if (record_bytes <= 0 || header_bytes < 0 || footer_bytes < 0) {
    return Dataset<std::string>(ops::MakeErrorSource<std::string>(
        "FixedLengthRecords",
        absl::InvalidArgumentError(absl::StrCat("FixedLengthRecords: record_bytes (", record_bytes,
                                                ") must be > 0 and header_bytes (", header_bytes,
                                                ") and footer_bytes (", footer_bytes, ") >= 0"))));
  }
  ops::FixedLengthLayout layout{static_cast<uint64_t>(record_bytes), static_cast<uint64_t>(header_bytes),
                                static_cast<uint64_t>(footer_bytes)};
  return Dataset<std::string>(std::make_shared<ops::RecordFileNode>(std::move(files), ops::RecordFormat::kFixedLength,
                                                                    compression, layout, read_mode));
}

// Elements drawn at random from `datasets` by `weights` (empty = uniform). See sluice/ops/sample_from_datasets.h.
template <class T>
Dataset<T> SampleFromDatasets(const std::vector<Dataset<T>>& datasets, std::vector<double> weights = {},
                              std::optional<uint64_t> seed = std::nullopt, bool stop_on_empty_dataset = false,
                              bool rerandomize_each_iteration = false) {
  std::vector<NodePtr<T>> nodes;
  for (const Dataset<T>& d : datasets) nodes.push_back(d.node());
  return Dataset<T>(ops::MakeSampleFromDatasets<T>(std::move(nodes), std::move(weights), seed, stop_on_empty_dataset,
                                                   rerandomize_each_iteration));
}

template <class T>
Dataset<T> SampleFromDatasets(const std::vector<Dataset<T>>& datasets, std::vector<double> weights,
                              const SampleOptions& options) {
  return SampleFromDatasets(datasets, std::move(weights), options.seed, options.stop_on_empty_dataset,
                            options.rerandomize_each_iteration);
}

// The next element of datasets[k] for each k of `choices`. See sluice/ops/sample_from_datasets.h.
template <class T>
Dataset<T> ChooseFromDatasets(const std::vector<Dataset<T>>& datasets, const Dataset<int64_t>& choices,
                              bool stop_on_empty_dataset = true) {
  std::vector<NodePtr<T>> nodes;
  for (const Dataset<T>& d : datasets) nodes.push_back(d.node());
  return Dataset<T>(ops::MakeChooseFromDatasets<T>(std::move(nodes), choices.node(), stop_on_empty_dataset));
}

}  // namespace sluice

#endif  // SLUICE_OPS_DATASET_H_
