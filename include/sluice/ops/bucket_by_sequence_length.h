// BucketBySequenceLength(element_length_func, bucket_boundaries, bucket_batch_sizes, padded_shapes,
// padding_values, pad_to_bucket_boundary, no_padding, drop_remainder):
// tf.data.Dataset.bucket_by_sequence_length (tf.data.experimental.bucket_by_sequence_length).
//
// Contract (tf.data's documentation and its group_by_window implementation):
// - Buckets: with boundaries b_0 < ... < b_{k-1} there are k + 1 buckets; an element of length L (from
//   element_length_func) goes to the first bucket i with lo_i <= L < hi_i, where lo = [INT32_MIN, b_0, ...,
//   b_{k-1}] and hi = [b_0, ..., b_{k-1}, INT32_MAX]. bucket_batch_sizes[i] is bucket i's batch size.
// - Elements: when a bucket holds its batch size of elements it is emitted as one batch (so batches come
//   out in the order buckets fill, and elements keep their input order inside a batch). When the input
//   ends, the partial buckets are flushed in ascending bucket order, each as one shorter batch, unless
//   drop_remainder (then they are dropped).
// - Batching: no_padding = a plain Batch of the bucket (Batched<T>; the elements must then stack).
//   Otherwise a PaddedBatch (T must be a Tensor or a tuple/pair of Tensors) with `padded_shapes` (empty:
//   every dimension -1, padded to the longest in the batch) and `padding_values` (empty: 0 / false / "").
//   pad_to_bucket_boundary: the -1 dimensions are padded to bucket_boundaries[i] - 1 instead (when
//   padded_shapes is empty: the first dimension of every component, the sequence dimension); an element
//   of the last bucket (L >= b_{k-1}) is then an error, as in tf.data.
// - Errors: len(bucket_batch_sizes) != len(bucket_boundaries) + 1, a batch size <= 0, padding arguments
//   that do not fit the element type (see PaddedBatch), or padding asked for non-tensor elements make the
//   dataset one InvalidArgument element. Per element: element_length_func failing or throwing (error
//   element "BucketBySequenceLength (element i): ..."), a length outside every bucket, an element of the
//   last bucket with pad_to_bucket_boundary ("When pad_to_bucket_boundary=True, elements must have length
//   < bucket_boundaries[-1]."); the element is dropped and the error yielded. A batch that cannot be
//   stacked or padded is one error element. Input error elements pass through. Errors do not end the
//   stream.
// - Cardinality: unknown (as tf.data's group_by_window).
// - Threading/cancellation: synchronous; polls its input inline; element_length_func runs on the
//   consumer's thread.
// - Checkpoints (docs/checkpoint.md): saves and restores exactly: every bucket's elements, the flush
//   position and the input's state. element_length_func must keep no state of its own.
//
//   // Sequences of lengths 1..9 into buckets [0,3) [3,6) [6,inf) with batch sizes 2, 2, 3.
//   auto batches = sequences.BucketBySequenceLength([](const Tensor& t) { return t.shape().dim(0); },
//                                                   {3, 6}, {2, 2, 3});
#ifndef SLUICE_OPS_BUCKET_BY_SEQUENCE_LENGTH_H_
#define SLUICE_OPS_BUCKET_BY_SEQUENCE_LENGTH_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sluice/ops/batching.h"
#include "sluice/ops/cardinality.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/padded_batch.h"
#include "sluice/ops/user_function.h"

