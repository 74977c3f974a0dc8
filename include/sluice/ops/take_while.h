// TakeWhile(predicate): elements while predicate(x) is true; ends at the first false. An input error, or
// the predicate failing, is yielded as an element and the stream goes on. Cardinality: unknown.
#ifndef SLUICE_OPS_TAKE_WHILE_H_
#define SLUICE_OPS_TAKE_WHILE_H_

#include <memory>
#include <string>
#include <utility>

#include "sluice/ops/cardinality.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/user_function.h"

namespace sluice::ops {

template <class T, class P>
class TakeWhileNode final : public Node<T> {
 public:
  TakeWhileNode(NodePtr<T> input, P predicate, FunctionParam function)
      : input_(std::move(input)), predicate_(std::move(predicate)), function_(std::move(function)) {}
  std::string_view op_name() const override { return "TakeWhile"; }
  DatasetSpec element_spec() const override { return input_->element_spec(); }
  std::vector<Param> params() const override { return {{"predicate", function_}}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override { return kUnknownCardinality; }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<TakeWhileStream>(input_->MakeStream(std::move(context)), predicate_);
  }
  // State: the element index and whether the input is still open (it is dropped at the end).
  absl::StatusOr<std::unique_ptr<Stream<T>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    int64_t index = 0;
    bool open = false;
    if (absl::Status s = reader.ReadState(path, &index, &open); !s.ok()) return s;
    std::unique_ptr<Stream<T>> input;
    if (open) {
      auto restored = input_->RestoreStream(std::move(context), reader, ChildNodePath(path, 0));
      if (!restored.ok()) return restored.status();
      input = std::move(*restored);
    }
    auto stream = std::make_unique<TakeWhileStream>(std::move(input), predicate_);
    stream->index_ = index;
    return stream;
  }

 private:
  class TakeWhileStream final : public Stream<T> {
   public:
    TakeWhileStream(std::unique_ptr<Stream<T>> input, P predicate)
        : input_(std::move(input)), predicate_(std::move(predicate)) {}
    PollState Poll(absl::StatusOr<T>* out) override {
      if (!input_) return PollState::kEnd;
      PollState state = input_->Poll(out);
      if (state != PollState::kReady) return state;
      int64_t index = index_++;
      if (!out->ok()) return PollState::kReady;
      absl::StatusOr<bool> keep = InvokeUserFunction("TakeWhile", index, predicate_, std::as_const(**out));
      if (!keep.ok()) {
        *out = keep.status();
        return PollState::kReady;
      }
      if (*keep) return PollState::kReady;
      input_.reset();
      return PollState::kEnd;
    }
    Task<void> WaitReady() override { return input_ ? input_->WaitReady() : Stream<T>::WaitReady(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      writer->WriteState(path, index_, input_ != nullptr);
      if (!input_) return Stream<T>::SaveResult(absl::OkStatus());
      return input_->Save(std::move(writer), ChildNodePath(path, 0));
    }

    int64_t index_ = 0;

   private:
    std::unique_ptr<Stream<T>> input_;
    P predicate_;
  };

  NodePtr<T> input_;
  P predicate_;
  FunctionParam function_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_TAKE_WHILE_H_
