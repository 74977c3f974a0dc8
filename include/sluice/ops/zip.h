// Zip(a, b, ...): tf.data.Dataset.zip over two or more datasets.
//
// Contract (tf.data's ZipDataset):
// - Elements: (a_i, b_i, ...) as std::pair for two inputs, std::tuple for more, until the first input
//   that ends; every later step is the end too.
// - Each step takes one element from the inputs in order. An error element from input k is that step's
//   element: the elements already taken from inputs before k are dropped and inputs after k are not
//   advanced (as tf's GetNext returns at the first failing input). Errors do not end the stream.
// - Cardinality: the smallest known one; infinite only if all are; unknown if any is unknown.
// - Threading: synchronous; polls its inputs inline and keeps the elements it already has across a
//   kPending from a later input.
#ifndef SLUICE_OPS_ZIP_H_
#define SLUICE_OPS_ZIP_H_

#include <algorithm>
#include <cstddef>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "sluice/ops/cardinality.h"
#include "sluice/ops/op_node.h"

namespace sluice::ops {

// Out is std::pair<Ts...> or std::tuple<Ts...>.
template <class Out, class... Ts>
class ZipNode final : public Node<Out> {
  static_assert(sizeof...(Ts) >= 2, "Zip needs at least two inputs");

 public:
  explicit ZipNode(NodePtr<Ts>... inputs) : inputs_(std::move(inputs)...) {}
  std::string_view op_name() const override { return "Zip"; }
  std::vector<Param> params() const override { return {}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override {
    return std::apply([](const auto&... in) { return std::vector<std::shared_ptr<const OpNode>>{in...}; },
                      inputs_);
  }
  int64_t cardinality() const override {
    const std::vector<int64_t> counts =
        std::apply([](const auto&... in) { return std::vector<int64_t>{in->cardinality()...}; }, inputs_);
    int64_t result = kInfiniteCardinality;
    for (int64_t n : counts) {
      if (n == kUnknownCardinality) return kUnknownCardinality;
      if (n != kInfiniteCardinality) result = result == kInfiniteCardinality ? n : std::min(result, n);
    }
    return result;
  }
  std::unique_ptr<Stream<Out>> MakeStream(IteratorContextPtr context) const override {
    return std::apply(
        [&context](const auto&... in) { return std::make_unique<ZipStream>(in->MakeStream(context)...); },
        inputs_);
  }

 private:
  static constexpr size_t kInputs = sizeof...(Ts);

  class ZipStream final : public Stream<Out> {
   public:
    explicit ZipStream(std::unique_ptr<Stream<Ts>>... streams) : streams_(std::move(streams)...) {}

    PollState Poll(absl::StatusOr<Out>* out) override {
      if (ended_) return PollState::kEnd;
      return PollFrom<0>(out);
    }
    Task<void> WaitReady() override { return WaitAt<0>(); }

   private:
    // Polls input I if this step has not taken its element yet, then the inputs after it.
    template <size_t I>
    PollState PollFrom(absl::StatusOr<Out>* out) {
      if constexpr (I == kInputs) {
        next_ = 0;
        *out = std::apply([](auto&... taken) { return Out(std::move(*taken)...); }, taken_);
        return PollState::kReady;
      } else {
        if (next_ == I) {
          PollState state = std::get<I>(streams_)->Poll(&std::get<I>(polled_));
          if (state == PollState::kPending) return state;
          if (state == PollState::kEnd) {
            ended_ = true;
            return state;
          }
          if (!std::get<I>(polled_).ok()) {
            next_ = 0;
            *out = std::move(std::get<I>(polled_)).status();
            return PollState::kReady;
          }
          std::get<I>(taken_).emplace(std::move(*std::get<I>(polled_)));
          ++next_;
        }
        return PollFrom<I + 1>(out);
      }
    }

    template <size_t I>
    Task<void> WaitAt() {
      if constexpr (I + 1 == kInputs) {
        return std::get<I>(streams_)->WaitReady();
      } else {
        return next_ == I ? std::get<I>(streams_)->WaitReady() : WaitAt<I + 1>();
      }
    }

    std::tuple<std::unique_ptr<Stream<Ts>>...> streams_;
    std::tuple<absl::StatusOr<Ts>...> polled_;
    std::tuple<std::optional<Ts>...> taken_;
    size_t next_ = 0;  // the input this step polls next
    bool ended_ = false;
  };

  std::tuple<NodePtr<Ts>...> inputs_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_ZIP_H_
