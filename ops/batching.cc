// Stacking, concatenation and slicing behind sluice/ops/batching.h.
#include "sluice/ops/batching.h"

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice::detail {
namespace {

std::string DTypeString(DType dtype) {
  std::string_view name = DTypeName(dtype);
  return std::string(name.data(), name.size());
}

// Copies all of `src`'s elements into `dst` starting at element `at` (dst has src's dtype). Strings are
// copied, not moved: the source buffer may be shared with tensors the caller still holds.
void CopyInto(const Tensor& src, Tensor* dst, int64_t at) {
  if (src.num_elements() == 0) return;
  if (src.dtype() == DType::kString) {
    const std::string* from = src.data<std::string>();
    std::string* to = dst->data<std::string>() + at;
    for (int64_t i = 0; i < src.num_elements(); ++i) to[i] = from[i];
  } else {
    char* to = static_cast<char*>(dst->raw_data()) + static_cast<size_t>(at) * DTypeSize(src.dtype());
    std::memcpy(to, src.raw_data(), src.num_bytes());
  }
}

}  // namespace

absl::StatusOr<Tensor> StackTensors(std::span<const Tensor> elements, size_t component) {
  if (elements.empty()) return absl::InvalidArgumentError("Cannot batch an empty list of tensors");
  const Tensor& first = elements[0];
  for (size_t i = 1; i < elements.size(); ++i) {
    if (elements[i].dtype() != first.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Cannot batch tensors with different dtypes in component ", component, ". First element had dtype ",
          DTypeString(first.dtype()), " and element ", i, " had dtype ", DTypeString(elements[i].dtype()), "."));
    }
    if (!(elements[i].shape() == first.shape())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Cannot batch tensors with different shapes in component ", component, ". First element had shape ",
          first.shape().DebugString(), " and element ", i, " had shape ", elements[i].shape().DebugString(), "."));
    }
  }
  const int64_t n = static_cast<int64_t>(elements.size());
  if (n == 1) return first.Reshape(first.shape().Prepend(1));  // a view: nothing to copy
  Tensor out = Tensor::Empty(first.dtype(), first.shape().Prepend(n));
  if (!(out.shape() == first.shape().Prepend(n))) {
    return absl::InvalidArgumentError(absl::StrCat("Cannot batch ", n, " tensors of shape ",
                                                   first.shape().DebugString(), " in component ", component,
                                                   ": the batch is too large to allocate"));
  }
  const int64_t per = first.num_elements();
  for (int64_t i = 0; i < n; ++i) CopyInto(elements[static_cast<size_t>(i)], &out, i * per);
  return out;
}

absl::Status ValidateTensorBatch(const Tensor& batch, size_t component) {
  if (batch.shape().rank() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Input element must have a non-scalar value in each component; component ", component, " is a scalar"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> ConcatTensors(std::span<const Tensor> batches, size_t component) {
  if (batches.empty()) return absl::InvalidArgumentError("Cannot concatenate an empty list of batches");
  for (const Tensor& b : batches) {
    absl::Status valid = ValidateTensorBatch(b, component);
    if (!valid.ok()) return valid;
  }
  const Tensor& first = batches[0];
  const std::vector<int64_t>& row_dims = first.shape().dims();
  int64_t rows = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    const Tensor& b = batches[i];
    const std::vector<int64_t>& dims = b.shape().dims();
    if (b.dtype() != first.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Cannot concatenate batches with different dtypes in component ", component, ". First batch had dtype ",
          DTypeString(first.dtype()), " and batch ", i, " had dtype ", DTypeString(b.dtype()), "."));
    }
    if (dims.size() != row_dims.size() || !std::equal(dims.begin() + 1, dims.end(), row_dims.begin() + 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Cannot concatenate batches with different row shapes in component ", component,
          ". First batch had shape ", first.shape().DebugString(), " and batch ", i, " had shape ",
          b.shape().DebugString(), "."));
    }
    rows += dims[0];
  }
  if (batches.size() == 1) return first;
  std::vector<int64_t> out_dims = row_dims;
  out_dims[0] = rows;
  Tensor out = Tensor::Empty(first.dtype(), Shape(out_dims));
  int64_t at = 0;
  for (const Tensor& b : batches) {
    CopyInto(b, &out, at);
    at += b.num_elements();
  }
  return out;
}

