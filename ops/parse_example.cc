// Non-template parts of sluice/ops/parse_example.h.
#include "sluice/ops/parse_example.h"

#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/absl_string_view.h"
#include "sluice/ops/element_codec.h"

namespace sluice {
namespace {

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
    return absl::NotFoundError(absl::StrCat("no fixed-length feature \"", AbslView(key),
                                            "\" in the parse spec; it has: ", Keys(spec)));
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
        absl::StrCat("no var-len feature \"", AbslView(key), "\" in the parse spec; it has: ", Keys(spec)));
  }
  return parsed.var[static_cast<size_t>(i)];
}

namespace ops::detail_parse {

std::string SpecString(const ParseSpec& spec) {
  std::vector<std::string> fixed;
  for (const FixedLenFeature& f : spec.fixed) {
    std::string one = absl::StrCat(f.key, ":", AbslView(DTypeName(f.dtype)), f.shape.DebugString());
    if (f.default_value.has_value()) absl::StrAppend(&one, "=", f.default_value->DebugString());
    fixed.push_back(std::move(one));
  }
  std::vector<std::string> var;
  for (const VarLenFeature& f : spec.var)
    var.push_back(absl::StrCat(f.key, ":", AbslView(DTypeName(f.dtype))));
  return absl::StrCat("fixed=[", absl::StrJoin(fixed, ", "), "], var=[", absl::StrJoin(var, ", "), "]");
}

absl::StatusOr<ParsedExample> ParseOne(const std::string& record, const ExampleParser& parser,
                                       int64_t index) {
  absl::StatusOr<ParsedExample> parsed = parser.Parse(record);
  if (parsed.ok()) return parsed;
  // Parse again with a name only on failure: naming every record would cost a string per element.
  const std::string name = absl::StrCat("element ", index);
  parsed = parser.Parse(record, name);
  return AnnotateError(parsed.ok() ? absl::InternalError("parse failed once, then succeeded") : parsed.status(),
                       "ParseExample", index);
}

absl::StatusOr<ParsedExample> ParseMany(const std::vector<std::string>& records, const ExampleParser& parser,
                                        int64_t index) {
  std::vector<std::string_view> views(records.begin(), records.end());
  absl::StatusOr<ParsedExample> parsed = parser.ParseBatch(views);
  if (parsed.ok()) return parsed;
  return AnnotateError(parsed.status(), "ParseExample", index);
}

}  // namespace ops::detail_parse
namespace ops {

// Layout: fixed count, then per feature key, dtype, dims, optional default; var count, then key, dtype.
EncodedParam ParseSpecParam(const ParseSpec& spec) {
  EncodedParam param;
  std::string* out = &param.bytes;
  ElementCodec<uint64_t>::Encode(spec.fixed.size(), out);
  for (const FixedLenFeature& f : spec.fixed) {
    ElementCodec<std::string>::Encode(f.key, out);
    ElementCodec<uint8_t>::Encode(static_cast<uint8_t>(f.dtype), out);
    ElementCodec<std::vector<int64_t>>::Encode(f.shape.dims(), out);
    ElementCodec<std::optional<Tensor>>::Encode(f.default_value, out);
  }
  ElementCodec<uint64_t>::Encode(spec.var.size(), out);
  for (const VarLenFeature& f : spec.var) {
    ElementCodec<std::string>::Encode(f.key, out);
    ElementCodec<uint8_t>::Encode(static_cast<uint8_t>(f.dtype), out);
  }
  param.display = detail_parse::SpecString(spec);
  return param;
}

absl::StatusOr<ParseSpec> DecodeParseSpec(std::string_view bytes) {
  auto bad = [](const absl::Status& s) {
    return absl::InvalidArgumentError(absl::StrCat("ParseExample spec: ", s.message()));
  };
  auto dtype_of = [](uint8_t raw, DType* dtype) {
    if (raw > static_cast<uint8_t>(DType::kString)) return false;
    *dtype = static_cast<DType>(raw);
    return true;
  };
  ParseSpec spec;
  uint64_t count = 0;
  if (absl::Status s = ElementCodec<uint64_t>::Decode(&bytes, &count); !s.ok()) return bad(s);
  for (uint64_t i = 0; i < count; ++i) {
    FixedLenFeature f;
    uint8_t dtype = 0;
    std::vector<int64_t> dims;
    if (absl::Status s = ElementCodec<std::string>::Decode(&bytes, &f.key); !s.ok()) return bad(s);
    if (absl::Status s = ElementCodec<uint8_t>::Decode(&bytes, &dtype); !s.ok()) return bad(s);
    if (absl::Status s = ElementCodec<std::vector<int64_t>>::Decode(&bytes, &dims); !s.ok()) return bad(s);
    if (absl::Status s = ElementCodec<std::optional<Tensor>>::Decode(&bytes, &f.default_value); !s.ok()) return bad(s);
    if (!dtype_of(dtype, &f.dtype)) return absl::InvalidArgumentError("ParseExample spec: bad dtype");
    f.shape = Shape(std::move(dims));
    spec.fixed.push_back(std::move(f));
  }
  if (absl::Status s = ElementCodec<uint64_t>::Decode(&bytes, &count); !s.ok()) return bad(s);
  for (uint64_t i = 0; i < count; ++i) {
    VarLenFeature f;
    uint8_t dtype = 0;
    if (absl::Status s = ElementCodec<std::string>::Decode(&bytes, &f.key); !s.ok()) return bad(s);
    if (absl::Status s = ElementCodec<uint8_t>::Decode(&bytes, &dtype); !s.ok()) return bad(s);
    if (!dtype_of(dtype, &f.dtype)) return absl::InvalidArgumentError("ParseExample spec: bad dtype");
    spec.var.push_back(std::move(f));
  }
  if (!bytes.empty()) return absl::InvalidArgumentError("ParseExample spec: trailing bytes");
  return spec;
}

}  // namespace ops
}  // namespace sluice
