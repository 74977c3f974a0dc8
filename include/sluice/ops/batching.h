// Batching rules: what Batch makes of a group of elements (Batched<T>, StackBatch), and what the batch ops
// and the distribution stage need to know about a batched value (BatchTraits<B>).
//
// Contract:
// - Batched<T> (tf.data.Dataset.batch's structure rule: every component stacked):
//   * Tensor -> Tensor: the elements stacked along a new leading dimension into one contiguous, 64-byte
//     aligned buffer ([n, *shape]). Every element must have the first one's dtype and shape.
//   * a number with a DType (bool, uint8_t, int32_t, int64_t, float, double, Half, BFloat16) -> a rank-1
//     Tensor of its dtype, as tf.data batches Python numbers: Range(10).Batch(4) gives int64[4] tensors.
//   * std::tuple<C...> / std::pair<A, B> whose components are all Tensors or such numbers -> the same
//     tuple/pair with every component a stacked Tensor.
//   * ParsedExample -> ParsedExample: fixed features stacked ([n, *shape]); var-len values concatenated
//     with one row length per element (tf.io.parse_example's layout, so a batch of parsed records equals
//     the parse of the batch of records).
//   * anything else (std::string records, vectors, user structs, tuples with such a component) ->
//     std::vector<T>, the elements in order. Dataset::BatchVectors(n) batches any element this way.
// - ops::StackBatch<T>(elements) builds one Batched<T> from n >= 1 elements (n == 0 is InvalidArgument for
//   tensor rules, an empty vector for the vector rule). Errors, as tf.data words them: "Cannot batch tensors
//   with different shapes in component 0. First element had shape [3] and element 2 had shape [4]."
//   (InvalidArgument; dtypes likewise). It is a pure function, so callers may stack batches in parallel.
// - BatchTraits<B> for every batched type above (std::vector<T>, Tensor, tuples/pairs of Tensors,
//   ParsedExample):
//   * Rows(b): the number of elements in the batch (its leading dimension).
//   * Slice(b, start, limit): rows [start, limit) as a batch of the same type; shares storage where the
//     type allows it (Tensor views) and copies otherwise (std::vector). Requires 0 <= start <= limit <=
//     Rows(b); out-of-range arguments return InvalidArgument.
//   * Concat(batches): the rows of every batch in order, as one batch (tensors: one new buffer; a single
//     batch is returned as is). Components must agree in dtype and in every dimension but the first.
//     An empty list is InvalidArgument for tensor types (there is no dtype to give it).
//   * Validate(b): OK when b is a well-formed batch: every tensor component has rank >= 1 and all
//     components have the same number of rows (for ParsedExample also: row lengths sum to the values).
//   `IsBatchable<B>` (Rows and Slice) is what the distribution layer needs; `IsConcatenable<B>` adds
//   Concat for Rebatch.
// - Threading: pure functions of their arguments.
//
//   std::vector<int> rows = {1, 2, 3, 4};
//   std::vector<int> tail = *BatchTraits<std::vector<int>>::Slice(rows, 2, 4);  // {3, 4}
//   absl::StatusOr<Tensor> stacked = ops::StackBatch<Tensor>({Tensor::FromVector<float>({1, 2}),
//                                                             Tensor::FromVector<float>({3, 4})});  // [2,2]
//   absl::StatusOr<std::tuple<Tensor, Tensor>> xy =
//       ops::StackBatch<std::tuple<Tensor, int64_t>>({{image0, 3}, {image1, 7}});  // labels: int64[2]
#ifndef SLUICE_OPS_BATCHING_H_
#define SLUICE_OPS_BATCHING_H_

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/export.h"
#include "sluice/io/example.h"
#include "sluice/io/tensor.h"

