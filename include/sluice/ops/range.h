// Range(start, stop, step): start, start+step, ... up to but excluding stop, as tf.data.Dataset.range.
// A negative step counts down; an empty range yields nothing; step 0 is InvalidArgument (the one
// element). Cardinality is exact.
#ifndef SLUICE_OPS_RANGE_H_
#define SLUICE_OPS_RANGE_H_

#include <cstdint>
#include <memory>

#include "sluice/ops/op_node.h"
#include "sluice/ops/error_source.h"

namespace sluice::ops {

class RangeNode final : public Node<int64_t> {
 public:
  RangeNode(int64_t start, int64_t stop, int64_t step) : start_(start), stop_(stop), step_(step) {}
  std::string_view op_name() const override { return "Range"; }
  std::vector<Param> params() const override { return {{"start", start_}, {"stop", stop_}, {"step", step_}}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {}; }
  int64_t cardinality() const override {
    if (step_ > 0) return stop_ > start_ ? (stop_ - start_ + step_ - 1) / step_ : 0;
    return start_ > stop_ ? (start_ - stop_ - step_ - 1) / -step_ : 0;
  }
  std::unique_ptr<Stream<int64_t>> MakeStream(IteratorContextPtr) const override {
    return std::make_unique<RangeStream>(start_, stop_, step_);
  }

 private:
  class RangeStream final : public Stream<int64_t> {
   public:
    RangeStream(int64_t start, int64_t stop, int64_t step) : next_(start), stop_(stop), step_(step) {}
    PollState Poll(absl::StatusOr<int64_t>* out) override {
      if (step_ > 0 ? next_ >= stop_ : next_ <= stop_) return PollState::kEnd;
      *out = next_;
      // Saturating: a range ending near INT64_MAX must not wrap around and start again.
      if (__builtin_add_overflow(next_, step_, &next_)) next_ = stop_;
      return PollState::kReady;
    }

   private:
    int64_t next_;
    int64_t stop_;
    int64_t step_;
  };

  int64_t start_, stop_, step_;
};

inline NodePtr<int64_t> MakeRange(int64_t start, int64_t stop, int64_t step) {
  if (step == 0) return MakeErrorSource<int64_t>("Range", absl::InvalidArgumentError("Range: step must not be 0"));
  return std::make_shared<RangeNode>(start, stop, step);
}

}  // namespace sluice::ops

#endif  // SLUICE_OPS_RANGE_H_
