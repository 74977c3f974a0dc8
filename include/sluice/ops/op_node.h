// OpNode: the immutable definition of one dataset op: its stable name, its parameters as named values,
// its inputs, its cardinality and its element type's name. Node<T> adds the element type and makes Streams.
//
// Definitions never hold iteration state, so one definition serves any number of iterators at once,
// and a pipeline can be walked (for printing, serialising to remote workers, checkpoint layouts) without
// running it. A user function appears as a FunctionParam: a registered name with its arguments, or a
// lambda's label (such a pipeline cannot cross the wire; sluice/ops/graph.h says which node holds it).
#ifndef SLUICE_OPS_OP_NODE_H_
#define SLUICE_OPS_OP_NODE_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sluice/engine/async_scope.h"
#include "sluice/export.h"
#include "sluice/ops/checkpoint_state.h"
#include "sluice/ops/element_spec.h"
#include "sluice/ops/element_type.h"
#include "sluice/ops/iterator_state.h"
#include "sluice/ops/node_path.h"
#include "sluice/ops/options.h"
#include "sluice/ops/stream.h"

namespace sluice {

class ThreadPool;
class OpNode;
class Tuner;

struct Param;

// Opaque bytes a node encodes itself (a ParseSpec, padding Tensors, FromVector's values), with a short
// readable form for DebugString. The bytes are the lossless part; `display` is derived from them.
struct EncodedParam {
  std::string bytes;
  std::string display;
  friend bool operator==(const EncodedParam& a, const EncodedParam& b) { return a.bytes == b.bytes; }
};

// A function held by an op. `registered`: `name` is a SLUICE_REGISTER_FUNCTION name and `args` rebuild
// the callable in another process (sluice/ops/function_registry.h). Otherwise `name` is only a label
// (a lambda), and a pipeline holding it cannot be serialized.
// Whether a function was declared to keep state of its own (sluice/ops/stateful_function.h).
enum class FunctionState : uint8_t {
  kNone,      // not declared: treated as stateless
  kDeclared,  // Stateful(f): checkpoints refuse it
  kSaved,     // Stateful(f, save, restore)
};

struct FunctionParam {
  std::string name;
  std::shared_ptr<const std::vector<Param>> args;  // never null when registered
  bool registered = false;
  FunctionState state = FunctionState::kNone;
};

// A lambda's label: shown by DebugString, never taken for a registration.
inline FunctionParam FunctionLabel(std::string label) { return FunctionParam{std::move(label), nullptr, false}; }

using ParamValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>, std::vector<double>,
                                std::vector<std::string>, EncodedParam, FunctionParam>;

struct Param {
  std::string name;
  ParamValue value;
};

// What every stream of one iterator shares: where parallel work runs and the options it was made with.
struct IteratorContext {
  ThreadPool* pool = nullptr;
  Options options;
  std::shared_ptr<ThreadPool> private_pool;  // owns `pool` when the options asked for a private one
  // Auto-shard by FILE (sluice/distribute/auto_shard.h): the file sources `targets` keep files i with
  // i mod num_shards == index when they make their streams. They are the decision's node paths
  // (sluice/ops/node_path.h) resolved against this iterator's root when the iterator was made
  // (distribute::MakeFileShard; a node does not know its own path); other nodes ignore them.
  struct FileShard {
    std::vector<const OpNode*> targets;
    int64_t num_shards = 1;
    int64_t index = 0;
    bool Cuts(const OpNode* node) const {
      return num_shards > 1 && std::find(targets.begin(), targets.end(), node) != targets.end();
    }
  };
  FileShard file_shard;
  // AutoShardPolicy HINT: what the Shard(kShardHint, ...) placeholders of this iterator's graph stand for
  // (Shard(num_shards, index)); num_shards 0: no hint was given, and such a placeholder fails.
  struct ShardHint {
    int64_t num_shards = 0;
    int64_t index = 0;
  };
  ShardHint shard_hint;
  // Seeds drawn for unseeded ops, pass counters and memory caches of this iterator: never null, never
  // shared with another iterator (sluice/ops/iterator_state.h). Below a Repeat, the state of its epoch.
  std::shared_ptr<IteratorState> state = std::make_shared<IteratorState>();
  // The iterator's autotuner, made by the first kAutotune op that needs one: see sluice/ops/autotune.h.
  // Shared by every context derived from this one (Derive), so the whole iterator has one tuner.
  struct TunerSlot {
    std::mutex mu;
    std::shared_ptr<Tuner> tuner;
  };
  std::shared_ptr<TunerSlot> tuner_slot = std::make_shared<TunerSlot>();
  // Async streams destroyed on a pool worker finish their teardown here instead of blocking that worker
  // (sluice/ops/detail/async_stream_owner.h); the iterator joins it after dropping its pipeline.
  std::shared_ptr<AsyncScope> teardowns = std::make_shared<AsyncScope>();
  // Tasks of this iterator now inside user code or an input's Poll (sluice/ops/user_function_stop.h):
  // what Iterator::Close(timeout) reports when the teardown does not finish.
  std::shared_ptr<std::atomic<int64_t>> busy_tasks = std::make_shared<std::atomic<int64_t>>(0);
  // This iterator's share of a pool that other iterators use too, changed by its owner while the
  // iterator runs (a data-service worker divides its threads among its tasks): the tuner keeps the sum
  // of its ops' parallelism within it as well as within the CPU budget. Null: no share.
  std::shared_ptr<const std::atomic<int>> cpu_share;

