#include "sluice/ops/nested_checkpoint.h"

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sluice/ops/detail/mix64.h"
#include "sluice/ops/element_codec.h"
#include "sluice/ops/iterator_state.h"
#include "sluice/ops/node_path.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/stream_mark.h"

namespace sluice {
namespace {

// The dataset's nodes in graph order (a node before its inputs), the order of ForEachNodePath.
void CollectNodes(const std::shared_ptr<const OpNode>& node,
                  std::vector<std::shared_ptr<const OpNode>>* out) {
  out->push_back(node);
  for (const std::shared_ptr<const OpNode>& input : node->inputs()) CollectNodes(input, out);
}

// splitmix64's output for state x: a well-mixed 64-bit value of x.
uint64_t Mix(uint64_t x) { return ops::detail_mix::Mix64(x + ops::detail_mix::kGoldenGamma); }

}  // namespace

uint64_t NestedSlotSeed(uint64_t op_seed, int64_t index) {
  return Mix(op_seed ^ Mix(static_cast<uint64_t>(index)));
}

void PrepareNestedSeeds(const std::shared_ptr<const OpNode>& root, IteratorState* state, uint64_t slot_seed) {
  std::vector<std::shared_ptr<const OpNode>> nodes;
  CollectNodes(root, &nodes);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!nodes[i]->draws_seed()) continue;
    IteratorState::NodeRecord record = state->Find(*nodes[i]).value_or(IteratorState::NodeRecord{});
    if (record.seed.has_value()) continue;  // a node f returns for every element keeps its first seed
    record.seed = Mix(slot_seed + Mix(i));
    state->Restore(IteratorState::NodeKey{nodes[i].get(), nodes[i]}, record);
  }
}

std::string CaptureNestedRecords(const std::shared_ptr<const OpNode>& root, IteratorState* state) {
  std::vector<std::shared_ptr<const OpNode>> nodes;
  CollectNodes(root, &nodes);
  std::vector<std::tuple<uint64_t, std::optional<uint64_t>, uint64_t>> records;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (std::optional<IteratorState::NodeRecord> record = state->Find(*nodes[i])) {
      records.emplace_back(i, record->seed, record->next_pass);
    }
  }
  std::string out;
  if (!records.empty()) ElementCodec<decltype(records)>::Encode(records, &out);
  return out;
}

absl::StatusOr<CheckpointReader> RestoreNestedMark(const std::shared_ptr<const OpNode>& root,
                                                   IteratorState* state, std::string_view records,
                                                   std::string_view mark) {
  std::vector<std::shared_ptr<const OpNode>> nodes;
  CollectNodes(root, &nodes);
  std::vector<std::tuple<uint64_t, std::optional<uint64_t>, uint64_t>> decoded;
  if (!records.empty()) {
    if (absl::Status s = DecodeElement(records, &decoded); !s.ok()) {
      return absl::DataLossError(absl::StrCat("the records of a nested dataset: ", s.message()));
    }
  }
  for (const auto& [index, seed, next_pass] : decoded) {
    if (index >= nodes.size()) {
      return absl::DataLossError(
          absl::StrCat("a record for node ", index, " of a nested dataset of ", nodes.size(), " nodes"));
    }
    state->Restore(IteratorState::NodeKey{nodes[index].get(), nodes[index]},
                   IteratorState::NodeRecord{seed, next_pass});
  }
  absl::StatusOr<StreamMark> parsed = StreamMark::FromBytes(mark);
  if (!parsed.ok()) return parsed.status();
  CheckpointWriter writer(root.get());
  parsed->WriteTo(&writer, kRootNodePath);
  for (const auto& section : writer.sections()) {
    if (!FindNodeByPath(*root, section.first).ok()) {
      return absl::DataLossError(absl::StrCat("the mark of a nested dataset has a section at ", section.first,
                                              ", not a node of it"));
    }
  }
  absl::StatusOr<std::string> bytes = EncodeCheckpoint(root, *state, writer);
  if (!bytes.ok()) return bytes.status();
  return CheckpointReader::Parse(*bytes, root);
}

}  // namespace sluice
