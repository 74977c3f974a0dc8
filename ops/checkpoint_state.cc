#include "sluice/ops/checkpoint_state.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/absl_string_view.h"
#include "engine/xxhash64.h"
#include "io/proto_wire.h"
#include "sluice/ops/iterator_state.h"
#include "sluice/ops/node_path.h"
#include "sluice/ops/op_node.h"

namespace sluice {
namespace {

constexpr std::string_view kMagic = "SLCK";
constexpr size_t kHeaderBytes = 4 + 1 + 8;  // magic, version (one varint byte while < 128), checksum

// Fields of the body and of a node (docs/checkpoint.md).
enum CheckpointBodyField : uint32_t { kRootType = 1, kFingerprint = 2, kNode = 3 };
enum CheckpointNodeField : uint32_t {
  kPath = 1,
  kOp = 2,
  kDisplay = 3,
  kParamsHash = 4,
  kSeed = 5,
  kNextPass = 6,
  kHasRecord = 7,
  kState = 8,
  kResource = 9,
};

// The full params, canonically: unlike DebugString nothing is elided, so any change shows in the hash.
struct CanonicalParam {
  std::string* out;
  void Put(std::string_view s) const {
    wire::AppendVarint(out, s.size());
    out->append(s.data(), s.size());
  }
  void operator()(bool v) const { Put(v ? "b1" : "b0"); }
  void operator()(int64_t v) const { Put(absl::StrCat("i", v)); }
  void operator()(double v) const {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    Put(absl::StrCat("d", bits));
  }
  void operator()(const std::string& v) const { Put(v); }
  void operator()(const std::vector<int64_t>& v) const { Put(absl::StrCat("I", absl::StrJoin(v, ","))); }
  void operator()(const std::vector<double>& v) const {
    for (double d : v) (*this)(d);
    Put("D");
  }
  void operator()(const std::vector<std::string>& v) const {
    for (const std::string& s : v) Put(s);
    Put(absl::StrCat("S", v.size()));
  }
  void operator()(const EncodedParam& v) const { Put(v.bytes); }
  void operator()(const FunctionParam& v) const {
    Put(v.name);
    Put(v.registered ? "r" : "l");
    // Only declared functions add a field, so every other node keeps the hash older states carry.
    if (v.state != FunctionState::kNone) Put(v.state == FunctionState::kSaved ? "ss" : "sd");
    if (v.args != nullptr) {
      for (const Param& p : *v.args) {
        Put(p.name);
        std::visit(*this, p.value);
      }
    }
  }
};

struct GraphEntry {
  std::string path;
  std::shared_ptr<const OpNode> node;
  std::string display;
  uint64_t hash = 0;
};

std::string Display(const OpNode& node) {
  std::vector<std::string> params;
  for (const Param& p : node.params()) params.push_back(absl::StrCat(p.name, "=", ParamValueString(p.value)));
  return absl::StrCat(std::string(node.op_name()), "(", absl::StrJoin(params, ", "), ")");
}

uint64_t NodeHash(const OpNode& node) {
  std::string canonical;
  CanonicalParam put{&canonical};
  put.Put(node.op_name());
  put.Put(node.element_type_name());
  put(node.op_version());
  for (const Param& p : node.params()) {
    put.Put(p.name);
    std::visit(put, p.value);
  }
  return XxHash64(canonical);
}

// Depth first, a node before its inputs (ForEachNodePath's order), iteratively.
std::vector<GraphEntry> WalkGraph(const std::shared_ptr<const OpNode>& root) {
  std::vector<GraphEntry> entries;
  std::vector<std::pair<std::shared_ptr<const OpNode>, std::string>> stack{
      {root, std::string(kRootNodePath)}};
  while (!stack.empty()) {
    auto [node, path] = std::move(stack.back());
    stack.pop_back();
    const std::vector<std::shared_ptr<const OpNode>> inputs = node->inputs();
    for (size_t i = inputs.size(); i-- > 0;) stack.emplace_back(inputs[i], ChildNodePath(path, i));
    GraphEntry entry{std::move(path), node, Display(*node), NodeHash(*node)};
    entries.push_back(std::move(entry));
  }
  return entries;
}

uint64_t GraphFingerprint(const std::vector<std::pair<std::string_view, uint64_t>>& nodes) {
  std::string all;
  for (const auto& [path, hash] : nodes) {
    wire::AppendBytesField(&all, 1, path);
    wire::AppendFixed64(&all, hash);
  }
  return XxHash64(all);
}

absl::Status Malformed(const wire::Reader& reader) {
  return absl::DataLossError(absl::StrCat("checkpoint state is malformed at byte ",
                                          kHeaderBytes + reader.error_offset(), ": ",
                                          reader.error() != nullptr ? reader.error() : "bad field"));
}

absl::Status ParseNode(std::string_view bytes, CheckpointReader::Node* node) {
  wire::Reader r(bytes);
  while (!r.done()) {
    uint32_t field, type;
    if (!r.ReadTag(&field, &type)) return Malformed(r);
    std::string_view text;
    uint64_t number = 0;
    bool ok = true;
    if (type == wire::kLengthDelimited && field != kParamsHash && field != kSeed) {
      ok = r.ReadBytes(&text);
      if (field == kPath) node->path = std::string(text);
      if (field == kOp) node->op = std::string(text);
      if (field == kDisplay) node->display = std::string(text);
      if (field == kState) node->state = std::string(text);
      if (field == kResource) node->resource = std::string(text);
    } else if (type == wire::kFixed64 && (field == kParamsHash || field == kSeed)) {
      ok = r.ReadFixed64(&number);
      if (field == kParamsHash) node->params_hash = number;
      if (field == kSeed) node->seed = number;
    } else if (type == wire::kVarint && (field == kNextPass || field == kHasRecord)) {
      ok = r.ReadVarint(&number);
      if (field == kNextPass) node->next_pass = number;
      if (field == kHasRecord) node->has_record = number != 0;
    } else {
      ok = r.Skip(type);
    }
    if (!ok) return Malformed(r);
  }
  if (node->path.empty() || node->op.empty())
    return absl::DataLossError("checkpoint state: a node has no path or op");
  return absl::OkStatus();
}

// The first function param of `node` declared Stateful, or null.
const FunctionParam* DeclaredStatefulFunction(const std::vector<Param>& params, std::string* name) {
  for (const Param& p : params) {
    const auto* function = std::get_if<FunctionParam>(&p.value);
    if (function != nullptr && function->state != FunctionState::kNone) {
      *name = p.name;
      return function;
    }
  }
  return nullptr;
}

}  // namespace

absl::Status CheckFunctionStates(const OpNode& root) {
  absl::Status refused;
  ForEachNodePath(root, [&refused](const OpNode& node, const std::string& path) {
    std::string name;
    const std::vector<Param> params = node.params();
    const FunctionParam* function = DeclaredStatefulFunction(params, &name);
    if (function == nullptr) return true;
    const std::string_view op = node.op_name();
    if (function->state == FunctionState::kDeclared) {
      refused = absl::FailedPreconditionError(absl::StrCat(
          "checkpointing ", AbslView(op), " at ", path, ": its function ", name,
          " is declared Stateful without save hooks (use Stateful(f, save, restore)): ", Display(node)));
    } else if (!node.saves_function_state()) {
      refused = absl::FailedPreconditionError(
          absl::StrCat("checkpointing ", AbslView(op), " at ", path, ": its function ", name,
                       " is declared Stateful, and ", AbslView(op),
                       " cannot save a function's state (Map and Filter can): ", Display(node)));
    }
    return refused.ok();
  });
  return refused;
}

absl::Status CheckCompactCheckpoints(const OpNode& root, const Options& options) {
  absl::Status refused;
  ForEachNodePath(root, [&refused, &options](const OpNode& node, const std::string& path) {
    std::string name;
    if (DeclaredStatefulFunction(node.params(), &name) != nullptr) {
      refused = absl::InvalidArgumentError(
          absl::StrCat("compact checkpoints: ", AbslView(node.op_name()), " at ", path,
                       " has a function declared Stateful (", name,
                       "), whose state a compact mark does not hold: ", Display(node)));
      return false;
    }
    if (!node.keeps_compact_state(options)) {
      refused = absl::InvalidArgumentError(absl::StrCat(
          "compact checkpoints: ", AbslView(node.op_name()), " at ", path,
          " cannot keep its place without its elements: ", Display(node),
          "; compact mode takes sources with positions, Map, Filter, ParseExample, Batch, Take, Skip, "
          "Repeat, Shuffle, Prefetch, Interleave, Zip, Concatenate, Enumerate, Shard, ParallelInterleave, "
          "and ParallelMap and parallel Batch when deterministic (set Options::compact_checkpoints to "
          "false for full checkpoints)"));
      return false;
    }
    if (node.rereads_input_by_position()) {
      for (const std::shared_ptr<const OpNode>& input : node.inputs()) {
        if (ReplaysInOrder(*input, options)) continue;
        refused = absl::InvalidArgumentError(absl::StrCat(
            "compact checkpoints: ", AbslView(node.op_name()), " at ", path,
            " re-reads its input by position after a restore, but a ParallelInterleave below it is not "
            "deterministic, so the re-read would pick other elements: ",
            Display(node), " (make that ParallelInterleave deterministic, or use full checkpoints)"));
        return false;
      }
    }
    return true;
  });
  return refused;
}

absl::Status CheckpointWriter::Unsupported(std::string_view path, std::string_view why) const {
  std::string op = "an op";
  std::string display;
  if (root_ != nullptr) {
    absl::StatusOr<const OpNode*> node = FindNodeByPath(*root_, path);
    if (node.ok()) {
      op = std::string((*node)->op_name());
      display = Display(**node);
    }
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "checkpointing ", op, " at ", std::string(path), " is not supported yet", display.empty() ? "" : ": ",
      display, why.empty() ? "" : " (", std::string(why), why.empty() ? "" : ")"));
}

