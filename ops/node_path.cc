#include "sluice/ops/node_path.h"

#include <limits>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sluice/ops/op_node.h"

namespace sluice {

std::string FormatNodePath(const std::vector<size_t>& indices) {
  if (indices.empty()) return std::string(kRootNodePath);
  std::string path;
  for (size_t index : indices) absl::StrAppend(&path, "/", index);
  return path;
}

std::string ChildNodePath(std::string_view parent, size_t input_index) {
  if (parent == kRootNodePath) return absl::StrCat("/", input_index);
  return absl::StrCat(std::string(parent), "/", input_index);
}

absl::StatusOr<std::vector<size_t>> ParseNodePath(std::string_view path) {
  auto bad = [path](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("node path '", std::string(path), "': ", why));
  };
  if (path.empty() || path.front() != '/') return bad("must start with '/' (\"/\" is the root)");
  std::vector<size_t> indices;
  if (path == kRootNodePath) return indices;
  size_t pos = 0;
  while (pos < path.size()) {
    ++pos;  // the '/'
    size_t end = path.find('/', pos);
    if (end == std::string_view::npos) end = path.size();
    std::string_view digits = path.substr(pos, end - pos);
    if (digits.empty()) return bad("empty step (a doubled or trailing '/')");
    if (digits.size() > 1 && digits.front() == '0') {
      return bad(absl::StrCat("step '", std::string(digits), "' has a leading zero"));
    }
    size_t value = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return bad(absl::StrCat("step '", std::string(digits), "' is not an input index"));
      const size_t digit = static_cast<size_t>(c - '0');
      if (value > (std::numeric_limits<size_t>::max() - digit) / 10) {
        return bad(absl::StrCat("step '", std::string(digits), "' is too large"));
      }
      value = value * 10 + digit;
    }
    indices.push_back(value);
    pos = end;
  }
  return indices;
}

absl::StatusOr<const OpNode*> FindNodeByPath(const OpNode& root, std::string_view path) {
  absl::StatusOr<std::vector<size_t>> indices = ParseNodePath(path);
  if (!indices.ok()) return indices.status();
  const OpNode* node = &root;
  std::vector<size_t> walked;
  for (size_t index : *indices) {
    std::vector<std::shared_ptr<const OpNode>> inputs = node->inputs();
    if (index >= inputs.size() || inputs[index] == nullptr) {
      return absl::NotFoundError(absl::StrCat("node path '", std::string(path), "': node ", FormatNodePath(walked),
                                              " (", std::string(node->op_name()), ") has ", inputs.size(),
                                              " input(s), no input ", index));
    }
    node = inputs[index].get();
    walked.push_back(index);
  }
  return node;
}

void ForEachNodePath(const OpNode& root, absl::FunctionRef<bool(const OpNode& node, const std::string& path)> visit) {
  // The inputs keep each other alive through the root, which the caller holds.
  std::vector<std::pair<const OpNode*, std::string>> stack;
  stack.emplace_back(&root, std::string(kRootNodePath));
  while (!stack.empty()) {
    auto [node, path] = std::move(stack.back());
    stack.pop_back();
    if (!visit(*node, path)) return;
    std::vector<std::shared_ptr<const OpNode>> inputs = node->inputs();
    for (size_t i = inputs.size(); i-- > 0;) {
      if (inputs[i] != nullptr) stack.emplace_back(inputs[i].get(), ChildNodePath(path, i));
    }
  }
}

}  // namespace sluice