namespace sluice::ops {

struct BucketOptions {
  std::vector<int64_t> bucket_boundaries;
  std::vector<int64_t> bucket_batch_sizes;
  std::vector<PaddedShape> padded_shapes;
  std::vector<Tensor> padding_values;
  bool pad_to_bucket_boundary = false;
  bool no_padding = false;
  bool drop_remainder = false;
};

namespace detail_bucket {

// tf's bucket rule; -1 when no bucket holds `length`.
inline int64_t BucketFor(int64_t length, const std::vector<int64_t>& boundaries) {
  const size_t k = boundaries.size();
  for (size_t i = 0; i <= k; ++i) {
    const int64_t lo = i == 0 ? std::numeric_limits<int32_t>::min() : boundaries[i - 1];
    const int64_t hi = i == k ? std::numeric_limits<int32_t>::max() : boundaries[i];
    if (lo <= length && length < hi) return static_cast<int64_t>(i);
  }
  return -1;
}

}  // namespace detail_bucket

template <class T, class F>
class BucketBySequenceLengthNode final : public Node<Batched<T>> {
 public:
  using B = Batched<T>;
  BucketBySequenceLengthNode(NodePtr<T> input, F f, FunctionParam function, BucketOptions options)
      : input_(std::move(input)),
        f_(std::move(f)),
        function_(std::move(function)),
        options_(std::make_shared<const BucketOptions>(std::move(options))) {}
  std::string_view op_name() const override { return "BucketBySequenceLength"; }
  std::vector<Param> params() const override {
    return {{"element_length_func", function_},
            {"bucket_boundaries", options_->bucket_boundaries},
            {"bucket_batch_sizes", options_->bucket_batch_sizes},
            {"padded_shapes", PaddedShapesParam(options_->padded_shapes)},
            {"padding_values", PaddingValuesParam(options_->padding_values)},
            {"pad_to_bucket_boundary", options_->pad_to_bucket_boundary},
            {"no_padding", options_->no_padding},
            {"drop_remainder", options_->drop_remainder}};
  }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override { return kUnknownCardinality; }
  std::unique_ptr<Stream<B>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<BucketStream>(input_->MakeStream(std::move(context)), f_, options_);
  }
  // State: element index, batch index, input ended, next bucket to flush, each bucket's elements; the
  // input at /0 unless it ended.
  absl::StatusOr<std::unique_ptr<Stream<B>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    if constexpr (!HasElementCodec<T>) {
      return reader.Unsupported(path);
    } else {
      int64_t element_index = 0;
      int64_t batch_index = 0;
      bool ended = false;
      uint64_t flush = 0;
      std::vector<std::vector<T>> buckets;
      if (absl::Status s = reader.ReadState(path, &element_index, &batch_index, &ended, &flush, &buckets);
          !s.ok()) {
        return s;
      }
      const std::vector<int64_t>& sizes = options_->bucket_batch_sizes;
      bool consistent = buckets.size() == sizes.size() && flush <= sizes.size() && element_index >= 0 &&
                        batch_index >= 0 && (ended || flush == 0);
      for (size_t i = 0; consistent && i < buckets.size(); ++i) {
        consistent = static_cast<int64_t>(buckets[i].size()) < sizes[i];
      }
      if (!consistent) {
        return reader.Corrupt(path, absl::DataLossError(absl::StrCat(buckets.size(), " buckets, flush at ",
                                                                     flush, " of ", sizes.size())));
      }
      std::unique_ptr<Stream<T>> input;
      if (!ended) {
        auto restored = input_->RestoreStream(std::move(context), reader, ChildNodePath(path, 0));
        if (!restored.ok()) return restored.status();
        input = std::move(*restored);
      }
      auto stream = std::make_unique<BucketStream>(std::move(input), f_, options_);
      stream->element_index_ = element_index;
      stream->batch_index_ = batch_index;
      stream->ended_ = ended;
      stream->flush_ = static_cast<size_t>(flush);
      stream->buckets_ = std::move(buckets);
      return stream;
    }
  }

 private:
  class BucketStream final : public Stream<B> {
   public:
    BucketStream(std::unique_ptr<Stream<T>> input, F f, std::shared_ptr<const BucketOptions> options)
        : input_(std::move(input)), f_(std::move(f)), options_(std::move(options)),
          buckets_(options_->bucket_batch_sizes.size()) {}

    PollState Poll(absl::StatusOr<B>* out) override {
      while (!ended_) {
        PollState state = input_->Poll(&in_);
        if (state == PollState::kPending) return state;
        if (state == PollState::kEnd) {
          ended_ = true;
          break;
        }
        if (!in_.ok()) {
          *out = std::move(in_).status();
          ++element_index_;
          return PollState::kReady;
        }
        const int64_t index = element_index_++;
        absl::StatusOr<int64_t> length = LengthOf(index, *in_);
        if (!length.ok()) {
          *out = length.status();
          return PollState::kReady;
        }
        const int64_t bucket = detail_bucket::BucketFor(*length, options_->bucket_boundaries);
        if (bucket < 0) {
          *out = AnnotateError(absl::InvalidArgumentError(absl::StrCat(
                                   "element length ", *length, " is outside every bucket [",
                                   std::numeric_limits<int32_t>::min(), ", ",
                                   std::numeric_limits<int32_t>::max(), ")")),
                               "BucketBySequenceLength", index);
          return PollState::kReady;
        }
        if (options_->pad_to_bucket_boundary && !options_->no_padding &&
            bucket == static_cast<int64_t>(options_->bucket_boundaries.size())) {
          *out = AnnotateError(
              absl::InvalidArgumentError(absl::StrCat(
                  "When pad_to_bucket_boundary=True, elements must have length < bucket_boundaries[-1]. Got "
                  "length ",
                  *length, " with bucket_boundaries [", absl::StrJoin(options_->bucket_boundaries, ", "), "].")),
              "BucketBySequenceLength", index);
          return PollState::kReady;
        }
        std::vector<T>& group = buckets_[static_cast<size_t>(bucket)];
        group.push_back(std::move(*in_));
        if (static_cast<int64_t>(group.size()) == options_->bucket_batch_sizes[static_cast<size_t>(bucket)]) {
          *out = Emit(static_cast<size_t>(bucket));
          return PollState::kReady;
        }
      }
      // The input is over: flush partial buckets in ascending order, as group_by_window does.
      if (options_->drop_remainder) return PollState::kEnd;
      while (flush_ < buckets_.size()) {
        const size_t bucket = flush_++;
        if (!buckets_[bucket].empty()) {
          *out = Emit(bucket);
          return PollState::kReady;
        }
      }
      return PollState::kEnd;
    }
    Task<void> WaitReady() override { return input_ ? input_->WaitReady() : Stream<B>::WaitReady(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      if constexpr (!HasElementCodec<T>) {
        return Stream<B>::SaveResult(writer->Unsupported(path, "its elements have no ElementCodec"));
      } else {
        writer->WriteState(path, element_index_, batch_index_, ended_, static_cast<uint64_t>(flush_),
                           buckets_);
        if (ended_) return Stream<B>::SaveResult(absl::OkStatus());
        return input_->Save(std::move(writer), ChildNodePath(path, 0));
      }
    }

   private:
    absl::StatusOr<int64_t> LengthOf(int64_t index, const T& element) {
      auto length = InvokeUserFunction("BucketBySequenceLength", index, f_, element);
      if (!length.ok()) return length.status();
      return static_cast<int64_t>(*length);
    }

    absl::StatusOr<B> Emit(size_t bucket) {
      std::vector<T> group = std::move(buckets_[bucket]);
      buckets_[bucket] = std::vector<T>();
      const int64_t batch = batch_index_++;
      absl::StatusOr<B> result = Stack(bucket, std::move(group));
      if (!result.ok()) {
        return absl::Status(result.status().code(),
                            absl::StrCat("BucketBySequenceLength (batch ", batch, ", bucket ", bucket,
                                         "): ", result.status().message()));
      }
      return result;
    }

    absl::StatusOr<B> Stack(size_t bucket, std::vector<T>&& group) {
      if (options_->no_padding) return StackBatch<T>(std::move(group));
      if constexpr (IsPaddable<T>) {
        if (!options_->pad_to_bucket_boundary) {
          return PadBatch<T>(std::move(group), options_->padded_shapes, options_->padding_values);
        }
        // -1 dimensions become the bucket's boundary - 1 (tf's none_filler).
        const int64_t filler = options_->bucket_boundaries[bucket] - 1;
        std::vector<PaddedShape> shapes = options_->padded_shapes;
        if (shapes.empty()) {
          shapes.resize(NumComponents<T>());
          FirstDims(group.front(), &shapes);
          for (PaddedShape& s : shapes) {
            if (!s.empty()) s[0] = filler;
          }
        } else {
          for (PaddedShape& s : shapes) {
            for (int64_t& d : s) {
              if (d == kUnknownDim) d = filler;
            }
          }
        }
        return PadBatch<T>(std::move(group), shapes, options_->padding_values);
      } else {
        return absl::InvalidArgumentError("padding needs Tensor elements");  // rejected at construction
      }
    }

    // Shapes of -1 with each component's rank (the first element's), for pad_to_bucket_boundary.
    static void FirstDims(const T& element, std::vector<PaddedShape>* shapes) {
      if constexpr (std::same_as<T, Tensor> || sluice::detail::DTypeScalar<T>) {
        (*shapes)[0].assign(detail_padded::RankOf(element), kUnknownDim);
      } else if constexpr (IsPaddable<T>) {
        size_t c = 0;
        std::apply(
            [&](const auto&... parts) {
              ((*shapes)[c++].assign(detail_padded::RankOf(parts), kUnknownDim), ...);
            },
            element);
      }
    }

    std::unique_ptr<Stream<T>> input_;  // null in a stream restored after its input ended
    F f_;
    std::shared_ptr<const BucketOptions> options_;
    absl::StatusOr<T> in_;

   public:  // set by RestoreStream; declared after options_, which buckets_ is sized from
    std::vector<std::vector<T>> buckets_;
    bool ended_ = false;
    size_t flush_ = 0;  // next bucket to flush once the input is over
    int64_t element_index_ = 0;
    int64_t batch_index_ = 0;
  };

  NodePtr<T> input_;
  F f_;
  FunctionParam function_;
  std::shared_ptr<const BucketOptions> options_;
};

