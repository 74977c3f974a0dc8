// Range(start, stop, step): start, start+step, ... up to but excluding stop, as tf.data.Dataset.range.
// A negative step counts down; an empty range yields nothing; step 0 is InvalidArgument (the one
// element). Cardinality is exact.
// Position (sluice/ops/stream.h): a stream's position() is {index of the next element, 0}, the end being
// {cardinality, 0}; MakeStreamAt({k, 0}) yields the elements from start + k*step on. An index outside
// 0..cardinality, or a nonzero offset, is InvalidArgument (the one element).
//
//   RangeNode range(0, 10, 3);                        // 0 3 6 9
//   auto stream = range.MakeStreamAt(context, {2, 0});  // 6 9
#ifndef SLUICE_OPS_RANGE_H_
#define SLUICE_OPS_RANGE_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/stream.h"

namespace sluice::ops {

class RangeNode final : public Node<int64_t>, public PositionedSource<int64_t> {
 public:
  RangeNode(int64_t start, int64_t stop, int64_t step) : start_(start), stop_(stop), step_(step) {}
  std::string_view op_name() const override { return "Range"; }
  std::vector<Param> params() const override { return {{"start", start_}, {"stop", stop_}, {"step", step_}}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {}; }
  // In unsigned arithmetic: stop - start overflows int64 for wide ranges (Range(0, INT64_MAX) with the
  // rounding term, Range(INT64_MIN, INT64_MAX)). A count past INT64_MAX is reported as INT64_MAX.
  int64_t cardinality() const override {
    if (step_ == 0) return 0;
    const bool up = step_ > 0;
    if (up ? stop_ <= start_ : start_ <= stop_) return 0;
    const uint64_t span = up ? static_cast<uint64_t>(stop_) - static_cast<uint64_t>(start_)
                             : static_cast<uint64_t>(start_) - static_cast<uint64_t>(stop_);
    const uint64_t stride = up ? static_cast<uint64_t>(step_) : uint64_t{0} - static_cast<uint64_t>(step_);
    const uint64_t count = (span - 1) / stride + 1;
    return count > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(count);
  }
  std::unique_ptr<Stream<int64_t>> MakeStream(IteratorContextPtr) const override {
    return std::make_unique<RangeStream>(start_, stop_, step_, 0, cardinality());
  }
  std::unique_ptr<Stream<int64_t>> MakeStreamAt(IteratorContextPtr, SourcePosition position) const override {
    const int64_t count = cardinality();
    if (position.index < 0 || position.index > count || position.offset != 0) {
      auto stream = std::make_unique<RangeStream>(start_, stop_, step_, count, count);
      stream->Fail(absl::InvalidArgumentError(absl::StrCat("Range: cannot start at position {", position.index,
                                                           ", ", position.offset, "}: the range has ", count,
                                                           " elements")));
      return stream;
    }
    return std::make_unique<RangeStream>(start_, stop_, step_, position.index, count);
  }

 private:
  class RangeStream final : public Stream<int64_t> {
   public:
    // Starts at element `index` (0..cardinality).
    RangeStream(int64_t start, int64_t stop, int64_t step, int64_t index, int64_t cardinality)
        : next_(start), stop_(stop), step_(step), start_(start), end_index_(cardinality) {
      int64_t skipped;
      // Past the end when it overflows: the end saturates as in Poll.
      if (__builtin_mul_overflow(index, step, &skipped) || __builtin_add_overflow(start, skipped, &next_)) {
        next_ = stop_;
      }
    }
    // The per-element path tests the end only: an error stream stands at its end (Fail).
    PollState Poll(absl::StatusOr<int64_t>* out) override {
      if (Ended()) [[unlikely]] {
        if (error_.ok()) return PollState::kEnd;
        *out = std::move(error_);
        error_ = absl::OkStatus();
        return PollState::kReady;
      }
      *out = next_;
      // Saturating: a range ending near INT64_MAX must not wrap around and start again.
      if (__builtin_add_overflow(next_, step_, &next_)) next_ = stop_;
      return PollState::kReady;
    }
    // The index is derived from next_ (no counter per element); unsigned, as in cardinality().
    std::optional<SourcePosition> position() const override {
      if (Ended()) return SourcePosition{end_index_, 0};
      const bool up = step_ > 0;
      const uint64_t span = up ? static_cast<uint64_t>(next_) - static_cast<uint64_t>(start_)
                               : static_cast<uint64_t>(start_) - static_cast<uint64_t>(next_);
      const uint64_t stride = up ? static_cast<uint64_t>(step_) : uint64_t{0} - static_cast<uint64_t>(step_);
      return SourcePosition{static_cast<int64_t>(span / stride), 0};
    }
    // The stream's one element is `error` (a bad start position); it then ends.
    void Fail(absl::Status error) {
      error_ = std::move(error);
      next_ = stop_;
    }

   private:
    bool Ended() const { return step_ > 0 ? next_ >= stop_ : next_ <= stop_; }

    int64_t next_;
    int64_t stop_;
    int64_t step_;
    int64_t start_;
    int64_t end_index_;  // the cardinality: the position once ended
    absl::Status error_;
  };

  int64_t start_, stop_, step_;
};

inline NodePtr<int64_t> MakeRange(int64_t start, int64_t stop, int64_t step) {
  if (step == 0) return MakeErrorSource<int64_t>("Range", absl::InvalidArgumentError("Range: step must not be 0"));
  return std::make_shared<RangeNode>(start, stop, step);
}

}  // namespace sluice::ops

#endif  // SLUICE_OPS_RANGE_H_
