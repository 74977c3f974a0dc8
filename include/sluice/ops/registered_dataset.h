// RegisteredDataset(handle.With(args)): a dataset made by a registered factory (SLUICE_REGISTER_DATASET in
// sluice/ops/registration.h), for what params cannot describe (a FromGenerator, FromVector of values
// without a codec, a user's own source). In a graph it is one leaf, RegisteredDataset(dataset=name(args)):
// another process calls its own registration with the same args. Its elements, cardinality and streams
// are the factory's dataset's.
#ifndef SLUICE_OPS_REGISTERED_DATASET_H_
#define SLUICE_OPS_REGISTERED_DATASET_H_

#include <memory>
#include <utility>
#include <vector>

#include "sluice/ops/op_node.h"
#include "sluice/ops/stream.h"

namespace sluice::ops {

template <class T>
class RegisteredDatasetNode final : public Node<T> {
 public:
  RegisteredDatasetNode(NodePtr<T> inner, FunctionParam function)
      : inner_(std::move(inner)), function_(std::move(function)) {}
  std::string_view op_name() const override { return "RegisteredDataset"; }
  std::vector<Param> params() const override { return {{"dataset", function_}}; }
  // A leaf: the inner graph is the factory's business, rebuilt from the name and args.
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {}; }
  int64_t cardinality() const override { return inner_->cardinality(); }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    return inner_->MakeStream(std::move(context));
  }

 private:
  NodePtr<T> inner_;
  FunctionParam function_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_REGISTERED_DATASET_H_