absl::Status CheckpointWriter::FunctionStateError(std::string_view path, std::string_view action,
                                                  const absl::Status& why) const {
  std::string op = "an op";
  if (root_ != nullptr) {
    absl::StatusOr<const OpNode*> node = FindNodeByPath(*root_, path);
    if (node.ok()) op = std::string((*node)->op_name());
  }
  return absl::Status(why.code(), absl::StrCat(AbslView(action), " the function state of ", op, " at ",
                                               std::string(path), ": ", why.message()));
}

absl::StatusOr<std::string> EncodeCheckpoint(const std::shared_ptr<const OpNode>& root,
                                             const IteratorState& state, const CheckpointWriter& writer) {
  // Also reached for an Interleave's datasets, which the iterator's first check did not see.
  if (absl::Status functions = CheckFunctionStates(*root); !functions.ok()) return functions;
  const std::vector<GraphEntry> graph = WalkGraph(root);
  // A stream that wrote under a path that is not a node of this graph belongs to a node that hides its
  // inputs (a RegisteredDataset's inner pipeline): its state could not be restored.
  for (const auto& section : writer.sections()) {
    // A named reference, not the structured binding: clang 14 cannot capture bindings in a lambda.
    const std::string& path = section.first;
    const bool known =
        std::any_of(graph.begin(), graph.end(), [&](const GraphEntry& e) { return e.path == path; });
    if (!known) {
      std::string parent = path;
      while (FindNodeByPath(*root, parent).ok() == false && parent.size() > 1) {
        parent = parent.substr(0, std::max<size_t>(1, parent.rfind('/')));
      }
      return writer.Unsupported(parent, "its streams belong to a pipeline the graph does not show");
    }
  }
  // Each node's small fields first; the op states (megabytes for a Shuffle buffer) are copied once, into
  // an output sized up front: on this kind of machine a copy into fresh pages costs more in page faults
  // than in the copy itself.
  std::vector<std::string> heads;
  std::vector<std::string_view> states;
  heads.reserve(graph.size());
  states.reserve(graph.size());
  for (const GraphEntry& e : graph) {
    std::string node;
    wire::AppendBytesField(&node, kPath, e.path);
    wire::AppendBytesField(&node, kOp, e.node->op_name());
    wire::AppendBytesField(&node, kDisplay, e.display);
    wire::AppendTag(&node, kParamsHash, wire::kFixed64);
    wire::AppendFixed64(&node, e.hash);
    if (std::optional<IteratorState::NodeRecord> record = state.Find(*e.node)) {
      wire::AppendTag(&node, kHasRecord, wire::kVarint);
      wire::AppendVarint(&node, 1);
      if (record->seed) {
        wire::AppendTag(&node, kSeed, wire::kFixed64);
        wire::AppendFixed64(&node, *record->seed);
      }
      wire::AppendTag(&node, kNextPass, wire::kVarint);
      wire::AppendVarint(&node, record->next_pass);
    }
    absl::StatusOr<std::optional<std::string>> resource = e.node->SaveResource(state);
    if (!resource.ok()) return writer.Unsupported(e.path, std::string(resource.status().message()));
    if (resource->has_value()) wire::AppendBytesField(&node, kResource, **resource);
    auto section = writer.sections().find(e.path);
    const bool has_state = section != writer.sections().end();
    states.push_back(has_state ? std::string_view(section->second) : std::string_view());
    if (has_state) {
      wire::AppendTag(&node, kState, wire::kLengthDelimited);
      wire::AppendVarint(&node, section->second.size());
    }
    heads.push_back(std::move(node));
  }
  std::vector<std::pair<std::string_view, uint64_t>> hashes;
  for (const GraphEntry& e : graph) hashes.emplace_back(e.path, e.hash);

  std::string out(kMagic);
  wire::AppendVarint(&out, kCheckpointFormatVersion);
  const size_t hash_at = out.size();
  wire::AppendFixed64(&out, 0);  // the body's hash, written last
  const size_t body_at = out.size();
  size_t size = body_at + 64 + root->element_type_name().size();
  for (size_t i = 0; i < heads.size(); ++i) {
    const size_t node_size = heads[i].size() + states[i].size();
    size += 1 + wire::VarintSize(node_size) + node_size;
  }
  out.reserve(size);
  wire::AppendBytesField(&out, kRootType, root->element_type_name());
  wire::AppendTag(&out, kFingerprint, wire::kFixed64);
  wire::AppendFixed64(&out, GraphFingerprint(hashes));
  for (size_t i = 0; i < heads.size(); ++i) {
    wire::AppendTag(&out, kNode, wire::kLengthDelimited);
    wire::AppendVarint(&out, heads[i].size() + states[i].size());
    out += heads[i];
    out.append(states[i].data(), states[i].size());
  }
  const uint64_t hash = XxHash64(std::string_view(out).substr(body_at));
  std::memcpy(out.data() + hash_at, &hash, sizeof hash);
  return out;
}