namespace {

// Examples parsed with different specs (named differently) do not batch together; unnamed ones (built by
// hand) take the others' names.
bool SameNames(const ParsedExample& a, const ParsedExample& b) {
  return a.names == b.names || a.names == nullptr || b.names == nullptr || *a.names == *b.names;
}

std::shared_ptr<const FeatureNames> FirstNames(std::span<const ParsedExample> examples) {
  for (const ParsedExample& e : examples) {
    if (e.names != nullptr) return e.names;
  }
  return nullptr;
}

std::string NamesText(const ParsedExample& e) {
  if (e.names == nullptr) return "";
  return absl::StrCat(" (", absl::StrJoin(e.names->fixed, ","), "; ", absl::StrJoin(e.names->var, ","), ")");
}

}  // namespace

absl::StatusOr<ParsedExample> StackParsedExamples(std::span<const ParsedExample> elements) {
  if (elements.empty()) return absl::InvalidArgumentError("Cannot batch an empty list of parsed examples");
  const ParsedExample& first = elements[0];
  for (size_t i = 1; i < elements.size(); ++i) {
    if (elements[i].fixed.size() != first.fixed.size() || elements[i].var.size() != first.var.size() ||
        !SameNames(elements[i], first)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Cannot batch parsed examples of different specs. First element had ", first.fixed.size(),
          " fixed and ", first.var.size(), " var-len features", NamesText(first), " and element ", i, " had ",
          elements[i].fixed.size(), " and ", elements[i].var.size(), NamesText(elements[i]), "."));
    }
  }
  ParsedExample out;
  out.names = FirstNames(elements);
  std::vector<Tensor> parts(elements.size());
  for (size_t f = 0; f < first.fixed.size(); ++f) {
    for (size_t i = 0; i < elements.size(); ++i) parts[i] = elements[i].fixed[f];
    absl::StatusOr<Tensor> stacked = StackTensors(parts, f);
    if (!stacked.ok()) return stacked.status();
    out.fixed.push_back(std::move(*stacked));
  }
  std::vector<Tensor> lengths(elements.size());
  for (size_t v = 0; v < first.var.size(); ++v) {
    for (size_t i = 0; i < elements.size(); ++i) {
      parts[i] = elements[i].var[v].values;
      lengths[i] = elements[i].var[v].row_lengths;
    }
    absl::StatusOr<Tensor> values = ConcatTensors(parts, first.fixed.size() + v);
    if (!values.ok()) return values.status();
    absl::StatusOr<Tensor> row_lengths = ConcatTensors(lengths, first.fixed.size() + v);
    if (!row_lengths.ok()) return row_lengths.status();
    out.var.push_back(VarLenValues{std::move(*values), std::move(*row_lengths)});
  }
  return out;
}

absl::StatusOr<ParsedExample> ConcatParsedExamples(std::span<const ParsedExample> batches) {
  if (batches.empty()) return absl::InvalidArgumentError("Cannot concatenate an empty list of parsed examples");
  for (const ParsedExample& b : batches) {
    absl::Status valid = ValidateParsedExampleBatch(b);
    if (!valid.ok()) return valid;
  }
  const ParsedExample& first = batches[0];
  for (size_t i = 1; i < batches.size(); ++i) {
    if (batches[i].fixed.size() != first.fixed.size() || batches[i].var.size() != first.var.size() ||
        !SameNames(batches[i], first)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Cannot concatenate parsed examples of different specs. First batch had ", first.fixed.size(),
          " fixed and ", first.var.size(), " var-len features", NamesText(first), " and batch ", i, " had ",
          batches[i].fixed.size(), " and ", batches[i].var.size(), NamesText(batches[i]), "."));
    }
  }
  ParsedExample out;
  out.names = FirstNames(batches);
  std::vector<Tensor> parts(batches.size());
  for (size_t f = 0; f < first.fixed.size(); ++f) {
    for (size_t i = 0; i < batches.size(); ++i) parts[i] = batches[i].fixed[f];
    absl::StatusOr<Tensor> joined = ConcatTensors(parts, f);
    if (!joined.ok()) return joined.status();
    out.fixed.push_back(std::move(*joined));
  }
  std::vector<Tensor> lengths(batches.size());
  for (size_t v = 0; v < first.var.size(); ++v) {
    for (size_t i = 0; i < batches.size(); ++i) {
      parts[i] = batches[i].var[v].values;
      lengths[i] = batches[i].var[v].row_lengths;
    }
    absl::StatusOr<Tensor> values = ConcatTensors(parts, first.fixed.size() + v);
    if (!values.ok()) return values.status();
    absl::StatusOr<Tensor> row_lengths = ConcatTensors(lengths, first.fixed.size() + v);
    if (!row_lengths.ok()) return row_lengths.status();
    out.var.push_back(VarLenValues{std::move(*values), std::move(*row_lengths)});
  }
  return out;
}

