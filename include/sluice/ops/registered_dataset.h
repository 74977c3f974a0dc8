// RegisteredDataset(handle.With(args)): a dataset made by a registered factory (SLUICE_REGISTER_DATASET in
// sluice/ops/registration.h), for what params cannot describe (a FromGenerator, FromVector of values
// without a codec, a user's own source). In a graph it is one leaf, RegisteredDataset(dataset=name(args)):
// another process calls its own registration with the same args. Its elements, cardinality and streams
// are the factory's dataset's.
#ifndef SLUICE_OPS_REGISTERED_DATASET_H_
#define SLUICE_OPS_REGISTERED_DATASET_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sluice/ops/checkpoint_state.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/stream.h"

namespace sluice::ops {

template <class T>
class RegisteredDatasetNode final : public Node<T> {
 public:
  RegisteredDatasetNode(NodePtr<T> inner, FunctionParam function)
      : inner_(std::move(inner)), function_(std::move(function)) {}
  std::string_view op_name() const override { return "RegisteredDataset"; }
  DatasetSpec element_spec() const override { return inner_->element_spec(); }
  std::vector<Param> params() const override { return {{"dataset", function_}}; }
  // A leaf: the inner graph is the factory's business, rebuilt from the name and args.
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {}; }
  int64_t cardinality() const override { return inner_->cardinality(); }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    std::unique_ptr<Stream<T>> inner = inner_->MakeStream(context);
    return std::make_unique<RegisteredStream>(std::move(inner), inner_, std::move(context));
  }
  // State: the inner stream's own checkpoint (its graph is not part of this one, as an Interleave slot's),
  // checked against the dataset the factory makes in the restoring process.
  absl::StatusOr<std::unique_ptr<Stream<T>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    std::string nested;
    if (absl::Status s = reader.ReadState(path, &nested); !s.ok()) return s;
    absl::StatusOr<CheckpointReader> inner_reader = CheckpointReader::Parse(nested, inner_);
    if (!inner_reader.ok()) return Annotated(path, inner_reader.status());
    if (absl::Status s = inner_reader->RestoreRecords(context->state.get()); !s.ok())
      return Annotated(path, s);
    auto stream = inner_->RestoreStream(context, *inner_reader, std::string(kRootNodePath));
    if (!stream.ok()) return Annotated(path, stream.status());
    return std::make_unique<RegisteredStream>(std::move(*stream), inner_, std::move(context));
  }

 private:
  static absl::Status Annotated(std::string_view path, const absl::Status& status) {
    return absl::Status(status.code(), absl::StrCat("RegisteredDataset at ", std::string(path), ": ",
                                                    std::string(status.message())));
  }

  class RegisteredStream final : public Stream<T> {
   public:
    RegisteredStream(std::unique_ptr<Stream<T>> inner, NodePtr<T> inner_node, IteratorContextPtr context)
        : inner_node_(std::move(inner_node)), context_(std::move(context)), inner_(std::move(inner)) {}
    PollState Poll(absl::StatusOr<T>* out) override { return inner_->Poll(out); }
    Task<void> WaitReady() override { return inner_->WaitReady(); }
    std::optional<SourcePosition> position() const override { return inner_->position(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      return SaveNested(this, std::move(writer), std::move(path));
    }
    // Compact mode refuses the node (its inner graph is not checked), so no mark is asked for.
    bool Mark(MarkWriter&) const override { return false; }

   private:
    static Task<absl::Status> SaveNested(RegisteredStream* s, std::shared_ptr<CheckpointWriter> writer,
                                         std::string path) {
      auto inner = std::make_shared<CheckpointWriter>(s->inner_node_.get());
      absl::Status saved = co_await s->inner_->Save(inner, std::string(kRootNodePath));
      absl::StatusOr<std::string> state =
          saved.ok() ? EncodeCheckpoint(s->inner_node_, *s->context_->state, *inner) : saved;
      if (!state.ok()) co_return Annotated(path, state.status());
      writer->WriteState(path, *state);
      co_return absl::OkStatus();
    }

    NodePtr<T> inner_node_;
    IteratorContextPtr context_;
    std::unique_ptr<Stream<T>> inner_;  // declared last: destroyed before the context it uses
  };

  NodePtr<T> inner_;
  FunctionParam function_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_REGISTERED_DATASET_H_
