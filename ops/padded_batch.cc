// Padding and stacking behind sluice/ops/padded_batch.h.
#include "sluice/ops/padded_batch.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice::ops::detail_padded {
namespace {

std::string DTypeString(DType dtype) {
  std::string_view name = DTypeName(dtype);
  return std::string(name.data(), name.size());
}

std::string DimsString(const std::vector<int64_t>& dims) { return absl::StrCat("[", absl::StrJoin(dims, ","), "]"); }

// Fills every element of `out` with the scalar `value` (same dtype).
void Fill(Tensor* out, const Tensor& value) {
  const int64_t n = out->num_elements();
  if (n == 0) return;
  if (out->dtype() == DType::kString) {
    const std::string& v = value.data<std::string>()[0];
    std::string* to = out->data<std::string>();
    for (int64_t i = 0; i < n; ++i) to[i] = v;
    return;
  }
  const size_t size = DTypeSize(out->dtype());
  char* to = static_cast<char*>(out->raw_data());
  std::memcpy(to, value.raw_data(), size);
  // Doubling copies: log(n) memcpy calls instead of n.
  size_t filled = 1;
  const size_t total = static_cast<size_t>(n);
  while (filled < total) {
    const size_t chunk = std::min(filled, total - filled);
    std::memcpy(to + filled * size, to, chunk * size);
    filled += chunk;
  }
}

// Copies `src` (shape s) into the slot of `out` that starts at element `base`, whose per-slot shape is
// `slot` (same rank as s, every dim >= s's): one contiguous run per innermost row.
void CopyPadded(const Tensor& src, const std::vector<int64_t>& slot, Tensor* out, int64_t base) {
  const std::vector<int64_t>& dims = src.shape().dims();
  const size_t rank = dims.size();
  if (src.num_elements() == 0) return;
  const bool strings = src.dtype() == DType::kString;
  const size_t size = DTypeSize(src.dtype());
  auto copy_run = [&](int64_t from, int64_t to, int64_t count) {
    if (strings) {
      const std::string* s = src.data<std::string>() + from;
      std::string* d = out->data<std::string>() + to;
      for (int64_t i = 0; i < count; ++i) d[i] = s[i];
    } else {
      std::memcpy(static_cast<char*>(out->raw_data()) + static_cast<size_t>(to) * size,
                  static_cast<const char*>(src.raw_data()) + static_cast<size_t>(from) * size,
                  static_cast<size_t>(count) * size);
    }
  };
  if (rank == 0) {
    copy_run(0, base, 1);
    return;
  }
  // Row-major strides of the slot.
  std::vector<int64_t> stride(rank, 1);
  for (size_t d = rank - 1; d > 0; --d) stride[d - 1] = stride[d] * slot[d];
  const int64_t row = dims[rank - 1];
  std::vector<int64_t> index(rank, 0);  // odometer over the leading rank-1 dims
  int64_t from = 0;
  while (true) {
    int64_t to = base;
    for (size_t d = 0; d + 1 < rank; ++d) to += index[d] * stride[d];
    copy_run(from, to, row);
    from += row;
    size_t d = rank - 1;
    while (d > 0) {
      --d;
      if (++index[d] < dims[d]) break;
      index[d] = 0;
      if (d == 0) return;
    }
    if (rank == 1) return;
  }
}

}  // namespace

