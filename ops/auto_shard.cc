#include "sluice/ops/auto_shard.h"

#include <string>

#include "sluice/ops/node_path.h"

namespace sluice::ops {

absl::StatusOr<distribute::ShardDecision> FindAutoShardDecision(const OpNode& root) {
  const AutoShardOp* found = nullptr;
  ForEachNodePath(root, [&found](const OpNode& node, const std::string&) {
    found = dynamic_cast<const AutoShardOp*>(&node);
    return found == nullptr;
  });
  if (found == nullptr) return absl::NotFoundError("the dataset has no AutoShard op");
  return found->decision();
}

}  // namespace sluice::ops
