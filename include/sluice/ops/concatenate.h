// Concatenate(a, b): a's elements, then b's (tf.data.Dataset.concatenate). b's stream is only made once a
// has ended. Cardinality: unknown if either is unknown, infinite if either is infinite, else the sum.
// Threading: synchronous; polls the current input inline.
// Checkpoints: besides the current input, the pass counters of the nodes below b that number their
// passes (see CollectPassNodes): b's stream is made after a compact mark of a's part can have been taken.
#ifndef SLUICE_OPS_CONCATENATE_H_
#define SLUICE_OPS_CONCATENATE_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "sluice/ops/cardinality.h"
#include "sluice/ops/op_node.h"

namespace sluice::ops {

template <class T>
class ConcatenateNode final : public Node<T> {
 public:
  ConcatenateNode(NodePtr<T> first, NodePtr<T> second) : first_(std::move(first)), second_(std::move(second)) {}
  std::string_view op_name() const override { return "Concatenate"; }
  DatasetSpec element_spec() const override {
    return MergedSpec(first_->element_spec(), second_->element_spec());
  }
  bool keeps_compact_state(const Options&) const override { return true; }
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
    return std::make_unique<ConcatenateStream>(first_->MakeStream(context), second_, context, second_);
  }
  // State: which input is current (0, 1, or 2 when both ended), the next pass numbers of the pass
  // nodes below the second input, and the current input's state at its child path.
  absl::StatusOr<std::unique_ptr<Stream<T>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    uint64_t current = 0;
    std::vector<uint64_t> next_passes;
    if (absl::Status s = reader.ReadState(path, &current, &next_passes); !s.ok()) return s;
    if (current > 2) return reader.Corrupt(path, absl::DataLossError(absl::StrCat("input ", current)));
    std::vector<IteratorState::NodeKey> pass_nodes;
    CollectPassNodes(second_, &pass_nodes);
    if (next_passes.size() != pass_nodes.size()) {
      return reader.Corrupt(path, absl::DataLossError(absl::StrCat(next_passes.size(), " pass counters for ",
                                                                   pass_nodes.size(), " nodes")));
    }
    // Before the current input's restore, which sets the counters of the positions it restores.
    context->state->SetNextPasses(pass_nodes, next_passes);
    std::unique_ptr<Stream<T>> stream;
    if (current < 2) {
      auto restored =
          (current == 0 ? first_ : second_)->RestoreStream(context, reader, ChildNodePath(path, current));
      if (!restored.ok()) return restored.status();
      stream = std::move(*restored);
    }
    auto concatenated = std::make_unique<ConcatenateStream>(
        std::move(stream), current == 0 ? second_ : nullptr, std::move(context), second_);
    concatenated->current_index_ = current;
    return concatenated;
  }

 private:
  class ConcatenateStream final : public Stream<T> {
   public:
    // `second`: the input to open once the current one ends (null once opened); `pass_root`: the node
    // whose pass counters the state holds (the second input's, opened or not).
    ConcatenateStream(std::unique_ptr<Stream<T>> first, NodePtr<T> second, IteratorContextPtr context,
                      const NodePtr<T>& pass_root)
        : current_(std::move(first)), second_(std::move(second)), context_(std::move(context)) {
      CollectPassNodes(pass_root, &pass_nodes_);
    }
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
      writer->WriteState(path, current, context_->state->NextPasses(pass_nodes_));
      if (!current_) return Stream<T>::SaveResult(absl::OkStatus());
      return current_->Save(std::move(writer), ChildNodePath(path, current));
    }
    bool Mark(MarkWriter& mark) const override {
      const uint64_t current = current_ ? current_index_ : 2;
      mark.Write(current, context_->state->NextPasses(pass_nodes_));
      return !current_ || mark.Input(static_cast<size_t>(current), *current_);
    }

    uint64_t current_index_ = 0;  // the input current_ reads

   private:
    std::unique_ptr<Stream<T>> current_;
    NodePtr<T> second_;
    IteratorContextPtr context_;
    std::vector<IteratorState::NodeKey> pass_nodes_;
  };

  NodePtr<T> first_;
  NodePtr<T> second_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_CONCATENATE_H_