namespace sluice {

template <class B>
struct BatchTraits;

namespace detail {
// A plain bool first, so the compiler sees the guard and prunes the copy on the error path (GCC 12 warns
// about out-of-bounds copies it cannot rule out otherwise).
inline bool InSliceRange(int64_t start, int64_t limit, int64_t rows) {
  return start >= 0 && start <= limit && limit <= rows;
}
inline absl::Status SliceRangeError(int64_t start, int64_t limit, int64_t rows) {
  return absl::InvalidArgumentError(
      absl::StrCat("batch slice [", start, ", ", limit, ") is outside a batch of ", rows, " rows"));
}

// Non-template work, in ops/batching.cc. `component` only names the component in messages.
// Stacks same-dtype, same-shape tensors along a new dim 0.
SLUICE_EXPORT absl::StatusOr<Tensor> StackTensors(std::span<const Tensor> elements, size_t component);
// Concatenates rank >= 1 tensors along dim 0 (dtypes and trailing dims must agree).
SLUICE_EXPORT absl::StatusOr<Tensor> ConcatTensors(std::span<const Tensor> batches, size_t component);
// InvalidArgument unless the tensor has rank >= 1 (it can be a batch).
SLUICE_EXPORT absl::Status ValidateTensorBatch(const Tensor& batch, size_t component);
SLUICE_EXPORT absl::StatusOr<ParsedExample> StackParsedExamples(std::span<const ParsedExample> elements);
SLUICE_EXPORT absl::StatusOr<ParsedExample> ConcatParsedExamples(std::span<const ParsedExample> batches);
SLUICE_EXPORT int64_t ParsedExampleRows(const ParsedExample& batch);
SLUICE_EXPORT absl::StatusOr<ParsedExample> SliceParsedExample(const ParsedExample& batch, int64_t start,
                                                               int64_t limit);
SLUICE_EXPORT absl::Status ValidateParsedExampleBatch(const ParsedExample& batch);
// Row `index` of a batch as one record's ParsedExample (fixed features lose dim 0; var row_lengths [1]).
SLUICE_EXPORT absl::StatusOr<ParsedExample> ParsedExampleRow(const ParsedExample& batch, int64_t index);

// A C++ type with a numeric DType (DTypeOf): numbers, Half, BFloat16.
template <class T>
concept DTypeScalar = requires {
  DTypeOf<T>::value;
}
&&(DTypeOf<T>::value != DType::kString);
template <class T>
concept StackableComponent = std::same_as<T, Tensor> || DTypeScalar<T>;

template <class... C>
inline constexpr bool kIsTensorStructure = sizeof...(C) > 0 && (StackableComponent<C> && ...);

// The batched type of each component: always a Tensor.
template <class C>
using TensorOf = Tensor;

template <class T>
struct BatchRule {
  using type = std::vector<T>;
};
template <>
struct BatchRule<Tensor> {
  using type = Tensor;
};
template <DTypeScalar T>
struct BatchRule<T> {
  using type = Tensor;
};
template <class... C>
  requires kIsTensorStructure<C...>
struct BatchRule<std::tuple<C...>> {
  using type = std::tuple<TensorOf<C>...>;
};
template <class A, class B>
  requires kIsTensorStructure<A, B>
struct BatchRule<std::pair<A, B>> {
  using type = std::pair<Tensor, Tensor>;
};
template <>
struct BatchRule<ParsedExample> {
  using type = ParsedExample;
};

template <class T>
struct IsAllTensorTuple : std::false_type {};
template <class... C>
struct IsAllTensorTuple<std::tuple<C...>> : std::bool_constant<sizeof...(C) != 0 && (std::same_as<C, Tensor> && ...)> {};
template <>
struct IsAllTensorTuple<std::pair<Tensor, Tensor>> : std::true_type {};

// The number `get(e)` of every element as one rank-1 tensor of its dtype.
template <class T, class Get>
Tensor GatherScalars(const std::vector<T>& elements, Get get) {
  using C = std::remove_cvref_t<decltype(get(elements[0]))>;
  Tensor out = Tensor::Empty(DTypeOf<C>::value, Shape({static_cast<int64_t>(elements.size())}));
  C* data = out.data<C>();
  for (size_t i = 0; i < elements.size(); ++i) data[i] = get(elements[i]);
  return out;
}

// Component I of every element as a Tensor (scalars gathered into one rank-1 tensor), stacked.
template <size_t I, class T>
absl::StatusOr<Tensor> StackComponent(const std::vector<T>& elements) {
  using C = std::tuple_element_t<I, T>;
  if constexpr (std::same_as<C, Tensor>) {
    std::vector<Tensor> parts;
    parts.reserve(elements.size());
    for (const T& e : elements) parts.push_back(std::get<I>(e));
    return StackTensors(parts, I);
  } else {
    return GatherScalars(elements, [](const T& e) -> const C& { return std::get<I>(e); });
  }
}

}  // namespace detail

// The type Batch(n) makes of n elements of T (see the contract above).
template <class T>
using Batched = typename detail::BatchRule<T>::type;

template <class T>
struct BatchTraits<std::vector<T>> {
  static int64_t Rows(const std::vector<T>& batch) { return static_cast<int64_t>(batch.size()); }
  static absl::StatusOr<std::vector<T>> Slice(const std::vector<T>& batch, int64_t start, int64_t limit) {
    if (!detail::InSliceRange(start, limit, Rows(batch))) return detail::SliceRangeError(start, limit, Rows(batch));
    return std::vector<T>(batch.begin() + start, batch.begin() + limit);
  }
  // Moves the rows out of a batch the caller no longer needs.
  static absl::StatusOr<std::vector<T>> Slice(std::vector<T>&& batch, int64_t start, int64_t limit) {
    if (!detail::InSliceRange(start, limit, Rows(batch))) return detail::SliceRangeError(start, limit, Rows(batch));
    return std::vector<T>(std::make_move_iterator(batch.begin() + start),
                          std::make_move_iterator(batch.begin() + limit));
  }
  static absl::StatusOr<std::vector<T>> Concat(std::vector<std::vector<T>> batches) {
    if (batches.size() == 1) return std::move(batches[0]);
    size_t total = 0;
    for (const std::vector<T>& b : batches) total += b.size();
    std::vector<T> out;
    out.reserve(total);
    for (std::vector<T>& b : batches) {
      for (T& x : b) out.push_back(std::move(x));
    }
    return out;
  }
  static absl::Status Validate(const std::vector<T>&) { return absl::OkStatus(); }
};

template <>
struct BatchTraits<Tensor> {
  // A rank-0 tensor is not a batch: it has no rows.
  static int64_t Rows(const Tensor& batch) { return batch.shape().rank() == 0 ? 0 : batch.shape().dim(0); }
  static absl::StatusOr<Tensor> Slice(const Tensor& batch, int64_t start, int64_t limit) {
    if (!detail::InSliceRange(start, limit, Rows(batch))) return detail::SliceRangeError(start, limit, Rows(batch));
    return batch.Slice(start, limit);
  }
  static absl::StatusOr<Tensor> Concat(std::vector<Tensor> batches) { return detail::ConcatTensors(batches, 0); }
  static absl::Status Validate(const Tensor& batch) { return detail::ValidateTensorBatch(batch, 0); }
};

namespace detail {

// BatchTraits for std::tuple<Tensor...> and std::pair<Tensor, Tensor>: component-wise along dim 0.
template <class B>
struct TensorStructureTraits {
  static constexpr size_t kSize = std::tuple_size_v<B>;

