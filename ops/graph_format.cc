// The graph's wire format (docs/graph-format.md): encoding, bounded parsing, fingerprint and text.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/xxhash64.h"
#include "io/proto_wire.h"
#include "sluice/ops/graph_format.h"
#include "sluice/ops/node_path.h"

namespace sluice {
namespace {

constexpr std::string_view kFormatName = "sluice.graph";

// Field numbers (docs/graph-format.md).
enum GraphField : uint32_t { kGraphFormat = 1, kGraphVersion = 2, kGraphRoot = 3 };
enum NodeField : uint32_t { kNodeOp = 1, kNodeOpVersion = 2, kNodeElementType = 3, kNodeParam = 4, kNodeInput = 5 };
enum ParamField : uint32_t {
  kParamName = 1,
  kParamBool = 2,
  kParamInt = 3,
  kParamDouble = 4,
  kParamString = 5,
  kParamIntList = 6,
  kParamDoubleList = 7,
  kParamStringList = 8,
  kParamEncoded = 9,
  kParamFunction = 10,
};
enum ListField : uint32_t { kListValue = 1 };
enum EncodedField : uint32_t { kEncodedBytes = 1, kEncodedDisplay = 2 };
enum FunctionField : uint32_t { kFunctionName = 1, kFunctionArg = 2 };

// Functions nest inside params (an argument may itself be a function); bounded like nodes.
constexpr int kMaxParamDepth = 8;

uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }
uint64_t DoubleBits(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  return bits;
}
double BitsDouble(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

void AppendVarintField(std::string* out, uint32_t field, uint64_t value) {
  wire::AppendTag(out, field, wire::kVarint);
  wire::AppendVarint(out, value);
}

void EncodeParam(const Param& param, std::string* out);

struct ValueEncoder {
  std::string* out;
  void operator()(bool v) const { AppendVarintField(out, kParamBool, v ? 1 : 0); }
  void operator()(int64_t v) const { AppendVarintField(out, kParamInt, ZigZag(v)); }
  void operator()(double v) const {
    wire::AppendTag(out, kParamDouble, wire::kFixed64);
    wire::AppendFixed64(out, DoubleBits(v));
  }
  void operator()(const std::string& v) const { wire::AppendBytesField(out, kParamString, v); }
  void operator()(const std::vector<int64_t>& v) const {
    std::string packed;
    for (int64_t x : v) wire::AppendVarint(&packed, ZigZag(x));
    wire::AppendBytesField(out, kParamIntList, packed);
  }
  void operator()(const std::vector<double>& v) const {
    std::string packed;
    for (double x : v) wire::AppendFixed64(&packed, DoubleBits(x));
    wire::AppendBytesField(out, kParamDoubleList, packed);
  }
  void operator()(const std::vector<std::string>& v) const {
    std::string list;
    for (const std::string& s : v) wire::AppendBytesField(&list, kListValue, s);
    wire::AppendBytesField(out, kParamStringList, list);
  }
  void operator()(const EncodedParam& v) const {
    std::string encoded;
    wire::AppendBytesField(&encoded, kEncodedBytes, v.bytes);
    wire::AppendBytesField(&encoded, kEncodedDisplay, v.display);
    wire::AppendBytesField(out, kParamEncoded, encoded);
  }
  void operator()(const FunctionParam& v) const {
    std::string function;
    wire::AppendBytesField(&function, kFunctionName, v.name);
    if (v.args != nullptr) {
      for (const Param& arg : *v.args) {
        std::string encoded;
        EncodeParam(arg, &encoded);
        wire::AppendBytesField(&function, kFunctionArg, encoded);
      }
    }
    wire::AppendBytesField(out, kParamFunction, function);
  }
};

void EncodeParam(const Param& param, std::string* out) {
  wire::AppendBytesField(out, kParamName, param.name);
  std::visit(ValueEncoder{out}, param.value);
}

void EncodeNode(const GraphNode& node, std::string* out) {
  wire::AppendBytesField(out, kNodeOp, node.op);
  AppendVarintField(out, kNodeOpVersion, static_cast<uint64_t>(node.op_version));
  wire::AppendBytesField(out, kNodeElementType, node.element_type);
  for (const Param& param : node.params) {
    std::string encoded;
    EncodeParam(param, &encoded);
    wire::AppendBytesField(out, kNodeParam, encoded);
  }
  for (const GraphNode& input : node.inputs) {
    std::string encoded;
    EncodeNode(input, &encoded);
    wire::AppendBytesField(out, kNodeInput, encoded);
  }
}

// Parsing: every message is read from a view of the whole input, so offsets are absolute.
class Parser {
 public:
  explicit Parser(std::string_view bytes) : origin_(bytes.data()) {}

  absl::StatusOr<GraphNode> ParseGraphMessage(std::string_view bytes) {
    wire::Reader r(bytes, origin_);
    std::string_view format;
    bool has_format = false, has_root = false;
    uint64_t version = 0;
    GraphNode root;
    while (!r.done()) {
      uint32_t field, type;
      if (!r.ReadTag(&field, &type)) return WireError(r);
      if (field == kGraphFormat && type == wire::kLengthDelimited) {
        if (!r.ReadBytes(&format)) return WireError(r);
        has_format = true;
      } else if (field == kGraphVersion && type == wire::kVarint) {
        if (!r.ReadVarint(&version)) return WireError(r);
      } else if (field == kGraphRoot && type == wire::kLengthDelimited) {
        std::string_view payload;
        if (!r.ReadBytes(&payload)) return WireError(r);
        if (has_root) return absl::InvalidArgumentError("graph: more than one root node");
        absl::StatusOr<GraphNode> parsed = ParseNode(payload, 0, "/");
        if (!parsed.ok()) return parsed.status();
        root = std::move(*parsed);
        has_root = true;
      } else if (!r.Skip(type)) {
        return WireError(r);
      }
    }
    if (!has_format || format != kFormatName) {
      return absl::InvalidArgumentError("graph: not a sluice graph (its format field is not \"sluice.graph\")");
    }
    if (version != static_cast<uint64_t>(kGraphFormatVersion)) {
      return absl::InvalidArgumentError(absl::StrCat("graph: format version ", version, "; this build reads version ",
                                                     kGraphFormatVersion));
    }
    if (!has_root) return absl::InvalidArgumentError("graph: no root node");
    return root;
  }

 private:
  absl::Status WireError(const wire::Reader& r) const {
    return absl::DataLossError(absl::StrCat("graph: malformed bytes at offset ", r.error_offset(), ": ",
                                            r.error() != nullptr ? r.error() : "bad field"));
  }

  absl::StatusOr<GraphNode> ParseNode(std::string_view bytes, int depth, const std::string& path) {
    if (depth >= kMaxGraphDepth) {
      return absl::InvalidArgumentError(absl::StrCat("graph: nodes nest deeper than ", kMaxGraphDepth, " at ", path));
    }
    if (++nodes_ > kMaxGraphNodes) {
      return absl::InvalidArgumentError(absl::StrCat("graph: more than ", kMaxGraphNodes, " nodes"));
    }
    wire::Reader r(bytes, origin_);
    GraphNode node;
    node.op_version = 0;
    while (!r.done()) {
      uint32_t field, type;
      if (!r.ReadTag(&field, &type)) return WireError(r);
      std::string_view payload;
      if (field == kNodeOp && type == wire::kLengthDelimited) {
        if (!r.ReadBytes(&payload)) return WireError(r);
        node.op = std::string(payload);
      } else if (field == kNodeOpVersion && type == wire::kVarint) {
        uint64_t version;
        if (!r.ReadVarint(&version)) return WireError(r);
        if (version > static_cast<uint64_t>(INT64_MAX)) return absl::InvalidArgumentError("graph: op version too large");
        node.op_version = static_cast<int64_t>(version);
      } else if (field == kNodeElementType && type == wire::kLengthDelimited) {
        if (!r.ReadBytes(&payload)) return WireError(r);
        node.element_type = std::string(payload);
      } else if (field == kNodeParam && type == wire::kLengthDelimited) {
        if (!r.ReadBytes(&payload)) return WireError(r);
        absl::StatusOr<Param> param = ParseParam(payload, 0);
        if (!param.ok()) return param.status();
        node.params.push_back(std::move(*param));
      } else if (field == kNodeInput && type == wire::kLengthDelimited) {
        if (!r.ReadBytes(&payload)) return WireError(r);
        const std::string input_path = ChildNodePath(path, node.inputs.size());
        absl::StatusOr<GraphNode> input = ParseNode(payload, depth + 1, input_path);
        if (!input.ok()) return input.status();
        node.inputs.push_back(std::move(*input));
      } else if (!r.Skip(type)) {
        return WireError(r);
      }
    }
    if (node.op.empty()) return absl::InvalidArgumentError(absl::StrCat("graph: node ", path, " has no op"));
    return node;
  }

  absl::StatusOr<Param> ParseParam(std::string_view bytes, int depth) {
    if (depth > kMaxParamDepth) {
      return absl::InvalidArgumentError(absl::StrCat("graph: function arguments nest deeper than ", kMaxParamDepth));
    }
    wire::Reader r(bytes, origin_);
    Param param;
    bool has_value = false;
    while (!r.done()) {
      uint32_t field, type;
      if (!r.ReadTag(&field, &type)) return WireError(r);
      std::string_view payload;
      uint64_t number;
      if (field == kParamName && type == wire::kLengthDelimited) {
        if (!r.ReadBytes(&payload)) return WireError(r);
        param.name = std::string(payload);
        continue;
      }
      if (field < kParamBool || field > kParamFunction) {
        if (!r.Skip(type)) return WireError(r);
        continue;
      }
      if (has_value) return absl::InvalidArgumentError(absl::StrCat("graph: param '", param.name, "' has two values"));
      has_value = true;
      const bool varint = field == kParamBool || field == kParamInt;
      const bool fixed = field == kParamDouble;
      const uint32_t expected = varint ? wire::kVarint : fixed ? wire::kFixed64 : wire::kLengthDelimited;
      if (type != expected) {
        return absl::InvalidArgumentError(absl::StrCat("graph: param field ", field, " has wire type ", type));
      }
      switch (field) {
        case kParamBool:
          if (!r.ReadVarint(&number)) return WireError(r);
          param.value = number != 0;
          break;
        case kParamInt:
          if (!r.ReadVarint(&number)) return WireError(r);
          param.value = UnZigZag(number);
          break;
        case kParamDouble:
          if (!r.ReadFixed64(&number)) return WireError(r);
          param.value = BitsDouble(number);
          break;
        case kParamString:
          if (!r.ReadBytes(&payload)) return WireError(r);
          param.value = std::string(payload);
          break;
        case kParamIntList: {
          if (!r.ReadBytes(&payload)) return WireError(r);
          std::vector<int64_t> values;
          wire::Reader list(payload, origin_);
          while (!list.done()) {
            if (!list.ReadVarint(&number)) return WireError(list);
            values.push_back(UnZigZag(number));
          }
          param.value = std::move(values);
          break;
        }
        case kParamDoubleList: {
          if (!r.ReadBytes(&payload)) return WireError(r);
          std::vector<double> values;
          wire::Reader list(payload, origin_);
          while (!list.done()) {
            if (!list.ReadFixed64(&number)) return WireError(list);
            values.push_back(BitsDouble(number));
          }
          param.value = std::move(values);
          break;
        }
        case kParamStringList: {
          if (!r.ReadBytes(&payload)) return WireError(r);
          std::vector<std::string> values;
          wire::Reader list(payload, origin_);
          while (!list.done()) {
            uint32_t f, t;
            if (!list.ReadTag(&f, &t)) return WireError(list);
            std::string_view value;
            if (f == kListValue && t == wire::kLengthDelimited) {
              if (!list.ReadBytes(&value)) return WireError(list);
              values.emplace_back(value);
            } else if (!list.Skip(t)) {
              return WireError(list);
            }
          }
          param.value = std::move(values);
          break;
        }
        case kParamEncoded: {
          if (!r.ReadBytes(&payload)) return WireError(r);
          EncodedParam encoded;
          wire::Reader message(payload, origin_);
          while (!message.done()) {
            uint32_t f, t;
            if (!message.ReadTag(&f, &t)) return WireError(message);
            std::string_view value;
            if ((f == kEncodedBytes || f == kEncodedDisplay) && t == wire::kLengthDelimited) {
              if (!message.ReadBytes(&value)) return WireError(message);
              (f == kEncodedBytes ? encoded.bytes : encoded.display) = std::string(value);
            } else if (!message.Skip(t)) {
              return WireError(message);
            }
          }
          param.value = std::move(encoded);
          break;
        }
        case kParamFunction: {
          if (!r.ReadBytes(&payload)) return WireError(r);
          FunctionParam function;
          function.registered = true;
          auto args = std::make_shared<std::vector<Param>>();
          wire::Reader message(payload, origin_);
          while (!message.done()) {
            uint32_t f, t;
            if (!message.ReadTag(&f, &t)) return WireError(message);
            std::string_view value;
            if (f == kFunctionName && t == wire::kLengthDelimited) {
              if (!message.ReadBytes(&value)) return WireError(message);
              function.name = std::string(value);
            } else if (f == kFunctionArg && t == wire::kLengthDelimited) {
              if (!message.ReadBytes(&value)) return WireError(message);
              absl::StatusOr<Param> arg = ParseParam(value, depth + 1);
              if (!arg.ok()) return arg.status();
              args->push_back(std::move(*arg));
            } else if (!message.Skip(t)) {
              return WireError(message);
            }
          }
          if (function.name.empty()) return absl::InvalidArgumentError("graph: a function param has no name");
          function.args = std::move(args);
          param.value = std::move(function);
          break;
        }
        default:
          break;
      }
    }
    if (param.name.empty()) return absl::InvalidArgumentError("graph: a param has no name");
    if (!has_value) return absl::InvalidArgumentError(absl::StrCat("graph: param '", param.name, "' has no value"));
    return param;
  }

  const char* origin_;
  int64_t nodes_ = 0;
};

void AppendText(const GraphNode& node, const std::string& path, int depth, std::string* out) {
  std::vector<std::string> params;
  for (const Param& p : node.params) params.push_back(absl::StrCat(p.name, "=", ParamValueString(p.value)));
  absl::StrAppend(out, path, std::string(static_cast<size_t>(std::max(1, 12 - static_cast<int>(path.size()))), ' '),
                  std::string(2 * static_cast<size_t>(depth), ' '), node.op,
                  node.op_version != 1 ? absl::StrCat(" v", node.op_version) : "", " -> ", node.element_type,
                  params.empty() ? "" : "  ", absl::StrJoin(params, ", "), "\n");
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    AppendText(node.inputs[i], ChildNodePath(path, i), depth + 1, out);
  }
}

}  // namespace

std::string EncodeGraph(const GraphNode& root) {
  std::string out;
  wire::AppendBytesField(&out, kGraphFormat, kFormatName);
  AppendVarintField(&out, kGraphVersion, static_cast<uint64_t>(kGraphFormatVersion));
  std::string node;
  EncodeNode(root, &node);
  wire::AppendBytesField(&out, kGraphRoot, node);
  return out;
}

absl::StatusOr<GraphNode> ParseGraph(std::string_view bytes) { return Parser(bytes).ParseGraphMessage(bytes); }

uint64_t Fingerprint(const GraphNode& root) { return XxHash64(EncodeGraph(root)); }

std::string FingerprintHex(uint64_t fingerprint) { return absl::StrFormat("%016x", fingerprint); }

std::string GraphText(const GraphNode& root) {
  std::string out;
  AppendText(root, "/", 0, &out);
  return out;
}

}  // namespace sluice
