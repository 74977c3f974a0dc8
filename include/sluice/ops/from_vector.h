// FromVector(values): the values in order (tf.data's from_tensor_slices over a list). The vector is
// shared by every iterator and never copied; elements are copied out as they are yielded.
// Position (sluice/ops/stream.h): a stream's position() is {index of the next element, 0}, the end being
// {size, 0}; MakeStreamAt({k, 0}) yields values[k], values[k+1], ... An index outside 0..size, or a
// nonzero offset, is InvalidArgument (the one element).
#ifndef SLUICE_OPS_FROM_VECTOR_H_
#define SLUICE_OPS_FROM_VECTOR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sluice/ops/element_codec.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/stream.h"

namespace sluice::ops {

template <class T>
class FromVectorNode final : public Node<T>, public PositionedSource<T> {
 public:
  explicit FromVectorNode(std::shared_ptr<const std::vector<T>> values) : values_(std::move(values)) {}
  std::string_view op_name() const override { return "FromVector"; }
  DatasetSpec element_spec() const override { return MergedSpecOfValues(*values_); }
  // With a codec the values themselves are a param (each element encoded in turn), so the definition
  // crosses a process boundary; without one it cannot.
  std::vector<Param> params() const override {
    std::vector<Param> p{{"size", static_cast<int64_t>(values_->size())}};
    if constexpr (HasElementCodec<T>) {
      EncodedParam values;
      for (const T& value : *values_) ElementCodec<T>::Encode(value, &values.bytes);
      values.display = absl::StrCat("<", values.bytes.size(), " bytes>");
      p.push_back({"values", std::move(values)});
    }
    return p;
  }
  std::string not_portable_reason() const override {
    return HasElementCodec<T> ? "" : "its values have no ElementCodec (sluice/ops/element_codec.h)";
  }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {}; }
  int64_t cardinality() const override { return static_cast<int64_t>(values_->size()); }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr) const override {
    return std::make_unique<VectorStream>(values_, 0);
  }
  std::unique_ptr<Stream<T>> MakeStreamAt(IteratorContextPtr, SourcePosition position) const override {
    const size_t size = values_->size();
    if (position.index < 0 || static_cast<uint64_t>(position.index) > size || position.offset != 0) {
      auto stream = std::make_unique<VectorStream>(values_, size);
      stream->Fail(absl::InvalidArgumentError(absl::StrCat("FromVector: cannot start at position {",
                                                           position.index, ", ", position.offset, "}: it has ",
                                                           size, " elements")));
      return stream;
    }
    return std::make_unique<VectorStream>(values_, static_cast<size_t>(position.index));
  }

 private:
  class VectorStream final : public Stream<T> {
   public:
    VectorStream(std::shared_ptr<const std::vector<T>> values, size_t next)
        : values_(std::move(values)), next_(next) {}
    PollState Poll(absl::StatusOr<T>* out) override {
      if (!error_.ok()) {
        *out = std::move(error_);
        error_ = absl::OkStatus();
        return PollState::kReady;
      }
      if (next_ >= values_->size()) return PollState::kEnd;
      *out = (*values_)[next_++];
      return PollState::kReady;
    }
    std::optional<SourcePosition> position() const override {
      return SourcePosition{static_cast<int64_t>(next_), 0};
    }
    // The stream's one element is `error` (a bad start position); it then ends.
    void Fail(absl::Status error) { error_ = std::move(error); }

   private:
    std::shared_ptr<const std::vector<T>> values_;
    size_t next_;
    absl::Status error_;
  };

  std::shared_ptr<const std::vector<T>> values_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_FROM_VECTOR_H_
