// Interleave(f, cycle_length, block_length), sequential form, as tf.data.Dataset.interleave:
// f maps each input element to a Dataset<U>. Up to cycle_length of those are open at once; the op takes
// block_length consecutive elements from one, then moves to the next slot of the cycle. A slot whose
// dataset ends is emptied and the cycle moves on; an empty slot is refilled with the next input
// element's dataset when the cycle reaches it. FlatMap(f) is Interleave(f, 1, 1).
// Errors: an error element of the input, or f failing (error or exception), is yielded in that slot's
// turn; error elements of a sub-dataset are yielded as elements and count toward its block.
// cycle_length <= 0 or block_length <= 0 are InvalidArgument. Cardinality: unknown.
#ifndef SLUICE_OPS_INTERLEAVE_H_
#define SLUICE_OPS_INTERLEAVE_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sluice/ops/cardinality.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/user_function.h"

namespace sluice::ops {

template <class T, class F>
class InterleaveNode final : public Node<typename UnwrapStatusOrT<std::invoke_result_t<F&, T>>::element_type> {
 public:
  using SubDataset = UnwrapStatusOrT<std::invoke_result_t<F&, T>>;
  using U = typename SubDataset::element_type;

  InterleaveNode(std::string op, NodePtr<T> input, F f, FunctionParam function, int64_t cycle_length,
                 int64_t block_length)
      : op_(std::move(op)),
        input_(std::move(input)),
        f_(std::move(f)),
        function_(std::move(function)),
        cycle_length_(cycle_length),
        block_length_(block_length) {}
  std::string_view op_name() const override { return op_; }
  std::vector<Param> params() const override {
    return {{"f", function_}, {"cycle_length", cycle_length_}, {"block_length", block_length_}};
  }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override { return kUnknownCardinality; }
  std::unique_ptr<Stream<U>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<InterleaveStream>(op_, input_->MakeStream(context), f_, context, cycle_length_,
                                              block_length_);
  }

 private:
  class InterleaveStream final : public Stream<U> {
   public:
    InterleaveStream(std::string op, std::unique_ptr<Stream<T>> input, F f, IteratorContextPtr context,
                     int64_t cycle_length, int64_t block_length)
        : op_(std::move(op)),
          input_(std::move(input)),
          f_(std::move(f)),
          context_(std::move(context)),
          slots_(static_cast<size_t>(cycle_length)),
          block_length_(block_length) {}

    PollState Poll(absl::StatusOr<U>* out) override {
      while (!input_done_ || open_ > 0) {
        std::unique_ptr<Stream<U>>& slot = slots_[cycle_index_];
        if (slot) {
          PollState state = slot->Poll(out);
          if (state == PollState::kPending) {
            waiting_on_ = slot.get();
            return state;
          }
          if (state == PollState::kReady) {
            if (++block_index_ == block_length_) Advance();
            return PollState::kReady;
          }
          slot.reset();
          --open_;
          Advance();
        } else if (!input_done_) {
          PollState state = input_->Poll(&in_);
          if (state == PollState::kPending) {
            waiting_on_ = nullptr;
            return state;
          }
          if (state == PollState::kEnd) {
            input_done_ = true;
            continue;
          }
          int64_t index = input_index_++;
          if (!in_.ok()) {
            *out = std::move(in_).status();
            Advance();
            return PollState::kReady;
          }
          absl::StatusOr<SubDataset> sub = InvokeUserFunction(op_, index, f_, std::move(*in_));
          if (!sub.ok()) {
            *out = std::move(sub).status();
            Advance();
            return PollState::kReady;
          }
          slot = sub->node()->MakeStream(context_);
          ++open_;
        } else {
          Advance();
        }
      }
      return PollState::kEnd;
    }
    Task<void> WaitReady() override {
      if (waiting_on_ != nullptr) return waiting_on_->WaitReady();
      return input_->WaitReady();
    }

   private:
    void Advance() {
      block_index_ = 0;
      cycle_index_ = cycle_index_ + 1 == slots_.size() ? 0 : cycle_index_ + 1;
    }

    std::string op_;
    std::unique_ptr<Stream<T>> input_;
    F f_;
    IteratorContextPtr context_;
    std::vector<std::unique_ptr<Stream<U>>> slots_;
    int64_t block_length_;
    size_t cycle_index_ = 0;
    int64_t block_index_ = 0;
    int64_t open_ = 0;
    int64_t input_index_ = 0;
    bool input_done_ = false;
    absl::StatusOr<T> in_;
    Stream<U>* waiting_on_ = nullptr;
  };

  std::string op_;
  NodePtr<T> input_;
  F f_;
  FunctionParam function_;
  int64_t cycle_length_;
  int64_t block_length_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_INTERLEAVE_H_
