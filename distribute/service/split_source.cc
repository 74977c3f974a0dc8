#include "distribute/service/split_source.h"

#include <algorithm>
#include <utility>
#include <variant>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sluice/ops/node_path.h"

namespace sluice::service {
namespace {

// Chunks for element sources: many per worker (so the fastest takes more), few
// enough that a split is not a round trip per element.
constexpr int64_t kTargetSplits = 64;
constexpr int64_t kMaxChunk = 8192;

bool IsFileSource(const std::string& op) {
  return op == "ListFiles" || op == "TFRecord" || op == "TextLines" || op == "FixedLengthRecords";
}
bool IsElementSource(const std::string& op) {
  return op == "Range" || op == "FromVector" || op == "FromTensorSlices";
}

const ParamValue* FindParam(const GraphNode& node, absl::string_view name) {
  for (const Param& p : node.params) {
    if (p.name == name) return &p.value;
  }
  return nullptr;
}

template <class V>
absl::StatusOr<V> GetParam(const GraphNode& node, const std::string& path, absl::string_view name) {
  const ParamValue* value = FindParam(node, name);
  const V* typed = value == nullptr ? nullptr : std::get_if<V>(value);
  if (typed == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(node.op, " at ", path, ": param '", name, "' is missing or has another type"));
  }
  return *typed;
}

void Walk(const GraphNode& node, std::vector<size_t>* path,
          std::vector<std::pair<std::vector<size_t>, const GraphNode*>>* sources,
          std::vector<std::string>* leaves) {
  if (IsFileSource(node.op) || IsElementSource(node.op)) {
    sources->emplace_back(*path, &node);
    return;  // a file source's inputs, if any, are not sources of elements
  }
  if (node.inputs.empty()) leaves->push_back(absl::StrCat(node.op, " at ", FormatNodePath(*path)));
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    path->push_back(i);
    Walk(node.inputs[i], path, sources, leaves);
    path->pop_back();
  }
}

absl::Status CheckOps(const GraphNode& node, std::vector<size_t>* path) {
  if (absl::StartsWith(node.op, "_")) {
    return absl::InvalidArgumentError(absl::StrCat("the graph holds the internal op ", node.op, " at ",
                                                   FormatNodePath(*path), ", which clients may not send"));
  }
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    path->push_back(i);
    absl::Status s = CheckOps(node.inputs[i], path);
    path->pop_back();
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

GraphNode* NodeAt(GraphNode* root, const std::vector<size_t>& path) {
  GraphNode* node = root;
  for (size_t i : path) {
    if (i >= node->inputs.size()) return nullptr;
    node = &node->inputs[i];
  }
  return node;
}

}  // namespace

absl::Status CheckClientGraph(const GraphNode& root) {
  std::vector<size_t> path;
  return CheckOps(root, &path);
}

absl::StatusOr<SplittableSource> FindSplittableSource(const GraphNode& root) {
  std::vector<std::pair<std::vector<size_t>, const GraphNode*>> sources;
  std::vector<std::string> leaves;
  std::vector<size_t> path;
  Walk(root, &path, &sources, &leaves);
  if (sources.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("distributed_epoch needs one splittable source (Range, FromVector, FromTensorSlices, "
                     "ListFiles, TFRecord, TextLines, "
                     "FixedLengthRecords); the pipeline has none (its sources: ",
                     leaves.empty() ? "none" : absl::StrJoin(leaves, ", "), ")"));
  }
  if (sources.size() > 1) {
    std::vector<std::string> names;
    for (const auto& [p, node] : sources) names.push_back(absl::StrCat(node->op, " at ", FormatNodePath(p)));
    return absl::InvalidArgumentError(
        absl::StrCat("distributed_epoch needs exactly one splittable source; "
                     "the pipeline has ",
                     sources.size(), ": ", absl::StrJoin(names, ", ")));
  }
  const GraphNode& node = *sources[0].second;
  SplittableSource source;
  source.path = sources[0].first;
  source.path_text = FormatNodePath(source.path);
  source.op = node.op;
  if (IsFileSource(node.op)) {
    absl::StatusOr<std::vector<std::string>> files =
        GetParam<std::vector<std::string>>(node, source.path_text, "files");
    if (!files.ok()) return files.status();
    source.files = true;
    source.units = static_cast<int64_t>(files->size());
    source.chunk = 1;
    return source;
  }
  if (node.op == "Range") {
    absl::StatusOr<int64_t> start = GetParam<int64_t>(node, source.path_text, "start");
    absl::StatusOr<int64_t> stop = GetParam<int64_t>(node, source.path_text, "stop");
    absl::StatusOr<int64_t> step = GetParam<int64_t>(node, source.path_text, "step");
    if (!start.ok()) return start.status();
    if (!stop.ok()) return stop.status();
    if (!step.ok()) return step.status();
    if (*step == 0)
      return absl::InvalidArgumentError(absl::StrCat("Range at ", source.path_text, ": step 0"));
    // As RangeNode::cardinality, in 128 bits so no range overflows.
    const __int128 span =
        *step > 0 ? static_cast<__int128>(*stop) - *start : static_cast<__int128>(*start) - *stop;
    const __int128 magnitude = *step > 0 ? static_cast<__int128>(*step) : -static_cast<__int128>(*step);
    source.units = span <= 0 ? 0 : static_cast<int64_t>((span + magnitude - 1) / magnitude);
  } else {
    absl::StatusOr<int64_t> size = GetParam<int64_t>(node, source.path_text, "size");
    if (!size.ok()) return size.status();
    if (*size < 0)
      return absl::InvalidArgumentError(absl::StrCat(node.op, " at ", source.path_text, ": size < 0"));
    source.units = *size;
  }
  // Rounded up without overflowing: a Range may hold up to INT64_MAX elements.
  const int64_t per_split = source.units / kTargetSplits + (source.units % kTargetSplits != 0 ? 1 : 0);
  source.chunk = std::clamp<int64_t>(per_split, 1, kMaxChunk);
  return source;
}

absl::StatusOr<GraphNode> WorkerGraph(GraphNode root, const SplittableSource* source,
                                      const std::string& feed_id) {
  if (source != nullptr) {
    GraphNode* node = NodeAt(&root, source->path);
    if (node == nullptr || node->op != source->op) {
      return absl::InternalError(absl::StrCat("no ", source->op, " at ", source->path_text, " in the graph"));
    }
    GraphNode reader;
    reader.op = "_ReadSplits";
    reader.element_type = node->element_type;
    reader.params.push_back(Param{"feed", feed_id});
    reader.inputs.push_back(std::move(*node));
    *node = std::move(reader);
  }
  GraphNode encode;
  encode.op = "_EncodeElements";
  encode.element_type = "string";
  encode.inputs.push_back(std::move(root));
  return encode;
}

absl::StatusOr<GraphNode> FileSplitSource(const GraphNode& source, int64_t begin, int64_t end) {
  GraphNode node = source;
  for (Param& p : node.params) {
    if (p.name != "files") continue;
    auto* files = std::get_if<std::vector<std::string>>(&p.value);
    if (files == nullptr) break;
    if (begin < 0 || end < begin || static_cast<size_t>(end) > files->size()) {
      return absl::InvalidArgumentError(absl::StrCat(source.op, ": split [", begin, ", ", end,
                                                     ") is outside its ", files->size(), " files"));
    }
    std::vector<std::string> kept(files->begin() + begin, files->begin() + end);
    *files = std::move(kept);
    return node;
  }
  return absl::InvalidArgumentError(absl::StrCat(source.op, ": no files param"));
}

}  // namespace sluice::service