int64_t ParsedExampleRows(const ParsedExample& batch) {
  if (!batch.fixed.empty()) return BatchTraits<Tensor>::Rows(batch.fixed[0]);
  if (!batch.var.empty()) return batch.var[0].row_lengths.num_elements();
  return 0;
}

absl::Status ValidateParsedExampleBatch(const ParsedExample& batch) {
  const int64_t rows = ParsedExampleRows(batch);
  for (size_t f = 0; f < batch.fixed.size(); ++f) {
    const Tensor& t = batch.fixed[f];
    if (t.shape().rank() == 0 || t.shape().dim(0) != rows) {
      return absl::InvalidArgumentError(absl::StrCat("Parsed example batch of ", rows, " rows: fixed feature ", f,
                                                     " has shape ", t.shape().DebugString()));
    }
  }
  for (size_t v = 0; v < batch.var.size(); ++v) {
    const VarLenValues& var = batch.var[v];
    if (var.row_lengths.dtype() != DType::kInt64 || var.row_lengths.shape().rank() != 1 ||
        var.row_lengths.num_elements() != rows || var.values.shape().rank() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Parsed example batch of ", rows, " rows: var-len feature ", v, " has row_lengths ",
          DTypeString(var.row_lengths.dtype()), var.row_lengths.shape().DebugString(), " and values of shape ",
          var.values.shape().DebugString()));
    }
    int64_t total = 0;
    for (int64_t length : var.row_lengths.span<int64_t>()) {
      if (length < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("Parsed example batch: var-len feature ", v, " has a negative row length ", length));
      }
      total += length;
    }
    if (total != var.values.shape().dim(0)) {
      return absl::InvalidArgumentError(absl::StrCat("Parsed example batch: var-len feature ", v,
                                                     " row lengths sum to ", total, " but it holds ",
                                                     var.values.shape().dim(0), " values"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ParsedExample> SliceParsedExample(const ParsedExample& batch, int64_t start, int64_t limit) {
  const int64_t rows = ParsedExampleRows(batch);
  if (!InSliceRange(start, limit, rows)) return SliceRangeError(start, limit, rows);
  absl::Status valid = ValidateParsedExampleBatch(batch);
  if (!valid.ok()) return valid;
  ParsedExample out;
  out.names = batch.names;
  out.fixed.reserve(batch.fixed.size());
  for (const Tensor& t : batch.fixed) {
    absl::StatusOr<Tensor> part = t.Slice(start, limit);
    if (!part.ok()) return part.status();
    out.fixed.push_back(std::move(*part));
  }
  out.var.reserve(batch.var.size());
  for (const VarLenValues& var : batch.var) {
    std::span<const int64_t> lengths = var.row_lengths.span<int64_t>();
    int64_t begin = 0;
    for (int64_t i = 0; i < start; ++i) begin += lengths[static_cast<size_t>(i)];
    int64_t end = begin;
    for (int64_t i = start; i < limit; ++i) end += lengths[static_cast<size_t>(i)];
    absl::StatusOr<Tensor> values = var.values.Slice(begin, end);
    if (!values.ok()) return values.status();
    absl::StatusOr<Tensor> row_lengths = var.row_lengths.Slice(start, limit);
    if (!row_lengths.ok()) return row_lengths.status();
    out.var.push_back(VarLenValues{std::move(*values), std::move(*row_lengths)});
  }
  return out;
}

absl::StatusOr<ParsedExample> ParsedExampleRow(const ParsedExample& batch, int64_t index) {
  absl::StatusOr<ParsedExample> row = SliceParsedExample(batch, index, index + 1);
  if (!row.ok()) return row.status();
  for (Tensor& t : row->fixed) {
    absl::StatusOr<Tensor> sub = t.SubTensor(0);
    if (!sub.ok()) return sub.status();
    t = std::move(*sub);
  }
  return row;
}

}  // namespace sluice::detail
