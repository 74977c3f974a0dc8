// Compact checkpoints of datasets an op builds while it runs (an Interleave's slots: f(element) makes a
// dataset whose graph is not part of the iterator's). Such a slot saves, inside its op's section, the
// records its nodes had when it opened and its stream's mark; a restore makes the dataset again from the
// re-read input element and restores its stream from these two (docs/checkpoint.md, "Compact mode").
//
// Contract:
// - PrepareNestedSeeds runs before the slot's stream is made. It gives every node of the slot's dataset
//   that draws a seed (OpNode::draws_seed) and has none yet one derived from `slot_seed` (the op's own
//   per-iterator seed mixed with the slot's input index) and the node's place, instead of one drawn at
//   random when its stream is made. So a restore that opens the slot again from a mark older than the
//   save (a Prefetch above ran ahead) gives its unseeded random ops the seeds the saving iterator's slot
//   had, and a random op whose stream is made later (below a Concatenate's second input) has its seed
//   from the start.
// - CaptureNestedRecords runs right after the slot's stream was made: it encodes the record (seed, next
//   pass) of every node that has one, by the node's place in graph order. Empty for slot datasets
//   without random ops (a file reader).
// - RestoreNestedMark puts those records into `state` for the new dataset's nodes and returns a reader of
//   the mark's sections, as if a full checkpoint of that dataset had been saved with them. Pass numbers
//   the records hold are older than the mark; the marks' own pass counters (Repeat, Shuffle, ListFiles)
//   set them right, as they do for the iterator's own nodes.
// - Hostile bytes give DataLoss (a mark whose sections name no node of the dataset included), never a
//   crash.
#ifndef SLUICE_OPS_NESTED_CHECKPOINT_H_
#define SLUICE_OPS_NESTED_CHECKPOINT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "sluice/export.h"
#include "sluice/ops/checkpoint_state.h"

namespace sluice {

class OpNode;
class IteratorState;

SLUICE_EXPORT void PrepareNestedSeeds(const std::shared_ptr<const OpNode>& root, IteratorState* state,
                                      uint64_t slot_seed);

// The seed PrepareNestedSeeds takes for the slot of input element `index` of an op seeded `op_seed`.
SLUICE_EXPORT uint64_t NestedSlotSeed(uint64_t op_seed, int64_t index);

SLUICE_EXPORT std::string CaptureNestedRecords(const std::shared_ptr<const OpNode>& root,
                                               IteratorState* state);

SLUICE_EXPORT absl::StatusOr<CheckpointReader> RestoreNestedMark(const std::shared_ptr<const OpNode>& root,
                                                                 IteratorState* state,
                                                                 std::string_view records,
                                                                 std::string_view mark);

}  // namespace sluice

#endif  // SLUICE_OPS_NESTED_CHECKPOINT_H_
