// EncodeElements: a pipeline's elements as their ElementCodec bytes (sluice/ops/element_codec.h), for code
// that meets the element type by name only: a data-service worker rebuilds a graph of any registered
// type and serves its elements as bytes.
//
// Contract: EncodeElementsNode<T>(input) yields EncodeElement(x) for each element x of the input, in
// order; error elements stay errors; it ends with the input. In a graph it is the internal op
// "_EncodeElements" (element type string over T), registered for every type with a codec by
// SLUICE_REGISTER_ELEMENT_TYPE; the dispatcher refuses client graphs holding '_' ops.
#ifndef SLUICE_OPS_ENCODE_ELEMENTS_H_
#define SLUICE_OPS_ENCODE_ELEMENTS_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sluice/ops/element_codec.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/stream.h"

namespace sluice::ops {

template <class T>
class EncodeElementsNode final : public Node<std::string> {
 public:
  explicit EncodeElementsNode(NodePtr<T> input) : input_(std::move(input)) {}
  std::string_view op_name() const override { return "_EncodeElements"; }
  std::vector<Param> params() const override { return {}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<Stream<std::string>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<EncodeStream>(input_->MakeStream(std::move(context)));
  }

 private:
  class EncodeStream final : public Stream<std::string> {
   public:
    explicit EncodeStream(std::unique_ptr<Stream<T>> input) : input_(std::move(input)) {}
    PollState Poll(absl::StatusOr<std::string>* out) override {
      const PollState state = input_->Poll(&element_);
      if (state != PollState::kReady) return state;
      if (!element_.ok()) {
        *out = std::move(element_).status();
        return state;
      }
      std::string bytes;
      EncodeElement(*element_, &bytes);
      *out = std::move(bytes);
      return state;
    }
    Task<void> WaitReady() override { return input_->WaitReady(); }

   private:
    std::unique_ptr<Stream<T>> input_;
    absl::StatusOr<T> element_;
  };

  NodePtr<T> input_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_ENCODE_ELEMENTS_H_
