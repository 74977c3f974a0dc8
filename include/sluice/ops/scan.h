// Scan(initial_state, f): a running fold, as tf.data.Dataset.scan. For each input element x, in order,
// f(state, x) returns (new_state, y) as std::pair<State, U> (or absl::StatusOr of that pair); the op
// yields y and carries new_state to the next element. Every iterator (and every epoch of a Repeat)
// starts again from initial_state.
//
// Contract:
// - f is called as f(const State&, T&&) on the consumer's thread, inline (a synchronous op); a copy of f
//   lives in each stream, so a stateful f is not shared between iterators.
// - Errors are elements and leave the state as it was: an input error element passes through (f is not
//   called), and f failing (an error Status or an exception) yields an error naming "Scan" and the
//   element index; the stream goes on with the next element.
// - Cardinality: the input's (tf.data's scan maps one to one).
//
//   // Running sum: 0, 1, 3, 6, 10
//   auto sums = Range(5).Scan(int64_t{0}, [](const int64_t& sum, int64_t x) {
//     return std::pair<int64_t, int64_t>(sum + x, sum + x);
//   });
#ifndef SLUICE_OPS_SCAN_H_
#define SLUICE_OPS_SCAN_H_

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sluice/ops/element_codec.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/user_function.h"

namespace sluice::ops {

namespace detail_scan {
template <class P>
struct PairTraits {
  static_assert(sizeof(P) == 0, "Scan: f must return std::pair<State, U> or absl::StatusOr<std::pair<State, U>>");
};
template <class S, class U>
struct PairTraits<std::pair<S, U>> {
  using State = S;
  using Output = U;
};
}  // namespace detail_scan

template <class T, class State, class F>
using ScanResultT = UnwrapStatusOrT<std::invoke_result_t<F&, const State&, T&&>>;

template <class T, class State, class F>
class ScanNode final : public Node<typename detail_scan::PairTraits<ScanResultT<T, State, F>>::Output> {
 public:
  using Result = ScanResultT<T, State, F>;
  using U = typename detail_scan::PairTraits<Result>::Output;
  static_assert(std::is_convertible_v<typename detail_scan::PairTraits<Result>::State, State>,
                "Scan: the new state f returns must convert to the initial state's type");

  ScanNode(NodePtr<T> input, State initial_state, F f, FunctionParam function)
      : input_(std::move(input)),
        initial_state_(std::move(initial_state)),
        f_(std::move(f)),
        function_(std::move(function)) {}
  std::string_view op_name() const override { return "Scan"; }
  // The initial state is a param when it has a codec (sluice/ops/element_codec.h).
  std::vector<Param> params() const override {
    std::vector<Param> p{{"f", function_}};
    if constexpr (HasElementCodec<State>) {
      EncodedParam state;
      EncodeElement(initial_state_, &state.bytes);
      state.display = absl::StrCat("<", state.bytes.size(), " bytes>");
      p.push_back({"initial_state", std::move(state)});
    }
    return p;
  }
  std::string not_portable_reason() const override {
    return HasElementCodec<State> ? "" : "its initial state has no ElementCodec (sluice/ops/element_codec.h)";
  }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<Stream<U>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<ScanStream>(input_->MakeStream(std::move(context)), initial_state_, f_);
  }
  // State: the scan state (by its ElementCodec) and the element index.
  absl::StatusOr<std::unique_ptr<Stream<U>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    if constexpr (!HasElementCodec<State> || !std::is_default_constructible_v<State>) {
      return reader.Unsupported(path);
    } else {
      State state{};
      int64_t index = 0;
      if (absl::Status s = reader.ReadState(path, &state, &index); !s.ok()) return s;
      auto input = input_->RestoreStream(std::move(context), reader, ChildNodePath(path, 0));
      if (!input.ok()) return input.status();
      auto stream = std::make_unique<ScanStream>(std::move(*input), std::move(state), f_);
      stream->index_ = index;
      return stream;
    }
  }

 private:
  class ScanStream final : public Stream<U> {
   public:
    ScanStream(std::unique_ptr<Stream<T>> input, State state, F f)
        : input_(std::move(input)), state_(std::move(state)), f_(std::move(f)) {}
    PollState Poll(absl::StatusOr<U>* out) override {
      PollState state = input_->Poll(&in_);
      if (state != PollState::kReady) return state;
      int64_t index = index_++;
      if (!in_.ok()) {
        *out = std::move(in_).status();
        return PollState::kReady;
      }
      absl::StatusOr<Result> result = InvokeUserFunction("Scan", index, f_, std::as_const(state_), std::move(*in_));
      if (!result.ok()) {
        *out = std::move(result).status();
        return PollState::kReady;
      }
      state_ = std::move(result->first);
      *out = std::move(result->second);
      return PollState::kReady;
    }
    Task<void> WaitReady() override { return input_->WaitReady(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      if constexpr (!HasElementCodec<State> || !std::is_default_constructible_v<State>) {
        return Stream<U>::SaveResult(writer->Unsupported(path, "its state has no ElementCodec"));
      } else {
        writer->WriteState(path, state_, index_);
        return input_->Save(std::move(writer), ChildNodePath(path, 0));
      }
    }

    int64_t index_ = 0;

   private:
    std::unique_ptr<Stream<T>> input_;
    State state_;
    F f_;
    absl::StatusOr<T> in_;
  };

  NodePtr<T> input_;
  State initial_state_;
  F f_;
  FunctionParam function_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_SCAN_H_
