// Filter(predicate): the elements for which predicate(x) is true, in order. predicate returns bool or
// absl::StatusOr<bool>; an error or exception becomes an error element naming the op and element index.
// Input errors pass through. Cardinality: kUnknownCardinality, as tf.data reports for any filter.
#ifndef SLUICE_OPS_FILTER_H_
#define SLUICE_OPS_FILTER_H_

#include <memory>
#include <string>
#include <utility>

#include "sluice/ops/cardinality.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/stateful_function.h"
#include "sluice/ops/user_function.h"

namespace sluice::ops {

template <class T, class P>
class FilterNode final : public Node<T> {
 public:
  FilterNode(NodePtr<T> input, P predicate, FunctionParam function)
      : input_(std::move(input)), predicate_(std::move(predicate)), function_(std::move(function)) {}
  std::string_view op_name() const override { return "Filter"; }
  DatasetSpec element_spec() const override { return input_->element_spec(); }
  bool keeps_compact_state(const Options&) const override { return true; }
  bool saves_function_state() const override { return true; }
  std::vector<Param> params() const override { return {{"predicate", function_}}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override { return kUnknownCardinality; }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<FilterStream>(input_->MakeStream(std::move(context)), predicate_);
  }
  // State: the element index (error messages name it), then a Stateful function's state.
  absl::StatusOr<std::unique_ptr<Stream<T>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    int64_t index = 0;
    auto fn = predicate_;
    if (absl::Status s = ReadStateWithFunction(reader, path, fn, &index); !s.ok()) return s;
    auto input = input_->RestoreStream(std::move(context), reader, ChildNodePath(path, 0));
    if (!input.ok()) return input.status();
    auto stream = std::make_unique<FilterStream>(std::move(*input), std::move(fn));
    stream->index_ = index;
    return stream;
  }

 private:
  class FilterStream final : public Stream<T> {
   public:
    FilterStream(std::unique_ptr<Stream<T>> input, P predicate)
        : input_(std::move(input)), predicate_(std::move(predicate)) {}
    PollState Poll(absl::StatusOr<T>* out) override {
      for (;;) {
        PollState state = input_->Poll(out);
        if (state != PollState::kReady) return state;
        int64_t index = index_++;
        if (!out->ok()) return PollState::kReady;
        absl::StatusOr<bool> keep = InvokeUserFunction("Filter", index, predicate_, std::as_const(**out));
        if (!keep.ok()) {
          *out = keep.status();
          return PollState::kReady;
        }
        if (*keep) return PollState::kReady;
      }
    }
    Task<void> WaitReady() override { return input_->WaitReady(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      writer->WriteState(path, index_);
      if (absl::Status s = AppendFunctionState(predicate_, *writer, path); !s.ok())
        return Stream<T>::SaveResult(s);
      return input_->Save(std::move(writer), ChildNodePath(path, 0));
    }
    bool Mark(MarkWriter& mark) const override {
      mark.Write(index_);
      return mark.Input(0, *input_);
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

#endif  // SLUICE_OPS_FILTER_H_