// Dataset::BucketBySequenceLength's node, or an error source for invalid arguments.
template <class T, class F>
NodePtr<Batched<T>> MakeBucketBySequenceLength(NodePtr<T> input, F f, FunctionParam function, BucketOptions options) {
  using B = Batched<T>;
  auto fail = [](std::string message) {
    return MakeErrorSource<B>("BucketBySequenceLength", absl::InvalidArgumentError(std::move(message)));
  };
  if (options.bucket_batch_sizes.size() != options.bucket_boundaries.size() + 1) {
    return fail(absl::StrCat("BucketBySequenceLength: len(bucket_batch_sizes) must equal len(bucket_boundaries) + 1 "
                             "but len(bucket_batch_sizes)=",
                             options.bucket_batch_sizes.size(),
                             " and len(bucket_boundaries)=", options.bucket_boundaries.size(), "."));
  }
  for (int64_t size : options.bucket_batch_sizes) {
    if (size <= 0) {
      return fail(absl::StrCat("BucketBySequenceLength: window size must be greater than zero, but got ", size,
                               " in bucket_batch_sizes [", absl::StrJoin(options.bucket_batch_sizes, ", "), "]"));
    }
  }
  if (!options.no_padding) {
    if constexpr (IsPaddable<T>) {
      absl::Status valid = detail_padded::CheckPaddingArguments("BucketBySequenceLength", NumComponents<T>(),
                                                                options.padded_shapes, options.padding_values);
      if (!valid.ok()) return MakeErrorSource<B>("BucketBySequenceLength", valid);
    } else {
      return fail("BucketBySequenceLength: padding needs Tensor (or tuple of Tensor) elements; pass "
                  "no_padding=true to batch other element types");
    }
  }
  return std::make_shared<BucketBySequenceLengthNode<T, F>>(std::move(input), std::move(f), std::move(function),
                                                            std::move(options));
}

}  // namespace sluice::ops

#endif  // SLUICE_OPS_BUCKET_BY_SEQUENCE_LENGTH_H_
