// FromTensors(value) and FromTensorSlices(value): tf.data.Dataset.from_tensors and from_tensor_slices.
//
// Contract:
// - FromTensors(value): one element, `value` itself (any element type). Each iteration yields a copy of
//   it; a Tensor copy shares the buffer, as every Tensor copy does.
// - FromTensorSlices(value): the rows of `value` along dimension 0, in order, for a Tensor, a
//   std::tuple of Tensors, a std::pair<Tensor, Tensor> or a ParsedExample (the types Unbatch splits into
//   themselves, sluice/ops/unbatch.h). A [4, 3] tensor gives 4 tensors of shape [3]; a tuple (a [4, 3],
//   b [4]) gives 4 tuples (a[i], b[i]). Rows are views of `value`'s buffers (SubTensor), never copies:
//   treat them as read-only, Clone() one to change it.
// - Invalid values (a rank-0 tensor, components whose dimension 0 differ): tf.data raises at
//   construction; here the dataset's one element is the InvalidArgument naming FromTensorSlices.
// - Cardinality: 1 and dim 0. Position (sluice/ops/stream.h): {index of the next element, 0}, so both are
//   resumable sources, checkpoint in compact mode, and FromTensorSlices splits for the data service's
//   distributed_epoch like FromVector. With an ElementCodec the value is a param, so the definition
//   crosses a process boundary.
//
//   Dataset<Tensor> rows = FromTensorSlices(Tensor::FromVector<int64_t>({1, 2, 3}));  // 3 scalars
//   auto pairs = FromTensorSlices(std::make_tuple(features, labels));                // [n, ...] and [n]
#ifndef SLUICE_OPS_FROM_TENSORS_H_
#define SLUICE_OPS_FROM_TENSORS_H_

#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sluice/ops/element_codec.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/stream.h"
#include "sluice/ops/unbatch.h"

namespace sluice::ops {

// The types FromTensorSlices accepts: those whose rows have the value's own type.
template <class T>
concept IsTensorSliceable = IsUnbatchable<T> && std::same_as<Unbatched<T>, T>;

namespace detail_from_tensors {

// The value as a param, when it has a codec.
template <class T>
void AppendValueParam(const T& value, std::vector<Param>* params) {
  if constexpr (HasElementCodec<T>) {
    EncodedParam encoded;
    ElementCodec<T>::Encode(value, &encoded.bytes);
    encoded.display = absl::StrCat("<", encoded.bytes.size(), " bytes>");
    params->push_back({"value", std::move(encoded)});
  }
}

template <class T>
std::string NotPortableReason() {
  return HasElementCodec<T> ? "" : "its value has no ElementCodec (sluice/ops/element_codec.h)";
}

// Yields take(next) for next in [next, size), or one error first. Take must not change the node's value.
template <class T, class Source>
class RowStream final : public Stream<T> {
 public:
  RowStream(std::shared_ptr<const Source> source, int64_t next) : source_(std::move(source)), next_(next) {}
  PollState Poll(absl::StatusOr<T>* out) override {
    if (!error_.ok()) {
      *out = std::move(error_);
      error_ = absl::OkStatus();
      return PollState::kReady;
    }
    if (next_ >= source_->size()) return PollState::kEnd;
    *out = source_->Row(next_++);
    return PollState::kReady;
  }
  std::optional<SourcePosition> position() const override { return SourcePosition{next_, 0}; }
  void Fail(absl::Status error) { error_ = std::move(error); }