  // A copy for the streams below one op that changes what they are told (AutoShard's file shard or shard
  // hint); everything else stays shared with this iterator.
  std::shared_ptr<IteratorContext> Derive() const { return std::make_shared<IteratorContext>(*this); }
};
using IteratorContextPtr = std::shared_ptr<const IteratorContext>;

// Exported, with its destructor defined in ops/op_node.cc: that out-of-line virtual is the key function,
// so OpNode's vtable and typeinfo exist once, in the library, and every node a program builds (Node<T>
// instantiated in the program) derives from that one typeinfo. The library's auto-shard code
// dynamic_casts nodes from either side (sluice/distribute/auto_shard.h); a copy per module would make
// that depend on the runtime comparing type names instead of addresses.
class SLUICE_EXPORT OpNode {
 public:
  virtual ~OpNode();
  virtual std::string_view op_name() const = 0;
  virtual std::vector<Param> params() const = 0;
  virtual std::vector<std::shared_ptr<const OpNode>> inputs() const = 0;
  virtual int64_t cardinality() const = 0;
  // ElementTypeName of the elements (sluice/ops/element_type.h); "" when they cannot cross a process
  // boundary, and then neither can a pipeline containing this node.
  virtual std::string element_type_name() const = 0;
  // The dtypes and static shapes of the elements, from the graph (sluice/ops/element_spec.h).
  virtual DatasetSpec element_spec() const = 0;
  // Bumped when an op's params or semantics change incompatibly; the graph format records it.
  virtual int64_t op_version() const { return 1; }
  // Why this node cannot cross a process boundary although its params look complete (it holds a pointer
  // into this process, or values without a codec); "" when it can.
  virtual std::string not_portable_reason() const { return ""; }
  // Checkpoints (docs/checkpoint.md): iterator-wide state the node keeps in IteratorState beyond its
  // record (a memory Cache's published contents). Saved whether or not the node has a stream at the
  // save, since a later pass uses it. nullopt: nothing to save; an error (FailedPrecondition) says why
  // it cannot be saved.
  virtual absl::StatusOr<std::optional<std::string>> SaveResource(const IteratorState& state) const {
    (void)state;
    return std::nullopt;
  }
  // Compact checkpoints (Options::compact_checkpoints): true when this node's streams can Mark their
  // place without elements under `options` (a parallel op only when it keeps input order). The iterator
  // checks every node; the inputs answer for themselves.
  virtual bool keeps_compact_state(const Options& options) const {
    (void)options;
    return false;
  }
  // Compact checkpoints: false when a stream of this node restored from a mark may yield the elements
  // left in another order than the saving stream would have (a ParallelInterleave not kept
  // deterministic: the same multiset). Its inputs answer for themselves (ReplaysInOrder).
  virtual bool keeps_order(const Options& options) const {
    (void)options;
    return true;
  }
  // Compact checkpoints: true when this node's restore re-reads its input from a mark and picks elements
  // by their position (Shuffle's window, an Interleave's cycle), so the input must replay in order.
  virtual bool rereads_input_by_position() const { return false; }
  // True when this node's streams save the state of a function declared Stateful(f, save, restore)
  // (Map, Filter); a declared-stateful function elsewhere makes Save fail.
  virtual bool saves_function_state() const { return false; }
  // True when this node's streams number their passes with IteratorState::BeginPass (a reshuffling
  // Shuffle, a shuffled ListFiles): a Repeat above saves their counters (sluice/ops/repeat.h).
  virtual bool begins_passes() const { return false; }
  // True when this node's streams take a seed from IteratorState::Seed (an unseeded Shuffle, ListFiles or
  // SampleFromDatasets): a compact Interleave draws it when it opens a slot, so that the slot's saved
  // records hold it even when the stream that uses it is made later (sluice/ops/nested_checkpoint.h).
  virtual bool draws_seed() const { return false; }
  // Puts what SaveResource returned into a restoring iterator's `state`, before any stream is made.
  virtual absl::Status RestoreResource(IteratorState* state, std::string_view bytes) const {
    (void)state;
    (void)bytes;
    return absl::DataLossError("a resource this op does not keep");
  }
};

template <class T>
class Node : public OpNode {
 public:
  using element_type = T;
  std::string element_type_name() const override { return ElementTypeName<T>(); }
  // What the type says; ops that know more (sources of values, Batch, ParseExample, ...) refine it.
  DatasetSpec element_spec() const override { return StaticElementSpec<T>(); }
  // Sources with positions mark them (Stream::Mark's default).
  bool keeps_compact_state(const Options&) const override {
    return dynamic_cast<const PositionedSource<T>*>(this) != nullptr;
  }
  virtual std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const = 0;
  // A stream continuing from the state saved at `path` (docs/checkpoint.md): what Stream::Save wrote
  // there, inputs restored from their child paths. Never a live stream rewound. The default restores a
  // PositionedSource at its saved position; other ops fail with FailedPrecondition naming op and path.
  virtual absl::StatusOr<std::unique_ptr<Stream<T>>> RestoreStream(IteratorContextPtr context,
                                                                   const CheckpointReader& reader,
                                                                   const std::string& path) const {
    const auto* positioned = dynamic_cast<const PositionedSource<T>*>(this);
    if (positioned == nullptr) return reader.Unsupported(path);
    SourcePosition position;
    if (absl::Status read = reader.ReadPosition(path, &position); !read.ok()) return read;
    return positioned->MakeStreamAt(std::move(context), position);
  }
};

template <class T>
using NodePtr = std::shared_ptr<const Node<T>>;

// What all of `inputs` agree on (MergedSpec).
template <class T>
DatasetSpec MergedSpecOf(const std::vector<NodePtr<T>>& inputs) {
  if (inputs.empty()) return StaticElementSpec<T>();
  DatasetSpec spec = inputs[0]->element_spec();
  for (size_t i = 1; i < inputs.size(); ++i) spec = MergedSpec(spec, inputs[i]->element_spec());
  return spec;
}

// The nodes at and below `node` whose streams begin passes (OpNode::begins_passes), in graph order. An op
// that makes an input's stream later than it is marked (Repeat's next epoch, Concatenate's second input)
// saves their counters with its mark: the mark can be older than the save, and the passes begun after a
// restore from it must get the numbers they had, not the counters the save found.
inline void CollectPassNodes(const std::shared_ptr<const OpNode>& node,
                             std::vector<IteratorState::NodeKey>* out) {
  if (node->begins_passes()) out->push_back(IteratorState::NodeKey{node.get(), node});
  for (const std::shared_ptr<const OpNode>& input : node->inputs()) CollectPassNodes(input, out);
}

// Compact checkpoints: whether streams of `node` and everything below it, restored from a mark, yield
// what is left in the order the saving stream would have. Ops that keep a mark only every kMarkInterval
// elements re-read and drop the elements after it, which needs this; otherwise they mark every element.
inline bool ReplaysInOrder(const OpNode& node, const Options& options) {
  if (!node.keeps_order(options)) return false;
  for (const std::shared_ptr<const OpNode>& input : node.inputs()) {
    if (!ReplaysInOrder(*input, options)) return false;
  }
  return true;
}

// A param's value as DebugString shows it (long strings and lists elided).
SLUICE_EXPORT std::string ParamValueString(const ParamValue& value);

// "Range(start=0, stop=10, step=1)" and its inputs, one op per line, innermost last.
SLUICE_EXPORT std::string DebugString(const OpNode& node);

}  // namespace sluice

#endif  // SLUICE_OPS_OP_NODE_H_
