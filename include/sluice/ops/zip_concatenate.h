// Zip(a, b): pairs (a_i, b_i) until the shorter input ends. An error element from either input makes
// that step's element an error (the other input's element for the step is consumed). Cardinality: the
// smaller known one; infinite only if both are; unknown if either is.
// Concatenate(a, b): a's elements then b's. Cardinality: unknown if either is unknown, infinite if
// either is infinite, else the sum.
#ifndef SLUICE_OPS_ZIP_CONCATENATE_H_
#define SLUICE_OPS_ZIP_CONCATENATE_H_

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "sluice/cardinality.h"
#include "sluice/op_node.h"

namespace sluice::ops {

template <class A, class B>
class ZipNode final : public Node<std::pair<A, B>> {
 public:
  using Pair = std::pair<A, B>;
  ZipNode(NodePtr<A> a, NodePtr<B> b) : a_(std::move(a)), b_(std::move(b)) {}
  std::string_view op_name() const override { return "Zip"; }
  std::vector<Param> params() const override { return {}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {a_, b_}; }
  int64_t cardinality() const override {
    int64_t result = kInfiniteCardinality;
    for (int64_t n : {a_->cardinality(), b_->cardinality()}) {
      if (n == kUnknownCardinality) return kUnknownCardinality;
      if (n != kInfiniteCardinality) result = result == kInfiniteCardinality ? n : std::min(result, n);
    }
    return result;
  }
  std::unique_ptr<Stream<Pair>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<ZipStream>(a_->MakeStream(context), b_->MakeStream(context));
  }

 private:
  class ZipStream final : public Stream<Pair> {
   public:
    ZipStream(std::unique_ptr<Stream<A>> a, std::unique_ptr<Stream<B>> b) : a_(std::move(a)), b_(std::move(b)) {}
    PollState Poll(absl::StatusOr<Pair>* out) override {
      if (ended_) return PollState::kEnd;
      // Each side's element is kept across a kPending from the other side.
      if (!have_a_) {
        PollState state = a_->Poll(&a_value_);
        if (state != PollState::kReady) return Settle(state);
        have_a_ = true;
      }
      if (!have_b_) {
        PollState state = b_->Poll(&b_value_);
        if (state != PollState::kReady) return Settle(state);
        have_b_ = true;
      }
      have_a_ = have_b_ = false;
      if (!a_value_.ok()) {
        *out = std::move(a_value_).status();
      } else if (!b_value_.ok()) {
        *out = std::move(b_value_).status();
      } else {
        *out = Pair(std::move(*a_value_), std::move(*b_value_));
      }
      return PollState::kReady;
    }
    Task<void> WaitReady() override { return have_a_ ? b_->WaitReady() : a_->WaitReady(); }

   private:
    PollState Settle(PollState state) {
      if (state == PollState::kEnd) ended_ = true;
      return state;
    }
    std::unique_ptr<Stream<A>> a_;
    std::unique_ptr<Stream<B>> b_;
    absl::StatusOr<A> a_value_;
    absl::StatusOr<B> b_value_;
    bool have_a_ = false;
    bool have_b_ = false;
    bool ended_ = false;
  };

  NodePtr<A> a_;
  NodePtr<B> b_;
};

template <class T>
class ConcatenateNode final : public Node<T> {
 public:
  ConcatenateNode(NodePtr<T> first, NodePtr<T> second) : first_(std::move(first)), second_(std::move(second)) {}
  std::string_view op_name() const override { return "Concatenate"; }
  std::vector<Param> params() const override { return {}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {first_, second_}; }
  int64_t cardinality() const override {
    int64_t a = first_->cardinality();
    int64_t b = second_->cardinality();
    if (a == kUnknownCardinality || b == kUnknownCardinality) return kUnknownCardinality;
    if (a == kInfiniteCardinality || b == kInfiniteCardinality) return kInfiniteCardinality;
    return a + b;
  }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<ConcatenateStream>(first_->MakeStream(context), second_, context);
  }

 private:
  class ConcatenateStream final : public Stream<T> {
   public:
    ConcatenateStream(std::unique_ptr<Stream<T>> first, NodePtr<T> second, IteratorContextPtr context)
        : current_(std::move(first)), second_(std::move(second)), context_(std::move(context)) {}
    PollState Poll(absl::StatusOr<T>* out) override {
      for (;;) {
        if (!current_) return PollState::kEnd;
        PollState state = current_->Poll(out);
        if (state != PollState::kEnd) return state;
        // The second input is only opened once the first is done.
        current_ = second_ ? second_->MakeStream(context_) : nullptr;
        second_ = nullptr;
      }
    }
    Task<void> WaitReady() override { return current_ ? current_->WaitReady() : Stream<T>::WaitReady(); }

   private:
    std::unique_ptr<Stream<T>> current_;
    NodePtr<T> second_;
    IteratorContextPtr context_;
  };

  NodePtr<T> first_;
  NodePtr<T> second_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_ZIP_CONCATENATE_H_