 private:
  std::shared_ptr<const Source> source_;
  int64_t next_;
  absl::Status error_;
};

// A stream at `position`, or (outside 0..size or with an offset) one that yields InvalidArgument and ends.
template <class T, class Source>
std::unique_ptr<Stream<T>> MakeRowStreamAt(const char* op, std::shared_ptr<const Source> source,
                                           SourcePosition position) {
  const int64_t size = source->size();
  if (position.index < 0 || position.index > size || position.offset != 0) {
    auto stream = std::make_unique<RowStream<T, Source>>(std::move(source), size);
    stream->Fail(
        absl::InvalidArgumentError(absl::StrCat(op, ": cannot start at position {", position.index, ", ",
                                                position.offset, "}: it has ", size, " elements")));
    return stream;
  }
  return std::make_unique<RowStream<T, Source>>(std::move(source), position.index);
}

template <class T>
struct OneValue {
  T value;
  int64_t size() const { return 1; }
  T Row(int64_t) const { return value; }
};

template <class T>
struct Slices {
  // Validated by Start(); Take only reads it (views or copies of the rows).
  mutable typename detail_unbatch::Rule<T>::Cursor cursor;
  int64_t rows = 0;
  int64_t size() const { return rows; }
  T Row(int64_t i) const { return cursor.Take(i); }
};

}  // namespace detail_from_tensors

template <class T>
class FromTensorsNode final : public Node<T>, public PositionedSource<T> {
 public:
  explicit FromTensorsNode(T value)
      : value_(std::make_shared<const detail_from_tensors::OneValue<T>>(
            detail_from_tensors::OneValue<T>{std::move(value)})) {}
  std::string_view op_name() const override { return "FromTensors"; }
  DatasetSpec element_spec() const override { return SpecOf(value_->value); }
  std::vector<Param> params() const override {
    std::vector<Param> p;
    detail_from_tensors::AppendValueParam(value_->value, &p);
    return p;
  }
  std::string not_portable_reason() const override { return detail_from_tensors::NotPortableReason<T>(); }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {}; }
  int64_t cardinality() const override { return 1; }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr) const override {
    return std::make_unique<detail_from_tensors::RowStream<T, detail_from_tensors::OneValue<T>>>(value_, 0);
  }
  std::unique_ptr<Stream<T>> MakeStreamAt(IteratorContextPtr, SourcePosition position) const override {
    return detail_from_tensors::MakeRowStreamAt<T>("FromTensors", value_, position);
  }

 private:
  std::shared_ptr<const detail_from_tensors::OneValue<T>> value_;
};

template <class T>
requires IsTensorSliceable<T>
class FromTensorSlicesNode final : public Node<T>, public PositionedSource<T> {
 public:
  // `slices` has passed Cursor::Start (MakeFromTensorSlices).
  explicit FromTensorSlicesNode(detail_from_tensors::Slices<T> slices)
      : slices_(std::make_shared<const detail_from_tensors::Slices<T>>(std::move(slices))) {}
  std::string_view op_name() const override { return "FromTensorSlices"; }
  DatasetSpec element_spec() const override { return UnbatchedSpec(SpecOf(slices_->cursor.batch)); }
  std::vector<Param> params() const override {
    std::vector<Param> p{{"size", slices_->rows}};
    detail_from_tensors::AppendValueParam(slices_->cursor.batch, &p);
    return p;
  }
  std::string not_portable_reason() const override { return detail_from_tensors::NotPortableReason<T>(); }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {}; }
  int64_t cardinality() const override { return slices_->rows; }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr) const override {
    return std::make_unique<detail_from_tensors::RowStream<T, detail_from_tensors::Slices<T>>>(slices_, 0);
  }
  std::unique_ptr<Stream<T>> MakeStreamAt(IteratorContextPtr, SourcePosition position) const override {
    return detail_from_tensors::MakeRowStreamAt<T>("FromTensorSlices", slices_, position);
  }

 private:
  std::shared_ptr<const detail_from_tensors::Slices<T>> slices_;
};

// The node for FromTensorSlices(value), or an error source when `value` has no rows to slice.
template <class T>
requires IsTensorSliceable<T> NodePtr<T> MakeFromTensorSlices(T value) {
  detail_from_tensors::Slices<T> slices;
  slices.cursor.batch = std::move(value);
  if (absl::Status valid = slices.cursor.Start(); !valid.ok()) {
    return MakeErrorSource<T>(
        "FromTensorSlices", absl::InvalidArgumentError(absl::StrCat("FromTensorSlices: ", valid.message())));
  }
  slices.rows = slices.cursor.Rows();
  return std::make_shared<FromTensorSlicesNode<T>>(std::move(slices));
}

}  // namespace sluice::ops

#endif  // SLUICE_OPS_FROM_TENSORS_H_
