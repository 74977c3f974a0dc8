// Combining element specs (sluice/ops/element_spec.h).
#include "sluice/ops/element_spec.h"

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

// TensorFlow's names, as tf.TensorSpec prints them.
std::string TfDTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return "float16";
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    default:
      return std::string(DTypeName(dtype));
  }
}

}  // namespace

std::string DatasetSpec::DebugString() const {
  std::string out = "(";
  for (size_t i = 0; i < components.size(); ++i) {
    const ComponentSpec& c = components[i];
    if (i > 0) out += ", ";
    if (!c.name.empty()) absl::StrAppend(&out, c.name, ": ");
    if (c.kind == ComponentSpec::Kind::kDataset) {
      out += "dataset";
      continue;
    }
    if (c.kind == ComponentSpec::Kind::kOther) {
      out += "value";
      continue;
    }
    if (c.kind == ComponentSpec::Kind::kRagged) out += "ragged ";
    out += c.dtype ? TfDTypeName(*c.dtype) : "?";
    if (!c.shape) {
      out += "[?]";
      continue;
    }
    out += "[";
    for (size_t d = 0; d < c.shape->size(); ++d) absl::StrAppend(&out, d > 0 ? "," : "", (*c.shape)[d]);
    out += "]";
  }
  if (!complete) out += components.empty() ? "..." : ", ...";
  return out + ")";
}

namespace element_spec_detail {

DatasetSpec Join(std::vector<DatasetSpec> parts) {
  DatasetSpec out;
  for (DatasetSpec& part : parts) {
    for (ComponentSpec& c : part.components) out.components.push_back(std::move(c));
    out.complete = out.complete && part.complete;
  }
  return out;
}

}  // namespace element_spec_detail

DatasetSpec BatchedSpec(DatasetSpec spec, int64_t batch) {
  for (ComponentSpec& c : spec.components) {
    if (c.kind == ComponentSpec::Kind::kDataset || c.kind == ComponentSpec::Kind::kOther) continue;
    if (c.shape) c.shape->insert(c.shape->begin(), batch);
  }
  return spec;
}

DatasetSpec UnbatchedSpec(DatasetSpec spec) {
  for (ComponentSpec& c : spec.components) {
    if (c.shape && !c.shape->empty()) c.shape->erase(c.shape->begin());
  }
  return spec;
}

DatasetSpec PaddedSpec(DatasetSpec batched) {
  for (ComponentSpec& c : batched.components) {
    if (!c.shape) continue;
    for (size_t d = 1; d < c.shape->size(); ++d) (*c.shape)[d] = -1;
  }
  return batched;
}

DatasetSpec MergedSpec(const DatasetSpec& a, const DatasetSpec& b) {
  if (a.components.size() != b.components.size()) return DatasetSpec{{}, false};
  DatasetSpec out = a;
  out.complete = a.complete && b.complete;
  for (size_t i = 0; i < out.components.size(); ++i) {
    ComponentSpec& c = out.components[i];
    const ComponentSpec& other = b.components[i];
    if (c.kind != other.kind) c.kind = ComponentSpec::Kind::kOther;
    if (c.name != other.name) c.name.clear();
    if (c.dtype != other.dtype) c.dtype.reset();
    if (!c.shape || !other.shape || c.shape->size() != other.shape->size()) {
      if (c.shape != other.shape) c.shape.reset();
      continue;
    }
    for (size_t d = 0; d < c.shape->size(); ++d) {
      if ((*c.shape)[d] != (*other.shape)[d]) (*c.shape)[d] = -1;
    }
  }
  return out;
}

DatasetSpec SpecOf(const Tensor& value) {
  const ShapeDims dims = value.shape().dims();
  return {{ComponentSpec{ComponentSpec::Kind::kTensor, "", value.dtype(),
                         std::vector<int64_t>(dims.begin(), dims.end())}}};
}

DatasetSpec SpecOf(const ParsedExample& value) {
  DatasetSpec out;
  for (size_t i = 0; i < value.fixed.size(); ++i) {
    DatasetSpec one = SpecOf(value.fixed[i]);
    if (value.names != nullptr && i < value.names->fixed.size())
      one.components[0].name = value.names->fixed[i];
    out.components.push_back(std::move(one.components[0]));
  }
  for (size_t i = 0; i < value.var.size(); ++i) {
    ComponentSpec c{ComponentSpec::Kind::kRagged, "", value.var[i].values.dtype(), std::vector<int64_t>{-1}};
    if (value.names != nullptr && i < value.names->var.size()) c.name = value.names->var[i];
    out.components.push_back(std::move(c));
  }
  return out;
}

DatasetSpec SpecOf(const ParseSpec& spec) {
  DatasetSpec out;
  for (const FixedLenFeature& f : spec.fixed) {
    const ShapeDims dims = f.shape.dims();
    out.components.push_back(ComponentSpec{ComponentSpec::Kind::kTensor, f.key, f.dtype,
                                           std::vector<int64_t>(dims.begin(), dims.end())});
  }
  for (const VarLenFeature& v : spec.var) {
    out.components.push_back(
        ComponentSpec{ComponentSpec::Kind::kRagged, v.key, v.dtype, std::vector<int64_t>{-1}});
  }
  return out;
}

}  // namespace sluice