absl::StatusOr<CheckpointReader> CheckpointReader::Parse(std::string_view bytes,
                                                         const std::shared_ptr<const OpNode>& root) {
  if (bytes.size() < kMagic.size() || bytes.substr(0, kMagic.size()) != kMagic) {
    return absl::DataLossError("not a sluice checkpoint state (no \"SLCK\" header)");
  }
  if (bytes.size() < kHeaderBytes) return absl::DataLossError("checkpoint state is truncated in its header");
  const auto version = static_cast<uint8_t>(bytes[kMagic.size()]);
  if (version != kCheckpointFormatVersion) {
    return absl::FailedPreconditionError(absl::StrCat("checkpoint state has format version ", version,
                                                      ", this build reads only version ",
                                                      kCheckpointFormatVersion));
  }
  uint64_t checksum;
  std::memcpy(&checksum, bytes.data() + kMagic.size() + 1, sizeof checksum);
  const std::string_view body = bytes.substr(kHeaderBytes);
  if (XxHash64(body) != checksum) {
    return absl::DataLossError(absl::StrCat("checkpoint state is corrupt: its checksum does not match its ",
                                            body.size(), " bytes (truncated or altered)"));
  }

  CheckpointReader reader;
  reader.root_ = root;
  std::string root_type;
  std::optional<uint64_t> fingerprint;
  wire::Reader r(body);
  while (!r.done()) {
    uint32_t field, type;
    if (!r.ReadTag(&field, &type)) return Malformed(r);
    bool ok = true;
    if (field == kRootType && type == wire::kLengthDelimited) {
      std::string_view text;
      ok = r.ReadBytes(&text);
      root_type = std::string(text);
    } else if (field == kFingerprint && type == wire::kFixed64) {
      uint64_t value;
      ok = r.ReadFixed64(&value);
      fingerprint = value;
    } else if (field == kNode && type == wire::kLengthDelimited) {
      std::string_view text;
      ok = r.ReadBytes(&text);
      if (ok) {
        Node node;
        if (absl::Status s = ParseNode(text, &node); !s.ok()) return s;
        if (!reader.by_path_.emplace(node.path, reader.nodes_.size()).second) {
          return absl::DataLossError(absl::StrCat("checkpoint state has two nodes at ", node.path));
        }
        reader.nodes_.push_back(std::move(node));
      }
    } else {
      ok = r.Skip(type);
    }
    if (!ok) return Malformed(r);
  }
  if (!fingerprint) return absl::DataLossError("checkpoint state has no graph fingerprint");

  // The first node that differs names the change.
  const std::vector<GraphEntry> graph = WalkGraph(root);
  const size_t common = std::min(graph.size(), reader.nodes_.size());
  for (size_t i = 0; i < common; ++i) {
    const Node& saved = reader.nodes_[i];
    const GraphEntry& now = graph[i];
    if (saved.path != now.path || saved.params_hash != now.hash) {
      return absl::FailedPreconditionError(
          absl::StrCat("checkpoint does not match this pipeline: saved from ", saved.display, " at ",
                       saved.path, ", this pipeline has ", now.display, " at ", now.path));
    }
  }
  if (graph.size() != reader.nodes_.size()) {
    if (graph.size() > common) {
      return absl::FailedPreconditionError(
          absl::StrCat("checkpoint does not match this pipeline: it has no node at ", graph[common].path,
                       ", this pipeline has ", graph[common].display));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint does not match this pipeline: saved from ", reader.nodes_[common].display,
                     " at ", reader.nodes_[common].path, ", this pipeline has none there"));
  }
  if (root_type != root->element_type_name()) {
    return absl::FailedPreconditionError(absl::StrCat("checkpoint was saved from a pipeline of ", root_type,
                                                      ", this one yields ", root->element_type_name()));
  }
  std::vector<std::pair<std::string_view, uint64_t>> hashes;
  for (const GraphEntry& e : graph) hashes.emplace_back(e.path, e.hash);
  if (*fingerprint != GraphFingerprint(hashes)) {
    return absl::DataLossError("checkpoint state's graph fingerprint does not match its nodes");
  }
  return reader;
}

