// Checkpoint state: the sections an iterator's streams write when it saves (CheckpointWriter), the bytes
// they become (EncodeCheckpoint) and the checked view a restore reads them through (CheckpointReader).
// docs/checkpoint.md describes the format and the semantics; Iterator::Save and Dataset::RestoreIterator
// are the API.
//
// Contract:
// - One section per node path (sluice/ops/node_path.h) of the pipeline's graph, holding the op name, its
//   params (as DebugString shows them, for error messages), a hash of its full params, the node's
//   IteratorState record (seed, next pass), the node's resource when it keeps one (OpNode::SaveResource)
//   and, when the node had a stream at the save, the op's state bytes. The op state is the op's own: values
//   encoded one after another with ElementCodec.
// - The whole state starts with "SLCK", the format version, and an XXH64 of the rest, so any truncation
//   or bit flip is DataLoss before anything is decoded; then the root's element type and the graph
//   fingerprint (XXH64 of the node list).
// - CheckpointReader::Parse compares the saved node list with the pipeline it restores into and fails
//   with FailedPrecondition naming the first differing node: "saved from Shuffle(buffer_size=1000, ...)
//   at /0/1, this pipeline has Shuffle(buffer_size=100, ...)". Lambdas are compared by label only.
// - Ops read their state with ReadState: a missing section, bytes that do not decode, or trailing bytes
//   are DataLoss naming the op and the path. Nothing here crashes or allocates beyond the input's size on
//   hostile bytes (ElementCodec's guarantee).
// - Threading: a writer is filled by one save at a time (a save is sequential, even across threads); a
//   reader is immutable after Parse.
#ifndef SLUICE_OPS_CHECKPOINT_STATE_H_
#define SLUICE_OPS_CHECKPOINT_STATE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/export.h"
#include "sluice/ops/element_codec.h"

namespace sluice {

class OpNode;
class IteratorState;
struct Options;

// Bumped whenever the layout of the state or of any op's section changes incompatibly.
// 2: Shard saves a call left pending. 3: Repeat saves the pass counters below it; compact Shuffle.
// 4: Concatenate saves the pass counters below its second input. 5: compact Prefetch, ParallelMap and
// Shuffle save the elements after their mark (marks every kMarkInterval elements); ParsedExample elements
// carry their feature names. 6: pass counters count per Repeat epoch (IteratorState::ForEpoch): the
// records and ListFiles/Shuffle positions hold pass indices, and Repeat saves its epoch.
inline constexpr uint64_t kCheckpointFormatVersion = 6;

class SLUICE_EXPORT CheckpointWriter {
 public:
  // `root`: the pipeline being saved; it names ops in errors.
  explicit CheckpointWriter(const OpNode* root) : root_(root) {}

  // The op state of the stream at `path`: values with ElementCodecs, one after another.
  template <class... Ts>
  void WriteState(std::string_view path, const Ts&... values) {
    std::string bytes;
    (ElementCodec<Ts>::Encode(values, &bytes), ...);
    sections_[std::string(path)] = std::move(bytes);
  }
  // More values after those already written at `path`: for an op made of two streams (a parallel Batch:
  // the parallel stacking, then the grouping of its input), each writing its part of the one section.
  template <class... Ts>
  void AppendState(std::string_view path, const Ts&... values) {
    std::string& bytes = sections_[std::string(path)];
    (ElementCodec<Ts>::Encode(values, &bytes), ...);
  }
  // A section written elsewhere (a StreamMark's).
  void WriteRaw(std::string_view path, std::string_view bytes) {
    sections_[std::string(path)] = std::string(bytes);
  }
  // Bytes written elsewhere after those already at `path` (a StreamMark's part of a shared section).
  void AppendRaw(std::string_view path, std::string_view bytes) {
    sections_[std::string(path)].append(bytes);
  }
  // A source's position (sluice/ops/stream.h).
  void WritePosition(std::string_view path, int64_t index, uint64_t offset) {
    WriteState(path, index, offset);
  }
  template <class Position>
  void WritePosition(std::string_view path, const Position& position) {
    WritePosition(path, position.index, position.offset);
  }

  // FailedPrecondition "checkpointing ParallelMap at /0 is not supported yet: ParallelMap(f=..., ...)",
  // with `why` appended when given.
  absl::Status Unsupported(std::string_view path, std::string_view why = "") const;
  // A stateful function's save hook failed: "saving the function state of Map at /0: <why>".
  absl::Status FunctionStateError(std::string_view path, std::string_view action,
                                  const absl::Status& why) const;