absl::StatusOr<Tensor> PadAndStack(std::span<const Tensor> elements, const PaddedShape* padded_shape,
                                   const Tensor* padding_value, size_t component) {
  if (elements.empty()) return absl::InvalidArgumentError("PaddedBatch: cannot pad an empty batch");
  const Tensor& first = elements[0];
  const size_t rank = padded_shape != nullptr ? padded_shape->size() : first.shape().rank();
  std::vector<int64_t> slot(rank, 0);
  if (padded_shape != nullptr) {
    for (size_t d = 0; d < rank; ++d) slot[d] = std::max<int64_t>((*padded_shape)[d], 0);
  }
  for (size_t i = 0; i < elements.size(); ++i) {
    const Tensor& e = elements[i];
    if (e.dtype() != first.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Cannot batch tensors with different dtypes in component ", component, ". First element had dtype ",
          DTypeString(first.dtype()), " and element ", i, " had dtype ", DTypeString(e.dtype()), "."));
    }
    if (e.shape().rank() != rank) {
      return absl::InvalidArgumentError(absl::StrCat(
          "All elements in a batch must have the same rank as the padded shape for component ", component,
          ": expected rank ", rank, " but got element with rank ", e.shape().rank(), " (element ", i, " has shape ",
          e.shape().DebugString(), ")"));
    }
    for (size_t d = 0; d < rank; ++d) {
      const int64_t want = padded_shape != nullptr ? (*padded_shape)[d] : kUnknownDim;
      if (want == kUnknownDim) {
        slot[d] = std::max(slot[d], e.shape().dim(d));
      } else if (e.shape().dim(d) > want) {
        return absl::DataLossError(absl::StrCat(
            "Attempted to pad to a smaller size than the input element. Component ", component, ": element ", i,
            " has shape ", e.shape().DebugString(), " but the padded shape is ", DimsString(*padded_shape)));
      }
    }
  }
  if (padding_value != nullptr && padding_value->dtype() != first.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat("PaddedBatch: the padding value for component ", component,
                                                   " has dtype ", DTypeString(padding_value->dtype()),
                                                   " but the elements have dtype ", DTypeString(first.dtype())));
  }
  const int64_t n = static_cast<int64_t>(elements.size());
  Shape slot_shape(slot);
  Shape out_shape = slot_shape.Prepend(n);
  if (!out_shape.IsValid()) {
    return absl::InvalidArgumentError(
        absl::StrCat("PaddedBatch: padded batch shape ", out_shape.DebugString(), " is too large"));
  }
  Tensor out = padding_value == nullptr ? Tensor::Zeros(first.dtype(), out_shape) : Tensor::Empty(first.dtype(), out_shape);
  if (!(out.shape() == out_shape)) {
    return absl::InvalidArgumentError(
        absl::StrCat("PaddedBatch: padded batch shape ", out_shape.DebugString(), " is too large to allocate"));
  }
  if (padding_value != nullptr) Fill(&out, *padding_value);
  const int64_t per = slot_shape.num_elements();
  for (int64_t i = 0; i < n; ++i) CopyPadded(elements[static_cast<size_t>(i)], slot, &out, i * per);
  return out;
}

absl::Status CheckPaddingArguments(std::string_view op, size_t components,
                                   const std::vector<PaddedShape>& padded_shapes,
                                   const std::vector<Tensor>& padding_values) {
  const absl::string_view name(op.data(), op.size());
  if (!padded_shapes.empty() && padded_shapes.size() != components) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", padded_shapes.size(),
                                                   " padded shapes given for elements of ", components,
                                                   " components"));
  }
  for (size_t c = 0; c < padded_shapes.size(); ++c) {
    for (int64_t d : padded_shapes[c]) {
      if (d < kUnknownDim) {
        return absl::InvalidArgumentError(absl::StrCat(name, ": padded shape ", DimsString(padded_shapes[c]),
                                                       " of component ", c, " has a dimension < -1"));
      }
    }
  }
  if (!padding_values.empty() && padding_values.size() != components) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", padding_values.size(),
                                                   " padding values given for elements of ", components,
                                                   " components"));
  }
  for (size_t c = 0; c < padding_values.size(); ++c) {
    if (padding_values[c].shape().rank() != 0) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": the padding value of component ", c,
                                                     " must be a scalar, got shape ",
                                                     padding_values[c].shape().DebugString()));
    }
  }
  return absl::OkStatus();
}

std::string PaddedShapesString(const std::vector<PaddedShape>& shapes) {
  std::vector<std::string> parts;
  for (const PaddedShape& s : shapes) parts.push_back(absl::StrCat("[", absl::StrJoin(s, ", "), "]"));
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

std::string PaddingValuesString(const std::vector<Tensor>& values) {
  std::vector<std::string> parts;
  for (const Tensor& v : values) parts.push_back(v.DebugString());
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

}  // namespace sluice::ops::detail_padded
