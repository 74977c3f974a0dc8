// Map(f): f(x) for each element x, in order (this is the sequential form; the parallel form with
// num_parallel_calls runs on the pool). f returns U or absl::StatusOr<U>; an error or exception fails
// that element only, with a Status naming the op and element index, and the stream goes on. Error
// elements of the input pass through untouched (f is not called). Cardinality: the input's.
#ifndef SLUICE_OPS_MAP_H_
#define SLUICE_OPS_MAP_H_

#include <memory>
#include <string>
#include <utility>

#include "sluice/ops/op_node.h"
#include "sluice/ops/stateful_function.h"
#include "sluice/ops/user_function.h"

namespace sluice::ops {

template <class T, class F>
class MapNode final : public Node<UnwrapStatusOrT<std::invoke_result_t<F&, T>>> {
 public:
  using U = UnwrapStatusOrT<std::invoke_result_t<F&, T>>;
  MapNode(NodePtr<T> input, F f, FunctionParam function)
      : input_(std::move(input)), f_(std::move(f)), function_(std::move(function)) {}
  std::string_view op_name() const override { return "Map"; }
  bool keeps_compact_state(const Options&) const override { return true; }
  bool saves_function_state() const override { return true; }
  std::vector<Param> params() const override { return {{"f", function_}}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<Stream<U>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<MapStream>(input_->MakeStream(std::move(context)), f_);
  }
  // State: the element index (error messages name it), then a Stateful function's state.
  absl::StatusOr<std::unique_ptr<Stream<U>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    int64_t index = 0;
    auto fn = f_;
    if (absl::Status s = ReadStateWithFunction(reader, path, fn, &index); !s.ok()) return s;
    auto input = input_->RestoreStream(std::move(context), reader, ChildNodePath(path, 0));
    if (!input.ok()) return input.status();
    auto stream = std::make_unique<MapStream>(std::move(*input), std::move(fn));
    stream->index_ = index;
    return stream;
  }

 private:
  class MapStream final : public Stream<U> {
   public:
    MapStream(std::unique_ptr<Stream<T>> input, F f) : input_(std::move(input)), f_(std::move(f)) {}
    PollState Poll(absl::StatusOr<U>* out) override {
      PollState state = input_->Poll(&in_);
      if (state != PollState::kReady) return state;
      if (!in_.ok()) {
        *out = std::move(in_).status();
      } else {
        *out = InvokeUserFunction("Map", index_, f_, std::move(*in_));
      }
      ++index_;
      return PollState::kReady;
    }
    Task<void> WaitReady() override { return input_->WaitReady(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      writer->WriteState(path, index_);
      if (absl::Status s = AppendFunctionState(f_, *writer, path); !s.ok()) return Stream<U>::SaveResult(s);
      return input_->Save(std::move(writer), ChildNodePath(path, 0));
    }
    bool Mark(MarkWriter& mark) const override {
      mark.Write(index_);
      return mark.Input(0, *input_);
    }

    int64_t index_ = 0;

   private:
    std::unique_ptr<Stream<T>> input_;
    F f_;
    absl::StatusOr<T> in_;
  };

  NodePtr<T> input_;
  F f_;
  FunctionParam function_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_MAP_H_
