// Window(size, shift, stride, drop_remainder): tf.data.Dataset.window.
//
// Contract (TensorFlow's WindowDataset kernel):
// - Elements: datasets. Window k holds input elements k*shift + j*stride for j = 0..size-1 that exist,
//   in order; shift defaults to size, stride to 1. The last windows may be shorter unless
//   drop_remainder, which ends at the first window with fewer than size elements. A window is a dataset
//   of its elements (a FromVector): iterate it, or FlatMap it, e.g. into a batch:
//     Range(7).Window(3, 2).FlatMap([](Dataset<int64_t> w) { return w.Batch(3); })
//       -> [0,1,2] [2,3,4] [4,5,6] [6]
// - Where tf.data makes one dataset per component of a structured element (a pair gives a pair of
//   datasets), sluice makes one dataset of the elements themselves: Map it to a component to split.
// - Errors: size, shift or stride <= 0, or (size - 1) * stride + 1 overflowing, make the dataset one
//   InvalidArgument element. An input error among the elements a window takes is yielded in that
//   window's place (the first such error); input errors the window skips (between strides, or dropped
//   by a shift larger than the window) are ignored, as tf.data does. Errors do not end the stream.
// - Buffering: up to (size - 1) * stride + 1 input elements, copied into each window that takes them.
// - Cardinality (tf.data's rule): with n input elements, n / shift rounded up; with drop_remainder,
//   (n - ((size - 1) * stride + 1)) / shift + 1, or 0 when n is smaller. Infinite and unknown stay so.
// - Threading: synchronous; polls its input inline.
// - Checkpoints (docs/checkpoint.md): saves the buffered input elements, so it needs their ElementCodec;
//   not in compact mode (the iterator refuses it). A window dataset has no ElementCodec, so an op after
//   Window that would save windows it holds (Prefetch, Shuffle) makes Save fail naming that op.
// - Portability: a window dataset has no element type name, so a pipeline with Window stays in its
//   process (not Serialize, not the data service).
#ifndef SLUICE_OPS_WINDOW_H_
#define SLUICE_OPS_WINDOW_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/ops/element_codec.h"
#include "sluice/ops/from_vector.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/stream.h"

namespace sluice {
template <class T>
class Dataset;
}  // namespace sluice

