// Unbatch(): each std::vector<T> element split back into its T elements, in order; empty vectors
// yield nothing; an error element passes through. Cardinality: unknown (batch sizes may vary).
#ifndef SLUICE_OPS_UNBATCH_H_
#define SLUICE_OPS_UNBATCH_H_

#include <memory>
#include <utility>
#include <vector>

#include "sluice/cardinality.h"
#include "sluice/op_node.h"

namespace sluice::ops {

template <class T>
class UnbatchNode final : public Node<T> {
 public:
  explicit UnbatchNode(NodePtr<std::vector<T>> input) : input_(std::move(input)) {}
  std::string_view op_name() const override { return "Unbatch"; }
  std::vector<Param> params() const override { return {}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override { return kUnknownCardinality; }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<UnbatchStream>(input_->MakeStream(std::move(context)));
  }

 private:
  class UnbatchStream final : public Stream<T> {
   public:
    explicit UnbatchStream(std::unique_ptr<Stream<std::vector<T>>> input) : input_(std::move(input)) {}
    PollState Poll(absl::StatusOr<T>* out) override {
      while (next_ >= batch_.size()) {
        PollState state = input_->Poll(&in_);
        if (state != PollState::kReady) return state;
        if (!in_.ok()) {
          *out = std::move(in_).status();
          return PollState::kReady;
        }
        batch_ = std::move(*in_);
        next_ = 0;
      }
      *out = std::move(batch_[next_++]);
      return PollState::kReady;
    }
    Task<void> WaitReady() override { return input_->WaitReady(); }

   private:
    std::unique_ptr<Stream<std::vector<T>>> input_;
    absl::StatusOr<std::vector<T>> in_;
    std::vector<T> batch_;
    size_t next_ = 0;
  };

  NodePtr<std::vector<T>> input_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_UNBATCH_H_
