// FromVector(values): the values in order (tf.data's from_tensor_slices over a list). The vector is
// shared by every iterator and never copied; elements are copied out as they are yielded.
#ifndef SLUICE_OPS_FROM_VECTOR_H_
#define SLUICE_OPS_FROM_VECTOR_H_

#include <memory>
#include <vector>

#include "sluice/ops/op_node.h"

namespace sluice::ops {

template <class T>
class FromVectorNode final : public Node<T> {
 public:
  explicit FromVectorNode(std::shared_ptr<const std::vector<T>> values) : values_(std::move(values)) {}
  std::string_view op_name() const override { return "FromVector"; }
  std::vector<Param> params() const override { return {{"size", static_cast<int64_t>(values_->size())}}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {}; }
  int64_t cardinality() const override { return static_cast<int64_t>(values_->size()); }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr) const override {
    return std::make_unique<VectorStream>(values_);
  }

 private:
  class VectorStream final : public Stream<T> {
   public:
    explicit VectorStream(std::shared_ptr<const std::vector<T>> values) : values_(std::move(values)) {}
    PollState Poll(absl::StatusOr<T>* out) override {
      if (next_ >= values_->size()) return PollState::kEnd;
      *out = (*values_)[next_++];
      return PollState::kReady;
    }

   private:
    std::shared_ptr<const std::vector<T>> values_;
    size_t next_ = 0;
  };

  std::shared_ptr<const std::vector<T>> values_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_FROM_VECTOR_H_