  static int64_t Rows(const B& batch) { return BatchTraits<Tensor>::Rows(std::get<0>(batch)); }

  static absl::StatusOr<B> Slice(const B& batch, int64_t start, int64_t limit) {
    if (!InSliceRange(start, limit, Rows(batch))) return SliceRangeError(start, limit, Rows(batch));
    B out;
    absl::Status status;
    SliceInto(batch, start, limit, &out, &status, std::make_index_sequence<kSize>());
    if (!status.ok()) return status;
    return out;
  }

  static absl::StatusOr<B> Concat(std::vector<B> batches) {
    if (batches.size() == 1) return std::move(batches[0]);
    B out;
    absl::Status status;
    ConcatInto(batches, &out, &status, std::make_index_sequence<kSize>());
    if (!status.ok()) return status;
    return out;
  }

  static absl::Status Validate(const B& batch) {
    absl::Status status;
    ValidateAll(batch, &status, std::make_index_sequence<kSize>());
    return status;
  }

 private:
  template <size_t... I>
  static void SliceInto(const B& batch, int64_t start, int64_t limit, B* out, absl::Status* status,
                        std::index_sequence<I...>) {
    auto one = [&](auto index) {
      constexpr size_t kI = decltype(index)::value;
      if (!status->ok()) return;
      absl::StatusOr<Tensor> part = BatchTraits<Tensor>::Slice(std::get<kI>(batch), start, limit);
      if (!part.ok()) {
        *status = part.status();
        return;
      }
      std::get<kI>(*out) = std::move(*part);
    };
    (one(std::integral_constant<size_t, I>()), ...);
  }

  template <size_t... I>
  static void ConcatInto(const std::vector<B>& batches, B* out, absl::Status* status, std::index_sequence<I...>) {
    auto one = [&](auto index) {
      constexpr size_t kI = decltype(index)::value;
      if (!status->ok()) return;
      std::vector<Tensor> parts;
      parts.reserve(batches.size());
      for (const B& b : batches) parts.push_back(std::get<kI>(b));
      absl::StatusOr<Tensor> joined = ConcatTensors(parts, kI);
      if (!joined.ok()) {
        *status = joined.status();
        return;
      }
      std::get<kI>(*out) = std::move(*joined);
    };
    (one(std::integral_constant<size_t, I>()), ...);
  }

