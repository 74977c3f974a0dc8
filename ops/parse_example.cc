// Non-template parts of sluice/ops/parse_example.h.
#include "sluice/ops/parse_example.h"

#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice {
namespace {

absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

std::string Keys(const ParseSpec& spec) {
  std::vector<std::string> keys;
  for (const FixedLenFeature& f : spec.fixed) keys.push_back(absl::StrCat(f.key, " (fixed)"));
  for (const VarLenFeature& f : spec.var) keys.push_back(absl::StrCat(f.key, " (var-len)"));
  return absl::StrJoin(keys, ", ");
}

absl::Status CheckLayout(const ParsedExample& parsed, const ParseSpec& spec) {
  if (parsed.fixed.size() != spec.fixed.size() || parsed.var.size() != spec.var.size()) {
    return absl::InvalidArgumentError(absl::StrCat("parsed example has ", parsed.fixed.size(), " fixed and ",
                                                   parsed.var.size(), " var-len features but the spec has ",
                                                   spec.fixed.size(), " and ", spec.var.size()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Tensor> FeatureByKey(const ParsedExample& parsed, const ParseSpec& spec, std::string_view key) {
  absl::Status layout = CheckLayout(parsed, spec);
  if (!layout.ok()) return layout;
  const int i = spec.FixedIndex(key);
  if (i < 0) {
    return absl::NotFoundError(
        absl::StrCat("no fixed-length feature \"", Av(key), "\" in the parse spec; it has: ", Keys(spec)));
  }
  return parsed.fixed[static_cast<size_t>(i)];
}

absl::StatusOr<VarLenValues> VarFeatureByKey(const ParsedExample& parsed, const ParseSpec& spec,
                                             std::string_view key) {
  absl::Status layout = CheckLayout(parsed, spec);
  if (!layout.ok()) return layout;
  const int i = spec.VarIndex(key);
  if (i < 0) {
    return absl::NotFoundError(
        absl::StrCat("no var-len feature \"", Av(key), "\" in the parse spec; it has: ", Keys(spec)));
  }
  return parsed.var[static_cast<size_t>(i)];
}

namespace ops::detail_parse {

std::string SpecString(const ParseSpec& spec) {
  std::vector<std::string> fixed;
  for (const FixedLenFeature& f : spec.fixed) {
    std::string one = absl::StrCat(f.key, ":", Av(DTypeName(f.dtype)), f.shape.DebugString());
    if (f.default_value.has_value()) absl::StrAppend(&one, "=", f.default_value->DebugString());
    fixed.push_back(std::move(one));
  }
  std::vector<std::string> var;
  for (const VarLenFeature& f : spec.var) var.push_back(absl::StrCat(f.key, ":", Av(DTypeName(f.dtype))));
  return absl::StrCat("fixed=[", absl::StrJoin(fixed, ", "), "], var=[", absl::StrJoin(var, ", "), "]");
}

absl::StatusOr<ParsedExample> ParseOne(const std::string& record, const ParseSpec& spec, int64_t index) {
  absl::StatusOr<ParsedExample> parsed = ParseExample(record, spec);
  if (parsed.ok()) return parsed;
  // Parse again with a name only on failure: naming every record would cost a string per element.
  const std::string name = absl::StrCat("element ", index);
  parsed = ParseExample(record, spec, name);
  return AnnotateError(parsed.ok() ? absl::InternalError("parse failed once, then succeeded") : parsed.status(),
                       "ParseExample", index);
}

absl::StatusOr<ParsedExample> ParseMany(const std::vector<std::string>& records, const ParseSpec& spec,
                                        int64_t index) {
  std::vector<std::string_view> views(records.begin(), records.end());
  absl::StatusOr<ParsedExample> parsed = ParseExampleBatch(views, spec);
  if (parsed.ok()) return parsed;
  return AnnotateError(parsed.status(), "ParseExample", index);
}

}  // namespace ops::detail_parse
}  // namespace sluice