absl::Status CheckpointReader::RestoreRecords(IteratorState* state) const {
  const std::vector<GraphEntry> graph = WalkGraph(root_);
  for (const GraphEntry& e : graph) {
    const Node* saved = Find(e.path);
    if (saved == nullptr || !saved->has_record) continue;
    IteratorState::NodeRecord record;
    record.seed = saved->seed;
    record.next_pass = saved->next_pass;
    state->Restore(IteratorState::NodeKey{e.node.get(), e.node}, record);
  }
  // After the records: a resource may live in the node's entry.
  for (const GraphEntry& e : graph) {
    const Node* saved = Find(e.path);
    if (saved == nullptr || !saved->resource.has_value()) continue;
    if (absl::Status s = e.node->RestoreResource(state, *saved->resource); !s.ok()) {
      return s.code() == absl::StatusCode::kDataLoss ? Corrupt(e.path, s) : s;
    }
  }
  return absl::OkStatus();
}

bool CheckpointReader::HasState(std::string_view path) const {
  const Node* node = Find(path);
  return node != nullptr && node->state.has_value();
}

const CheckpointReader::Node* CheckpointReader::Find(std::string_view path) const {
  auto it = by_path_.find(path);
  return it == by_path_.end() ? nullptr : &nodes_[it->second];
}