  const OpNode* root() const { return root_; }
  const std::map<std::string, std::string>& sections() const { return sections_; }

 private:
  const OpNode* root_;
  std::map<std::string, std::string> sections_;
};

// The bytes of a checkpoint: `root`'s node list and records (from `state`), and the writer's sections.
// FailedPrecondition when a section was written for a path that is not a node of `root`.
SLUICE_EXPORT absl::StatusOr<std::string> EncodeCheckpoint(const std::shared_ptr<const OpNode>& root,
                                                           const IteratorState& state,
                                                           const CheckpointWriter& writer);

class SLUICE_EXPORT CheckpointReader {
 public:
  // Checks `bytes` (DataLoss) and that they were saved from a pipeline like `root` (FailedPrecondition).
  static absl::StatusOr<CheckpointReader> Parse(std::string_view bytes,
                                                const std::shared_ptr<const OpNode>& root);

  // Puts the saved seeds and pass counters of every node into `state` (a fresh iterator's), then the
  // nodes' resources (OpNode::RestoreResource). DataLoss naming the node when a resource is corrupt.
  absl::Status RestoreRecords(IteratorState* state) const;

  // True when the node at `path` had a stream at the save and wrote a section.
  bool HasState(std::string_view path) const;

  // Decodes the op state at `path` into `values` (as WriteState wrote them).
  template <class... Ts>
  absl::Status ReadState(std::string_view path, Ts*... values) const {
    const Node* node = Find(path);
    if (node == nullptr || !node->state.has_value()) return Missing(path);
    std::string_view in = *node->state;
    absl::Status status;
    ((status = status.ok() ? ElementCodec<Ts>::Decode(&in, values) : status), ...);
    if (status.ok() && !in.empty()) status = absl::DataLossError(absl::StrCat(in.size(), " trailing bytes"));
    if (!status.ok()) return Corrupt(path, status);
    return absl::OkStatus();
  }
  // A source's position.
  template <class Position>
  absl::Status ReadPosition(std::string_view path, Position* position) const {
    return ReadState(path, &position->index, &position->offset);
  }

  // DataLoss "checkpoint state of Shuffle at /0 is corrupt: <why>".
  absl::Status Corrupt(std::string_view path, const absl::Status& why) const;
  // FailedPrecondition "restoring Cache at /0 is not supported yet: Cache(...)".
  absl::Status Unsupported(std::string_view path) const;
  // A stateful function's restore hook failed: "restoring the function state of Map at /0: <why>",
  // with why's code.
  absl::Status FunctionStateError(std::string_view path, std::string_view action,
                                  const absl::Status& why) const;

  // Saved nodes, in graph order (for tests and tools).
  struct Node {
    std::string path;
    std::string op;
    std::string display;  // Op(param=value, ...)
    uint64_t params_hash = 0;
    std::optional<uint64_t> seed;
    uint64_t next_pass = 0;
    bool has_record = false;
    std::optional<std::string> state;
    std::optional<std::string> resource;  // OpNode::SaveResource's bytes
  };
  const std::vector<Node>& nodes() const { return nodes_; }

 private:
  const Node* Find(std::string_view path) const;
  absl::Status Missing(std::string_view path) const;

  std::shared_ptr<const OpNode> root_;
  std::vector<Node> nodes_;
  std::map<std::string, size_t, std::less<>> by_path_;
};

// Options::compact_checkpoints: OK when every node of `root` keeps a compact state under `options`
// (OpNode::keeps_compact_state); otherwise InvalidArgument naming the first node that does not, its path
// and its params.
SLUICE_EXPORT absl::Status CheckCompactCheckpoints(const OpNode& root, const Options& options);

// Iterator::Save's first check: FailedPrecondition naming the first node whose function was declared
// Stateful(f) without hooks, or declared stateful in an op that cannot save a function's state
// (OpNode::saves_function_state).
SLUICE_EXPORT absl::Status CheckFunctionStates(const OpNode& root);

// SaveToFile's write: `bytes` to a temporary file next to `path`, fsync, rename over `path`, fsync of the
// directory; a crash leaves the old file or the new one, never a torn one.
SLUICE_EXPORT absl::Status WriteFileAtomically(const std::string& path, std::string_view bytes);
SLUICE_EXPORT absl::StatusOr<std::string> ReadCheckpointFile(const std::string& path);

}  // namespace sluice

#endif  // SLUICE_OPS_CHECKPOINT_STATE_H_
