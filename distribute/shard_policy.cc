#include "sluice/distribute/shard_policy.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "sluice/distribute/service.h"
#include "sluice/ops/enumerate_shard.h"
#include "sluice/ops/file_sources.h"
#include "sluice/ops/graph.h"
#include "sluice/ops/node_path.h"

namespace sluice {

const char* AutoShardPolicyName(AutoShardPolicy policy) {
  switch (policy) {
    case AutoShardPolicy::kOff:
      return "OFF";
    case AutoShardPolicy::kFile:
      return "FILE";
    case AutoShardPolicy::kData:
      return "DATA";
    case AutoShardPolicy::kAuto:
      return "AUTO";
    case AutoShardPolicy::kHint:
      return "HINT";
  }
  return "?";
}

absl::StatusOr<AutoShardPolicy> AutoShardPolicyFromName(std::string_view name) {
  for (AutoShardPolicy policy : {AutoShardPolicy::kOff, AutoShardPolicy::kFile, AutoShardPolicy::kData,
                                 AutoShardPolicy::kAuto, AutoShardPolicy::kHint}) {
    if (absl::EqualsIgnoreCase(absl::string_view(name.data(), name.size()), AutoShardPolicyName(policy))) {
      return policy;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("no auto-shard policy is named '", std::string(name),
                                                 "' (OFF, FILE, DATA, AUTO or HINT)"));
}

namespace distribute {
namespace {

bool KeepsBatchSize(std::string_view op) {
  return op == "Prefetch" || op == "Take" || op == "Skip" || op == "Shard" || op == "Repeat" ||
         op == "Shuffle" || op == "Filter" || op == "TakeWhile";
}

template <class V>
std::optional<V> ParamAs(const std::vector<Param>& params, std::string_view name) {
  for (const Param& p : params) {
    if (p.name == name && std::holds_alternative<V>(p.value)) return std::get<V>(p.value);
  }
  return std::nullopt;
}

// Ops whose drop_remainder=true fixes the batch size.
bool IsBatchingOp(std::string_view op) {
  return op == "Batch" || op == "BatchVectors" || op == "PaddedBatch";
}

// The batch size a Batch op fixes (drop_remainder=true), from its op name and params.
std::optional<int64_t> FixedBatchSize(const std::vector<Param>& params) {
  std::optional<bool> drop = ParamAs<bool>(params, "drop_remainder");
  std::optional<int64_t> size = ParamAs<int64_t>(params, "batch_size");
  if (drop.value_or(false) && size.has_value() && *size > 0) return size;
  return std::nullopt;
}

// FindStaticBatchSize's walk inside the graph a Distribute node sends to its workers.
std::optional<int64_t> StaticBatchSizeOfGraph(const GraphNode& root) {
  const GraphNode* node = &root;
  for (int hops = 0; hops < 10000; ++hops) {
    if (IsBatchingOp(node->op)) return FixedBatchSize(node->params);
    if (!KeepsBatchSize(node->op) || node->inputs.size() != 1) return std::nullopt;
    node = &node->inputs[0];
  }
  return std::nullopt;
}

// The first Distribute node of the graph whose job is shared by name, or nullptr.
const service::detail::ServiceSource* FindSharedServiceJob(const OpNode& root) {
  const service::detail::ServiceSource* found = nullptr;
  ForEachNodePath(root, [&found](const OpNode& node, const std::string&) {
    const auto* source = dynamic_cast<const service::detail::ServiceSource*>(&node);
    if (source == nullptr || source->service_options().job_name.empty()) return true;
    found = source;
    return false;
  });
  return found;
}

// Ops the FILE walk passes through to their first input (tf.data's kPassThroughOps and kFuncDatasetOps,
// under sluice's names). sluice cannot look inside an interleave's function as tf.data does; its input
// must itself lead to a file source (ListFiles).
bool FileWalkPassesThrough(std::string_view op) {
  static constexpr std::string_view kOps[] = {
      "Batch",       "BatchVectors", "PaddedBatch", "Cache",      "Filter",  "Map",
      "ParallelMap", "ParseExample", "Prefetch",    "Rebatch",    "Repeat",  "Shard",
      "Shuffle",     "Skip",         "Take",        "Interleave", "FlatMap", "ParallelInterleave"};
  return std::find(std::begin(kOps), std::end(kOps), op) != std::end(kOps);
}

// tf.data's kMultipleInputsDatasetOps: every input must be sharded by file.
bool FileWalkTakesEveryInput(std::string_view op) { return op == "Zip" || op == "Concatenate"; }

absl::Status WalkToFileSources(const OpNode& node, const std::string& path, int depth,
                               std::vector<FileShardTarget>* found) {
  if (const auto* files = dynamic_cast<const ops::FileListSource*>(&node)) {
    found->push_back({path, std::string(node.op_name()), static_cast<int64_t>(files->files().size())});
    return absl::OkStatus();
  }
  const std::string_view op = node.op_name();
  std::vector<std::shared_ptr<const OpNode>> inputs = node.inputs();
  const bool every_input = FileWalkTakesEveryInput(op);
  if (depth > 10000 || inputs.empty() || (!every_input && !FileWalkPassesThrough(op))) {
    return absl::NotFoundError(
        absl::StrCat("no file-based source to shard on this branch: the walk from the "
                     "root reached ",
                     std::string(op), " at ", path));
  }
  for (size_t i = 0; i < (every_input ? inputs.size() : 1); ++i) {
    absl::Status status = WalkToFileSources(*inputs[i], ChildNodePath(path, i), depth + 1, found);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<FileShardTarget>> FindFileShardTargets(const OpNode& root) {
  std::vector<FileShardTarget> found;
  absl::Status status = WalkToFileSources(root, std::string(kRootNodePath), 0, &found);
  if (!status.ok()) return status;
  return found;
}

std::optional<int64_t> FindStaticBatchSize(const OpNode& root) {
  const OpNode* node = &root;
  for (int hops = 0; node != nullptr && hops < 10000; ++hops) {
    std::string_view op = node->op_name();
    // Distribute: the batches were made on the workers; look inside the graph they run.
    if (const auto* service = dynamic_cast<const service::detail::ServiceSource*>(node)) {
      absl::StatusOr<GraphNode> graph = ParseGraph(service->serialized_input());
      return graph.ok() ? StaticBatchSizeOfGraph(*graph) : std::nullopt;
    }
    if (IsBatchingOp(op)) return FixedBatchSize(node->params());
    if (!KeepsBatchSize(op)) return std::nullopt;
    std::vector<std::shared_ptr<const OpNode>> inputs = node->inputs();
    if (inputs.size() != 1) return std::nullopt;
    node = inputs[0].get();
  }
  return std::nullopt;
}

std::optional<std::string> FindFileSourcePath(const OpNode& root) {
  std::optional<std::string> found;
  ForEachNodePath(root, [&found](const OpNode& node, const std::string& path) {
    if (dynamic_cast<const ops::FileListSource*>(&node) == nullptr) return true;
    found = path;
    return false;
  });
  return found;
}

const OpNode* FindFileSource(const OpNode& root) {
  const OpNode* found = nullptr;
  ForEachNodePath(root, [&found](const OpNode& node, const std::string&) {
    if (dynamic_cast<const ops::FileListSource*>(&node) == nullptr) return true;
    found = &node;
    return false;
  });
  return found;
}

absl::StatusOr<const OpNode*> ResolveFileSource(const OpNode& root, std::string_view path) {
  absl::StatusOr<const OpNode*> node = FindNodeByPath(root, path);
  if (!node.ok()) {
    return absl::Status(node.status().code(), absl::StrCat("auto-shard FILE: ", node.status().message()));
  }
  if (dynamic_cast<const ops::FileListSource*>(*node) == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("auto-shard FILE: the node at path '", std::string(path), "' is ",
                     std::string((*node)->op_name()), ", not a file-based source"));
  }
  return *node;
}

absl::StatusOr<IteratorContext::FileShard> MakeFileShard(const OpNode& root,
                                                         const std::vector<FileShardTarget>& sources,
                                                         int64_t num_workers, int64_t index) {
  IteratorContext::FileShard shard;
  shard.num_shards = num_workers;
  shard.index = index;
  for (const FileShardTarget& source : sources) {
    absl::StatusOr<const OpNode*> target = ResolveFileSource(root, source.path);
    if (!target.ok()) return target.status();
    shard.targets.push_back(*target);
  }
  return shard;
}

std::vector<std::string> FindShardHints(const OpNode& root) {
  std::vector<std::string> found;
  ForEachNodePath(root, [&found](const OpNode& node, const std::string& path) {
    if (node.op_name() != "Shard") return true;
    for (const Param& param : node.params()) {
      const int64_t* value = std::get_if<int64_t>(&param.value);
      if (param.name == "num_shards" && value != nullptr && *value == kShardHint) found.push_back(path);
    }
    return true;
  });
  return found;
}

absl::StatusOr<ShardDecision> DecideShardPolicy(const OpNode& root, AutoShardPolicy requested,
                                                int64_t num_workers) {
  ShardDecision decision;
  if (num_workers <= 1 || requested == AutoShardPolicy::kOff) return decision;
  // The consumers of a shared job already divide its elements among them: sharding again would drop data.
  if (const service::detail::ServiceSource* shared = FindSharedServiceJob(root)) {
    const std::string& job = shared->service_options().job_name;
    if (requested != AutoShardPolicy::kAuto) {
      return absl::InvalidArgumentError(absl::StrCat("AutoShardPolicy ", AutoShardPolicyName(requested),
                                                     ": the dataset reads the shared data-service job '", job,
                                                     "', whose consumers already divide its elements; "
                                                     "sharding it again would drop data (use AUTO or OFF)"));
    }
    decision.reason = absl::StrCat("shared data-service job '", job, "'");
    return decision;
  }
  if (requested == AutoShardPolicy::kData) {
    decision.applied = AutoShardPolicy::kData;
    return decision;
  }
  if (requested == AutoShardPolicy::kHint) {
    decision.applied = AutoShardPolicy::kHint;
    if (FindShardHints(root).empty()) {
      decision.reason = "no Shard(kShardHint, ...) placeholder: every worker reads the whole dataset";
    }
    return decision;
  }
  absl::StatusOr<std::vector<FileShardTarget>> sources = FindFileShardTargets(root);
  if (!sources.ok()) {
    // As tf.data: AUTO falls back to DATA when the walk finds no way to shard by file; FILE fails.
    if (requested == AutoShardPolicy::kAuto) {
      decision.applied = AutoShardPolicy::kData;
      decision.reason = std::string(sources.status().message());
      return decision;
    }
    return absl::InvalidArgumentError(absl::StrCat("AutoShardPolicy FILE: ", sources.status().message(),
                                                   "; set auto_shard_policy to DATA to shard by element"));
  }
  for (const FileShardTarget& source : *sources) {
    if (source.num_files < num_workers) {
      return absl::InvalidArgumentError(absl::StrCat(
          "AutoShardPolicy ", AutoShardPolicyName(requested), ": the dataset's ", source.op, " source at ",
          source.path, " has ", source.num_files, " file(s), fewer than the ", num_workers,
          " workers; set auto_shard_policy to DATA, or split the input into at least as many files as "
          "workers"));
    }
  }
  decision.applied = AutoShardPolicy::kFile;
  decision.file_sources = *std::move(sources);
  return decision;
}

}  // namespace distribute
}  // namespace sluice