absl::Status CheckpointReader::Corrupt(std::string_view path, const absl::Status& why) const {
  const Node* node = Find(path);
  return absl::DataLossError(absl::StrCat("checkpoint state of ", node != nullptr ? node->op : "the node",
                                          " at ", std::string(path), " is corrupt: ", why.message()));
}

absl::Status CheckpointReader::Missing(std::string_view path) const {
  const Node* node = Find(path);
  return absl::DataLossError(absl::StrCat("checkpoint state has no state for ",
                                          node != nullptr ? node->op : "a node", " at ", std::string(path),
                                          ", which its consumer's state says had a stream"));
}

absl::Status CheckpointReader::FunctionStateError(std::string_view path, std::string_view action,
                                                  const absl::Status& why) const {
  const Node* node = Find(path);
  return absl::Status(why.code(), absl::StrCat(AbslView(action), " the function state of ",
                                               node != nullptr ? node->op : "an op", " at ",
                                               std::string(path), ": ", why.message()));
}

absl::Status CheckpointReader::Unsupported(std::string_view path) const {
  const Node* node = Find(path);
  return absl::FailedPreconditionError(
      absl::StrCat("restoring ", node != nullptr ? node->op : "an op", " at ", std::string(path),
                   " is not supported yet", node != nullptr ? absl::StrCat(": ", node->display) : ""));
}

}  // namespace sluice
