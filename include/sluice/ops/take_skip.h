// Take(count): the first `count` elements (all of them when count < 0).
// Skip(count): all but the first `count` elements (none when count < 0).
// Error elements count as elements, as in tf.data. Cardinality as tf.data: Take gives min(count, input)
// (count for an infinite input), Skip gives max(0, input - count); unknown stays unknown.
#ifndef SLUICE_OPS_TAKE_SKIP_H_
#define SLUICE_OPS_TAKE_SKIP_H_

#include <algorithm>
#include <memory>
#include <utility>

#include "sluice/ops/cardinality.h"
#include "sluice/ops/op_node.h"

namespace sluice::ops {

template <class T>
class TakeNode final : public Node<T> {
 public:
  TakeNode(NodePtr<T> input, int64_t count) : input_(std::move(input)), count_(count) {}
  std::string_view op_name() const override { return "Take"; }
  DatasetSpec element_spec() const override { return input_->element_spec(); }
  bool keeps_compact_state(const Options&) const override { return true; }
  std::vector<Param> params() const override { return {{"count", count_}}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override {
    int64_t n = input_->cardinality();
    if (n == kUnknownCardinality) return n;
    if (count_ < 0) return n;
    if (n == kInfiniteCardinality) return count_;
    return std::min(n, count_);
  }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<TakeStream>(input_->MakeStream(std::move(context)), count_);
  }
  // State: the count left and whether the input is still open (it is dropped once the count is reached).
  absl::StatusOr<std::unique_ptr<Stream<T>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    int64_t remaining = 0;
    bool open = false;
    if (absl::Status s = reader.ReadState(path, &remaining, &open); !s.ok()) return s;
    std::unique_ptr<Stream<T>> input;
    if (open) {
      auto restored = input_->RestoreStream(std::move(context), reader, ChildNodePath(path, 0));
      if (!restored.ok()) return restored.status();
      input = std::move(*restored);
    } else if (remaining != 0) {
      return reader.Corrupt(path, absl::DataLossError("the input is closed before the count is reached"));
    }
    return std::make_unique<TakeStream>(std::move(input), remaining);
  }

 private:
  class TakeStream final : public Stream<T> {
   public:
    TakeStream(std::unique_ptr<Stream<T>> input, int64_t count) : input_(std::move(input)), remaining_(count) {}
    PollState Poll(absl::StatusOr<T>* out) override {
      if (remaining_ == 0) {
        input_.reset();  // free the upstream (files, buffers) as soon as it cannot be needed
        return PollState::kEnd;
      }
      PollState state = input_->Poll(out);
      if (state == PollState::kReady && remaining_ > 0) --remaining_;
      return state;
    }
    Task<void> WaitReady() override { return input_->WaitReady(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      writer->WriteState(path, remaining_, input_ != nullptr);
      if (!input_) return Stream<T>::SaveResult(absl::OkStatus());
      return input_->Save(std::move(writer), ChildNodePath(path, 0));
    }
    bool Mark(MarkWriter& mark) const override {
      mark.Write(remaining_, input_ != nullptr);
      return !input_ || mark.Input(0, *input_);
    }

   private:
    std::unique_ptr<Stream<T>> input_;
    int64_t remaining_;  // < 0: unlimited
  };

  NodePtr<T> input_;
  int64_t count_;
};

template <class T>
class SkipNode final : public Node<T> {
 public:
  SkipNode(NodePtr<T> input, int64_t count) : input_(std::move(input)), count_(count) {}
  std::string_view op_name() const override { return "Skip"; }
  DatasetSpec element_spec() const override { return input_->element_spec(); }
  bool keeps_compact_state(const Options&) const override { return true; }
  std::vector<Param> params() const override { return {{"count", count_}}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override {
    int64_t n = input_->cardinality();
    if (n == kUnknownCardinality || n == kInfiniteCardinality) return n;
    if (count_ < 0) return 0;
    return std::max<int64_t>(0, n - count_);
  }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<SkipStream>(input_->MakeStream(std::move(context)), count_);
  }
  // State: the count still to skip.
  absl::StatusOr<std::unique_ptr<Stream<T>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    int64_t to_skip = 0;
    if (absl::Status s = reader.ReadState(path, &to_skip); !s.ok()) return s;
    auto input = input_->RestoreStream(std::move(context), reader, ChildNodePath(path, 0));
    if (!input.ok()) return input.status();
    return std::make_unique<SkipStream>(std::move(*input), to_skip);
  }

 private:
  class SkipStream final : public Stream<T> {
   public:
    SkipStream(std::unique_ptr<Stream<T>> input, int64_t count) : input_(std::move(input)), to_skip_(count) {}
    PollState Poll(absl::StatusOr<T>* out) override {
      while (to_skip_ != 0) {
        PollState state = input_->Poll(out);
        if (state != PollState::kReady) return state;
        if (to_skip_ > 0) --to_skip_;
      }
      return input_->Poll(out);
    }
    Task<void> WaitReady() override { return input_->WaitReady(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      writer->WriteState(path, to_skip_);
      return input_->Save(std::move(writer), ChildNodePath(path, 0));
    }
    bool Mark(MarkWriter& mark) const override {
      mark.Write(to_skip_);
      return mark.Input(0, *input_);
    }

   private:
    std::unique_ptr<Stream<T>> input_;
    int64_t to_skip_;  // < 0: skip everything
  };

  NodePtr<T> input_;
  int64_t count_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_TAKE_SKIP_H_