namespace sluice::ops {

// Input elements a window spans, (size - 1) * stride + 1; -1 when that overflows.
inline int64_t WindowSpan(int64_t size, int64_t stride) {
  if (size <= 0 || stride <= 0) return -1;
  if (size - 1 > (INT64_MAX - 1) / stride) return -1;
  return (size - 1) * stride + 1;
}

template <class T>
class WindowNode final : public Node<Dataset<T>> {
 public:
  using W = Dataset<T>;
  // Arguments valid (Dataset::Window checks them).
  WindowNode(NodePtr<T> input, int64_t size, int64_t shift, int64_t stride, bool drop_remainder)
      : input_(std::move(input)),
        size_(size),
        shift_(shift),
        stride_(stride),
        drop_remainder_(drop_remainder),
        span_(WindowSpan(size, stride)) {}
  std::string_view op_name() const override { return "Window"; }
  DatasetSpec element_spec() const override { return StaticElementSpec<W>(); }
  std::vector<Param> params() const override {
    return {{"size", size_}, {"shift", shift_}, {"stride", stride_}, {"drop_remainder", drop_remainder_}};
  }
  std::string not_portable_reason() const override { return "its elements are datasets"; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n < 0) return n;
    if (drop_remainder_) return n < span_ ? 0 : (n - span_) / shift_ + 1;
    return n / shift_ + (n % shift_ != 0 ? 1 : 0);
  }
  std::unique_ptr<Stream<W>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<WindowStream>(Geometry(), input_->MakeStream(std::move(context)));
  }
  // State: the buffered input elements (errors too), whether the input ended, and the input elements
  // still to drop for the last shift; then the input at /0 unless it ended.
  absl::StatusOr<std::unique_ptr<Stream<W>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    if constexpr (!HasElementCodec<T>) {
      return reader.Unsupported(path);
    } else {
      std::vector<absl::StatusOr<T>> buffer;
      bool ended = false;
      int64_t skip = 0;
      if (absl::Status s = reader.ReadState(path, &buffer, &ended, &skip); !s.ok()) return s;
      if (static_cast<int64_t>(buffer.size()) >= span_ || skip < 0 || skip >= shift_ ||
          (skip > 0 && !buffer.empty())) {
        return reader.Corrupt(path, absl::DataLossError(absl::StrCat(buffer.size(), " buffered elements and ",
                                                                     skip, " to skip")));
      }
      std::unique_ptr<Stream<T>> input;
      if (!ended) {
        auto restored = input_->RestoreStream(std::move(context), reader, ChildNodePath(path, 0));
        if (!restored.ok()) return restored.status();
        input = std::move(*restored);
      }
      auto stream = std::make_unique<WindowStream>(Geometry(), std::move(input));
      stream->buffer_.assign(std::make_move_iterator(buffer.begin()), std::make_move_iterator(buffer.end()));
      stream->skip_left_ = skip;
      return stream;
    }
  }

 private:
  struct WindowGeometry {
    size_t shift;
    size_t stride;
    bool drop_remainder;
    size_t span;
  };
  WindowGeometry Geometry() const {
    return {static_cast<size_t>(shift_), static_cast<size_t>(stride_), drop_remainder_,
            static_cast<size_t>(span_)};
  }

  class WindowStream final : public Stream<W> {
   public:
    // `input` null: the input had ended.
    WindowStream(WindowGeometry geometry, std::unique_ptr<Stream<T>> input)
        : geometry_(geometry), input_(std::move(input)) {}

    PollState Poll(absl::StatusOr<W>* out) override {
      // What the last shift still drops; their errors are ignored.
      while (skip_left_ > 0 && input_ != nullptr) {
        PollState state = input_->Poll(&in_);
        if (state == PollState::kPending) return state;
        if (state == PollState::kEnd) {
          input_.reset();
          break;
        }
        --skip_left_;
      }
      skip_left_ = 0;
      const size_t span = geometry_.span;
      while (input_ != nullptr && buffer_.size() < span) {
        PollState state = input_->Poll(&in_);
        if (state == PollState::kPending) return state;
        if (state == PollState::kEnd) {
          input_.reset();
          break;
        }
        buffer_.push_back(std::move(in_));
      }
      if (buffer_.empty() || (geometry_.drop_remainder && buffer_.size() < span)) return PollState::kEnd;

      const size_t stride = geometry_.stride;
      const size_t shift = geometry_.shift;
      const size_t count = 1 + (buffer_.size() - 1) / stride;
      absl::Status error;
      std::vector<T> window;
      window.reserve(count);
      for (size_t i = 0; i < count; ++i) {
        absl::StatusOr<T>& element = buffer_[stride * i];
        if (!element.ok()) {
          error = element.status();
          break;
        }
        // An element the next window takes too is copied; the others are moved.
        window.push_back(stride * i < shift ? std::move(*element) : *element);
      }
      if (shift >= buffer_.size()) {
        skip_left_ = static_cast<int64_t>(shift - buffer_.size());
        buffer_.clear();
      } else {
        buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(shift));
      }
      if (!error.ok()) {
        *out = std::move(error);
      } else {
        *out =
            W(std::make_shared<FromVectorNode<T>>(std::make_shared<const std::vector<T>>(std::move(window))));
      }
      return PollState::kReady;
    }
    Task<void> WaitReady() override {
      return input_ != nullptr ? input_->WaitReady() : Stream<W>::WaitReady();
    }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      if constexpr (!HasElementCodec<T>) {
        return Stream<W>::SaveResult(writer->Unsupported(path, "its elements have no ElementCodec"));
      } else {
        std::vector<absl::StatusOr<T>> buffer(buffer_.begin(), buffer_.end());
        writer->WriteState(path, buffer, input_ == nullptr, skip_left_);
        if (input_ == nullptr) return Stream<W>::SaveResult(absl::OkStatus());
        return input_->Save(std::move(writer), ChildNodePath(path, 0));
      }
    }

   private:
    friend class WindowNode;
    WindowGeometry geometry_;
    std::unique_ptr<Stream<T>> input_;  // null once it ended
    std::deque<absl::StatusOr<T>> buffer_;
    int64_t skip_left_ = 0;
    absl::StatusOr<T> in_;
  };

  NodePtr<T> input_;
  int64_t size_;
  int64_t shift_;
  int64_t stride_;
  bool drop_remainder_;
  int64_t span_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_WINDOW_H_
