// PaddedBatch(batch_size, padded_shapes, padding_values, drop_remainder): tf.data.Dataset.padded_batch.
//
// Contract (tf.data's documentation):
// - Input elements: what Batch stacks component-wise (sluice/ops/batching.h): a Tensor, a number, or a
//   std::tuple / std::pair of Tensors and numbers (one padded shape and one padding value per component; a
//   number is a rank-0 tensor, so its padded shape is {}). Elements of a batch may differ in shape, but not
//   in rank or dtype. The result is Batched<T>: a Tensor, or the tuple/pair with every component a Tensor.
// - Elements: batch_size consecutive elements stacked into [n, *padded_shape] per component, each element
//   written at the front of its slot and the rest filled with the padding value. For every dimension d of
//   a component's padded shape: a constant >= 0 pads to exactly that size; -1 (kUnknownDim) pads to the
//   longest element of this batch in d. `padded_shapes` empty = every dimension -1 (tf.data's default:
//   "padded to the maximum size in the batch").
// - padding_values: empty = 0 for numbers, false for bool, "" for strings (tf.data's defaults); otherwise
//   one rank-0 tensor per component, of the component's dtype.
// - Remainder: the last batch holds the remaining elements unless drop_remainder.
// - Errors: bad arguments (batch_size <= 0, a count of padded shapes or padding values that is not the
//   number of components, a dimension < -1, a padding value that is not a scalar) make the dataset one
//   InvalidArgument element. Per batch, an error element naming the op and batch index: an element whose
//   rank differs from its padded shape's (InvalidArgument "All elements in a batch must have the same rank
//   as the padded shape for component 0: expected rank 1 but got element with rank 2"), an element larger
//   than a constant padded dimension (DataLoss "Attempted to pad to a smaller size than the input
//   element.", as tf.data), a dtype that differs from the first element's or from the padding value's
//   (InvalidArgument). An input error element is passed through and the batch's collected elements are
//   dropped, as Batch does. Errors do not end the stream.
// - Cardinality: as Batch (input / batch_size, rounded up unless drop_remainder).
// - Threading/cancellation: synchronous; polls its input inline.
// - Checkpoints (docs/checkpoint.md): saves and restores exactly, as Batch: the partial batch and the
//   input's state.
//
//   // Sequences [1], [2 2], [3 3 3], [4 4 4 4] -> [[1 0] [2 2]], [[3 3 3 0] [4 4 4 4]]
//   Dataset<Tensor> padded = sequences.PaddedBatch(2);
//   Dataset<Tensor> fixed = sequences.PaddedBatch(2, {{5}}, {Tensor::Scalar<int64_t>(-1)});  // [2,5], pad -1
#ifndef SLUICE_OPS_PADDED_BATCH_H_
#define SLUICE_OPS_PADDED_BATCH_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/export.h"
#include "sluice/ops/batching.h"
#include "sluice/ops/cardinality.h"
#include "sluice/ops/element_codec.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/batch.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/user_function.h"
#include "sluice/io/tensor.h"

