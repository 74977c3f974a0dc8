// Batch(batch_size, drop_remainder): consecutive elements collected into std::vector<T> of batch_size;
// the last batch holds the remainder unless drop_remainder. An error element from the input is yielded
// as the batch's result and the elements collected for that batch are dropped, as tf.data does.
// batch_size <= 0 is InvalidArgument. Cardinality: input / batch_size, rounded up unless
// drop_remainder; infinite and unknown stay so.
#ifndef SLUICE_OPS_BATCH_H_
#define SLUICE_OPS_BATCH_H_

#include <memory>
#include <utility>
#include <vector>

#include "sluice/cardinality.h"
#include "sluice/op_node.h"

namespace sluice::ops {

template <class T>
class BatchNode final : public Node<std::vector<T>> {
 public:
  BatchNode(NodePtr<T> input, int64_t batch_size, bool drop_remainder)
      : input_(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder) {}
  std::string_view op_name() const override { return "Batch"; }
  std::vector<Param> params() const override {
    return {{"batch_size", batch_size_}, {"drop_remainder", drop_remainder_}};
  }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override {
    int64_t n = input_->cardinality();
    if (n < 0) return n;
    return n / batch_size_ + (!drop_remainder_ && n % batch_size_ != 0 ? 1 : 0);
  }
  std::unique_ptr<Stream<std::vector<T>>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<BatchStream>(input_->MakeStream(std::move(context)), batch_size_, drop_remainder_);
  }

 private:
  class BatchStream final : public Stream<std::vector<T>> {
   public:
    BatchStream(std::unique_ptr<Stream<T>> input, int64_t batch_size, bool drop_remainder)
        : input_(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder) {}
    PollState Poll(absl::StatusOr<std::vector<T>>* out) override {
      if (ended_) return PollState::kEnd;
      // The partial batch lives in a member, so a kPending return keeps what was collected.
      if (batch_.capacity() == 0) batch_.reserve(static_cast<size_t>(batch_size_));
      while (static_cast<int64_t>(batch_.size()) < batch_size_) {
        PollState state = input_->Poll(&in_);
        if (state == PollState::kPending) return state;
        if (state == PollState::kEnd) {
          ended_ = true;
          if (batch_.empty() || drop_remainder_) return PollState::kEnd;
          break;
        }
        if (!in_.ok()) {
          batch_.clear();
          *out = std::move(in_).status();
          return PollState::kReady;
        }
        batch_.push_back(std::move(*in_));
      }
      *out = std::move(batch_);
      batch_ = std::vector<T>();
      return PollState::kReady;
    }
    Task<void> WaitReady() override { return input_->WaitReady(); }

   private:
    std::unique_ptr<Stream<T>> input_;
    int64_t batch_size_;
    bool drop_remainder_;
    bool ended_ = false;
    std::vector<T> batch_;
    absl::StatusOr<T> in_;
  };

  NodePtr<T> input_;
  int64_t batch_size_;
  bool drop_remainder_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_BATCH_H_
