#include "sluice/ops/op_node.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice {
namespace {

struct ParamFormatter {
  std::string operator()(bool v) const { return v ? "true" : "false"; }
  std::string operator()(int64_t v) const { return absl::StrCat(v); }
  std::string operator()(double v) const { return absl::StrCat(v); }
  // Long values (a list of hundreds of files) are elided: DebugString is for people; params() stays whole.
  std::string operator()(const std::string& v) const {
    constexpr size_t kShown = 160;
    if (v.size() <= kShown + 40) return absl::StrCat("\"", v, "\"");
    return absl::StrCat("\"", v.substr(0, kShown), "...\" (", v.size(), " chars)");
  }
  std::string operator()(const std::vector<int64_t>& v) const { return absl::StrCat("[", absl::StrJoin(v, ", "), "]"); }
  std::string operator()(const std::vector<double>& v) const { return absl::StrCat("[", absl::StrJoin(v, ", "), "]"); }
  std::string operator()(const std::vector<std::string>& v) const {
    constexpr size_t kShown = 4;
    std::vector<std::string> shown;
    for (size_t i = 0; i < v.size() && i < kShown; ++i) shown.push_back((*this)(v[i]));
    if (v.size() > kShown) shown.push_back(absl::StrCat("... (", v.size(), " in all)"));
    return absl::StrCat("[", absl::StrJoin(shown, ", "), "]");
  }
  std::string operator()(const EncodedParam& v) const { return v.display; }
  std::string operator()(const FunctionParam& v) const {
    if (!v.registered) {
      if (v.state == FunctionState::kNone) return (*this)(v.name);
      return absl::StrCat("Stateful(", (*this)(v.name), v.state == FunctionState::kSaved ? ", hooks" : "",
                          ")");
    }
    std::vector<std::string> args;
    if (v.args != nullptr) {
      for (const Param& p : *v.args) args.push_back(absl::StrCat(p.name, "=", std::visit(*this, p.value)));
    }
    return absl::StrCat(v.name, "(", absl::StrJoin(args, ", "), ")");
  }
};

void Append(const OpNode& node, int depth, std::string* out) {
  std::vector<std::string> params;
  for (const Param& p : node.params()) params.push_back(absl::StrCat(p.name, "=", ParamValueString(p.value)));
  absl::StrAppend(out, std::string(2 * depth, ' '), std::string(node.op_name()), "(", absl::StrJoin(params, ", "),
                  ")\n");
  for (const auto& input : node.inputs()) Append(*input, depth + 1, out);
}

}  // namespace

std::string ParamValueString(const ParamValue& value) { return std::visit(ParamFormatter{}, value); }

// The key function: see the class comment in sluice/ops/op_node.h.
OpNode::~OpNode() = default;

std::string DebugString(const OpNode& node) {
  std::string out;
  Append(node, 0, &out);
  return out;
}

}  // namespace sluice