namespace sluice::ops {

// One component's padded shape: a size per dimension, kUnknownDim to pad to the batch's longest.
using PaddedShape = std::vector<int64_t>;
inline constexpr int64_t kUnknownDim = -1;

// Element types PaddedBatch accepts: those Batch stacks into a Tensor or a tuple/pair of Tensors.
template <class T>
concept IsPaddable = std::same_as<T, Tensor> || sluice::detail::DTypeScalar<T> ||
                     sluice::detail::IsAllTensorTuple<Batched<T>>::value;

template <class T>
constexpr size_t NumComponents() {
  if constexpr (std::same_as<T, Tensor> || sluice::detail::DTypeScalar<T>) {
    return 1;
  } else {
    return std::tuple_size_v<T>;
  }
}

namespace detail_padded {
// A component of an element as a tensor: numbers become rank-0 tensors.
template <class C>
Tensor AsTensor(const C& component) {
  if constexpr (std::same_as<C, Tensor>) {
    return component;
  } else {
    return Tensor::Scalar<C>(component);
  }
}
// A component's rank: a number's is 0.
template <class C>
int64_t RankOf(const C& component) {
  if constexpr (std::same_as<C, Tensor>) {
    return component.shape().rank();
  } else {
    return 0;
  }
}
}  // namespace detail_padded

namespace detail_padded {

// Stacks `elements` (one component of a batch) into [n, *padded], padding with `padding_value` (nullptr:
// zero / false / ""). `padded_shape` nullptr: every dimension kUnknownDim. In ops/padded_batch.cc.
SLUICE_EXPORT absl::StatusOr<Tensor> PadAndStack(std::span<const Tensor> elements, const PaddedShape* padded_shape,
                                                 const Tensor* padding_value, size_t component);

// Validates a PaddedBatch configuration for `components` components; the message names `op`.
SLUICE_EXPORT absl::Status CheckPaddingArguments(std::string_view op, size_t components,
                                                 const std::vector<PaddedShape>& padded_shapes,
                                                 const std::vector<Tensor>& padding_values);

// "[[-1], [5, -1]]" and "[int64 -1, string \"\"]" for params().
SLUICE_EXPORT std::string PaddedShapesString(const std::vector<PaddedShape>& shapes);
SLUICE_EXPORT std::string PaddingValuesString(const std::vector<Tensor>& values);

}  // namespace detail_padded

// The params that carry padded shapes and padding values losslessly (sluice/ops/graph.h), and back.
inline EncodedParam PaddedShapesParam(const std::vector<PaddedShape>& shapes) {
  EncodedParam param;
  EncodeElement(shapes, &param.bytes);
  param.display = detail_padded::PaddedShapesString(shapes);
  return param;
}
inline EncodedParam PaddingValuesParam(const std::vector<Tensor>& values) {
  EncodedParam param;
  EncodeElement(values, &param.bytes);
  param.display = detail_padded::PaddingValuesString(values);
  return param;
}
inline absl::StatusOr<std::vector<PaddedShape>> DecodePaddedShapes(std::string_view bytes) {
  std::vector<PaddedShape> shapes;
  if (absl::Status s = DecodeElement(bytes, &shapes); !s.ok()) return s;
  return shapes;
}
inline absl::StatusOr<std::vector<Tensor>> DecodePaddingValues(std::string_view bytes) {
  std::vector<Tensor> values;
  if (absl::Status s = DecodeElement(bytes, &values); !s.ok()) return s;
  return values;
}

namespace detail_padded {

}  // namespace detail_padded

// One padded batch of `elements` (n >= 1). `padded_shapes` / `padding_values`: empty or one per
// component, as PaddedBatch takes them. Pure; safe to call from several threads.
template <class T>
  requires IsPaddable<T>
absl::StatusOr<Batched<T>> PadBatch(std::vector<T>&& elements,
                                    const std::vector<PaddedShape>& padded_shapes,
                                    const std::vector<Tensor>& padding_values) {
  if (elements.empty()) return absl::InvalidArgumentError("PaddedBatch: cannot pad an empty batch");
  auto shape_of = [&](size_t c) { return padded_shapes.empty() ? nullptr : &padded_shapes[c]; };
  auto value_of = [&](size_t c) { return padding_values.empty() ? nullptr : &padding_values[c]; };
  if constexpr (std::same_as<T, Tensor>) {
    return detail_padded::PadAndStack(elements, shape_of(0), value_of(0), 0);
  } else if constexpr (sluice::detail::DTypeScalar<T>) {
    std::vector<Tensor> parts;
    parts.reserve(elements.size());
    for (const T& e : elements) parts.push_back(Tensor::Scalar<T>(e));
    return detail_padded::PadAndStack(parts, shape_of(0), value_of(0), 0);
  } else {
    Batched<T> out;
    absl::Status status;
    auto pad_all = [&]<size_t... I>(std::index_sequence<I...>) {
      auto one = [&](auto index) {
        constexpr size_t kI = decltype(index)::value;
        if (!status.ok()) return;
        std::vector<Tensor> parts;
        parts.reserve(elements.size());
        for (const T& e : elements) parts.push_back(detail_padded::AsTensor(std::get<kI>(e)));
        absl::StatusOr<Tensor> padded = detail_padded::PadAndStack(parts, shape_of(kI), value_of(kI), kI);
        if (!padded.ok()) {
          status = padded.status();
          return;
        }
        std::get<kI>(out) = std::move(*padded);
      };
      (one(std::integral_constant<size_t, I>()), ...);
    };
    pad_all(std::make_index_sequence<NumComponents<T>()>());
    if (!status.ok()) return status;
    return out;
  }
}

template <class T>
  requires IsPaddable<T>
class PaddedBatchNode final : public Node<Batched<T>> {
 public:
  using B = Batched<T>;
  PaddedBatchNode(NodePtr<T> input, int64_t batch_size, std::vector<PaddedShape> padded_shapes,
                  std::vector<Tensor> padding_values, bool drop_remainder)
      : input_(std::move(input)),
        batch_size_(batch_size),
        padded_shapes_(std::make_shared<const std::vector<PaddedShape>>(std::move(padded_shapes))),
        padding_values_(std::make_shared<const std::vector<Tensor>>(std::move(padding_values))),
        drop_remainder_(drop_remainder) {}
  std::string_view op_name() const override { return "PaddedBatch"; }
  DatasetSpec element_spec() const override {
    return PaddedSpec(BatchedSpec(input_->element_spec(), drop_remainder_ ? batch_size_ : -1));
  }
  std::vector<Param> params() const override {
    return {{"batch_size", batch_size_},
            {"padded_shapes", PaddedShapesParam(*padded_shapes_)},
            {"padding_values", PaddingValuesParam(*padding_values_)},
            {"drop_remainder", drop_remainder_}};
  }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override {
    return BatchCardinality(input_->cardinality(), batch_size_, drop_remainder_);
  }
  std::unique_ptr<Stream<B>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<PaddedBatchStream>(input_->MakeStream(std::move(context)), this);
  }
  // State: batch index, the partial batch, input ended; the input at /0 unless it ended (as Batch).
  absl::StatusOr<std::unique_ptr<Stream<B>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    if constexpr (!HasElementCodec<T>) {
      return reader.Unsupported(path);
    } else {
      int64_t index = 0;
      std::vector<T> elements;
      bool ended = false;
      if (absl::Status s = reader.ReadState(path, &index, &elements, &ended); !s.ok()) return s;
      if (index < 0 || static_cast<int64_t>(elements.size()) >= batch_size_) {
        return reader.Corrupt(
            path, absl::DataLossError(absl::StrCat(elements.size(), " elements in a partial batch")));
      }
      std::unique_ptr<Stream<T>> input;
      if (!ended) {
        auto restored = input_->RestoreStream(std::move(context), reader, ChildNodePath(path, 0));
        if (!restored.ok()) return restored.status();
        input = std::move(*restored);
      }
      auto stream = std::make_unique<PaddedBatchStream>(std::move(input), this);
      stream->index_ = index;
      stream->elements_ = std::move(elements);
      stream->ended_ = ended;
      return stream;
    }
  }

 private:
  class PaddedBatchStream final : public Stream<B> {
   public:
    // The node outlives its streams only through the dataset, so the stream keeps the shared settings.
    PaddedBatchStream(std::unique_ptr<Stream<T>> input, const PaddedBatchNode* node)
        : input_(std::move(input)),
          batch_size_(node->batch_size_),
          drop_remainder_(node->drop_remainder_),
          padded_shapes_(node->padded_shapes_),
          padding_values_(node->padding_values_) {}
    PollState Poll(absl::StatusOr<B>* out) override {
      if (ended_) return PollState::kEnd;
      while (static_cast<int64_t>(elements_.size()) < batch_size_) {
        PollState state = input_->Poll(&in_);
        if (state == PollState::kPending) return state;
        if (state == PollState::kEnd) {
          ended_ = true;
          if (elements_.empty() || drop_remainder_) return PollState::kEnd;
          break;
        }
        if (!in_.ok()) {
          elements_.clear();
          *out = std::move(in_).status();
          ++index_;
          return PollState::kReady;
        }
        elements_.push_back(std::move(*in_));
      }
      absl::StatusOr<B> batch = PadBatch<T>(std::move(elements_), *padded_shapes_, *padding_values_);
      elements_ = std::vector<T>();
      if (batch.ok()) {
        *out = std::move(batch);
      } else {
        *out = AnnotateError(batch.status(), "PaddedBatch", index_);
      }
      ++index_;
      return PollState::kReady;
    }
    Task<void> WaitReady() override { return input_ ? input_->WaitReady() : Stream<B>::WaitReady(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      if constexpr (!HasElementCodec<T>) {
        return Stream<B>::SaveResult(writer->Unsupported(path, "its elements have no ElementCodec"));
      } else {
        writer->WriteState(path, index_, elements_, ended_);
        if (ended_) return Stream<B>::SaveResult(absl::OkStatus());
        return input_->Save(std::move(writer), ChildNodePath(path, 0));
      }
    }

   private:
    std::unique_ptr<Stream<T>> input_;  // null in a stream restored after its input ended
    int64_t batch_size_;
    bool drop_remainder_;
    std::shared_ptr<const std::vector<PaddedShape>> padded_shapes_;
    std::shared_ptr<const std::vector<Tensor>> padding_values_;

   public:  // set by RestoreStream
    bool ended_ = false;
    int64_t index_ = 0;
    std::vector<T> elements_;

   private:
    absl::StatusOr<T> in_;
  };

  NodePtr<T> input_;
  int64_t batch_size_;
  std::shared_ptr<const std::vector<PaddedShape>> padded_shapes_;
  std::shared_ptr<const std::vector<Tensor>> padding_values_;
  bool drop_remainder_;
};

// Dataset::PaddedBatch's node, or an error source for invalid arguments.
template <class T>
  requires IsPaddable<T>
NodePtr<Batched<T>> MakePaddedBatch(NodePtr<T> input, int64_t batch_size,
                                    std::vector<PaddedShape> padded_shapes, std::vector<Tensor> padding_values,
                                    bool drop_remainder) {
  if (batch_size <= 0) {
    return MakeErrorSource<Batched<T>>(
        "PaddedBatch",
        absl::InvalidArgumentError(absl::StrCat("PaddedBatch: batch_size must be > 0, got ", batch_size)));
  }
  absl::Status valid =
      detail_padded::CheckPaddingArguments("PaddedBatch", NumComponents<T>(), padded_shapes, padding_values);
  if (!valid.ok()) return MakeErrorSource<Batched<T>>("PaddedBatch", valid);
  return std::make_shared<PaddedBatchNode<T>>(std::move(input), batch_size, std::move(padded_shapes),
                                              std::move(padding_values), drop_remainder);
}

}  // namespace sluice::ops

#endif  // SLUICE_OPS_PADDED_BATCH_H_