  template <size_t... I>
  static void ValidateAll(const B& batch, absl::Status* status, std::index_sequence<I...>) {
    const int64_t rows = Rows(batch);
    auto one = [&](auto index) {
      constexpr size_t kI = decltype(index)::value;
      if (!status->ok()) return;
      const Tensor& t = std::get<kI>(batch);
      *status = ValidateTensorBatch(t, kI);
      if (status->ok() && t.shape().dim(0) != rows) {
        *status = absl::InvalidArgumentError(
            absl::StrCat("Input element must have the same batch size in each component. Component 0 had size ",
                         rows, " but component ", kI, " had size ", t.shape().dim(0), "."));
      }
    };
    (one(std::integral_constant<size_t, I>()), ...);
  }
};

}  // namespace detail

template <class... C>
  requires(sizeof...(C) > 0 && (std::same_as<C, Tensor> && ...))
struct BatchTraits<std::tuple<C...>> : detail::TensorStructureTraits<std::tuple<C...>> {};

template <>
struct BatchTraits<std::pair<Tensor, Tensor>> : detail::TensorStructureTraits<std::pair<Tensor, Tensor>> {};

// Rows are records: fixed features along dim 0, var-len features by row length.
template <>
struct BatchTraits<ParsedExample> {
  static int64_t Rows(const ParsedExample& batch) { return detail::ParsedExampleRows(batch); }
  static absl::StatusOr<ParsedExample> Slice(const ParsedExample& batch, int64_t start, int64_t limit) {
    return detail::SliceParsedExample(batch, start, limit);
  }
  static absl::StatusOr<ParsedExample> Concat(std::vector<ParsedExample> batches) {
    if (batches.size() == 1) return std::move(batches[0]);
    return detail::ConcatParsedExamples(batches);
  }
  static absl::Status Validate(const ParsedExample& batch) { return detail::ValidateParsedExampleBatch(batch); }
};

template <class B>
concept IsBatchable = requires(const B& b) {
  { BatchTraits<B>::Rows(b) } -> std::convertible_to<int64_t>;
  { BatchTraits<B>::Slice(b, int64_t{0}, int64_t{0}) } -> std::convertible_to<absl::StatusOr<B>>;
};

template <class B>
concept IsConcatenable = IsBatchable<B> && requires(std::vector<B> batches) {
  { BatchTraits<B>::Concat(std::move(batches)) } -> std::convertible_to<absl::StatusOr<B>>;
};

namespace ops {

// One batch of `elements` by the Batched<T> rule. Pure: safe to run for different batches in parallel.
template <class T>
absl::StatusOr<Batched<T>> StackBatch(std::vector<T>&& elements) {
  if constexpr (std::same_as<Batched<T>, std::vector<T>>) {
    return std::move(elements);
  } else if constexpr (std::same_as<T, Tensor>) {
    return detail::StackTensors(elements, 0);
  } else if constexpr (detail::DTypeScalar<T>) {
    if (elements.empty()) return absl::InvalidArgumentError("StackBatch: cannot stack an empty batch");
    return detail::GatherScalars(elements, [](const T& e) -> const T& { return e; });
  } else if constexpr (std::same_as<T, ParsedExample>) {
    return detail::StackParsedExamples(elements);
  } else {
    if (elements.empty()) return absl::InvalidArgumentError("StackBatch: cannot stack an empty batch");
    Batched<T> out;
    absl::Status status;
    auto stack_all = [&]<size_t... I>(std::index_sequence<I...>) {
      auto one = [&](auto index) {
        constexpr size_t kI = decltype(index)::value;
        if (!status.ok()) return;
        absl::StatusOr<Tensor> part = detail::StackComponent<kI>(elements);
        if (!part.ok()) {
          status = part.status();
          return;
        }
        std::get<kI>(out) = std::move(*part);
      };
      (one(std::integral_constant<size_t, I>()), ...);
    };
    stack_all(std::make_index_sequence<std::tuple_size_v<T>>());
    if (!status.ok()) return status;
    return out;
  }
}

}  // namespace ops

}  // namespace sluice

#endif  // SLUICE_OPS_BATCHING_H_
