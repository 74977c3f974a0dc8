// Concatenate(a, b): a's elements, then b's (tf.data.Dataset.concatenate). b's stream is only made once a
// has ended. Cardinality: unknown if either is unknown, infinite if either is infinite, else the sum.
// Threading: synchronous; polls the current input inline.
#ifndef SLUICE_OPS_CONCATENATE_H_
#define SLUICE_OPS_CONCATENATE_H_

#include <memory>
#include <utility>

#include "sluice/ops/cardinality.h"
#include "sluice/ops/op_node.h"

namespace sluice::ops {

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
  // State: which input is current (0, 1, or 2 when both ended) and its state at its child path.
  absl::StatusOr<std::unique_ptr<Stream<T>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    uint64_t current = 0;
    if (absl::Status s = reader.ReadState(path, &current); !s.ok()) return s;
    if (current > 2) return reader.Corrupt(path, absl::DataLossError(absl::StrCat("input ", current)));
    std::unique_ptr<Stream<T>> stream;
    if (current < 2) {
      auto restored =
          (current == 0 ? first_ : second_)->RestoreStream(context, reader, ChildNodePath(path, current));
      if (!restored.ok()) return restored.status();
      stream = std::move(*restored);
    }
    auto concatenated = std::make_unique<ConcatenateStream>(
        std::move(stream), current == 0 ? second_ : nullptr, std::move(context));
    concatenated->current_index_ = current;
    return concatenated;
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
        ++current_index_;
      }
    }
    Task<void> WaitReady() override { return current_ ? current_->WaitReady() : Stream<T>::WaitReady(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      const uint64_t current = current_ ? current_index_ : 2;
      writer->WriteState(path, current);
      if (!current_) return Stream<T>::SaveResult(absl::OkStatus());
      return current_->Save(std::move(writer), ChildNodePath(path, current));
    }

    uint64_t current_index_ = 0;  // the input current_ reads

   private:
    std::unique_ptr<Stream<T>> current_;
    NodePtr<T> second_;
    IteratorContextPtr context_;
  };

  NodePtr<T> first_;
  NodePtr<T> second_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_CONCATENATE_H_
