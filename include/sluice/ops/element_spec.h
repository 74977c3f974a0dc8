// DatasetSpec: a dataset's element_spec (tf.data's): the dtype and static shape of each component of its
// elements, known from the graph without reading any data.
//
// Contract:
// - Components: a number or string is one scalar component; a Tensor one component; a pair or tuple its
//   members' components in order; a ParsedExample one per feature (fixed features first, var-len ones
//   after, each named by its key); a std::vector<X> (a batch of X that does not stack) X's components
//   with a leading batch dimension; a window (Dataset<X>) one component of kind kDataset.
// - Unknowns: a dtype the graph cannot tell (a Tensor made by a C++ function) is nullopt; a shape of
//   unknown rank is nullopt; a dimension that varies or is not known is -1 (tf.data's None). A batch
//   dimension is the batch size only when no partial batch can exist (drop_remainder).
// - Ops refine what the type alone says: sources of Tensors know their values' dtypes and shapes,
//   ParseExample knows its spec, Batch / PaddedBatch / Rebatch / Unbatch add or remove the batch
//   dimension, Zip and Enumerate combine, ops that pass elements through keep their input's spec, and
//   Concatenate / SampleFromDatasets / ChooseFromDatasets keep what their inputs agree on. A C++ function
//   (Map, Interleave, Scan) gives what its result type says.
//
//   Range(10).Batch(4, true).element_spec().DebugString()   // "(int64[4])"
//   TFRecord(files).ParseExample(spec).Batch(32).element_spec()  // label int64[-1], image string[-1]
#ifndef SLUICE_OPS_ELEMENT_SPEC_H_
#define SLUICE_OPS_ELEMENT_SPEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sluice/export.h"
#include "sluice/io/example.h"
#include "sluice/io/tensor.h"

namespace sluice {

template <class T>
class Dataset;

struct ComponentSpec {
  enum class Kind {
    kTensor,   // a dense value of `dtype` and `shape`
    kRagged,   // a var-len feature: `shape` is the values' ([-1], or [batch, -1] once batched)
    kDataset,  // a window: a dataset, no dtype or shape
    kOther,    // a C++ value of no tensor type
  };
  Kind kind = Kind::kTensor;
  std::string name;                           // a feature key, else ""
  std::optional<DType> dtype;                 // nullopt: not known statically
  std::optional<std::vector<int64_t>> shape;  // nullopt: unknown rank; -1: unknown dimension
  friend bool operator==(const ComponentSpec&, const ComponentSpec&) = default;
};

struct DatasetSpec {
  std::vector<ComponentSpec> components;
  // Whether `components` lists every component (false for a ParsedExample whose spec is not known).
  bool complete = true;
  friend bool operator==(const DatasetSpec&, const DatasetSpec&) = default;
  // "(label: int64[-1], image: float32[-1,784])"; "?" for an unknown dtype or shape, "..." when incomplete.
  SLUICE_EXPORT std::string DebugString() const;
};

namespace element_spec_detail {

template <class T>
struct Static {
  static DatasetSpec Get() {
    if constexpr (requires { DTypeOf<T>::value; }) {
      return {{ComponentSpec{ComponentSpec::Kind::kTensor, "", DTypeOf<T>::value, std::vector<int64_t>{}}}};
    } else {
      return {{ComponentSpec{ComponentSpec::Kind::kOther, "", std::nullopt, std::nullopt}}};
    }
  }
};
template <>
struct Static<Tensor> {
  static DatasetSpec Get() { return {{ComponentSpec{}}}; }
};
template <>
struct Static<ParsedExample> {
  static DatasetSpec Get() { return {{}, /*complete=*/false}; }
};
template <class A, class B>
struct Static<std::pair<A, B>> {
  static DatasetSpec Get();
};
template <class... Ts>
struct Static<std::tuple<Ts...>> {
  static DatasetSpec Get();
};
template <class X>
struct Static<std::vector<X>> {
  static DatasetSpec Get();
};
template <class X>
struct Static<Dataset<X>> {
  static DatasetSpec Get() {
    return {{ComponentSpec{ComponentSpec::Kind::kDataset, "", std::nullopt, std::nullopt}}};
  }
};

SLUICE_EXPORT DatasetSpec Join(std::vector<DatasetSpec> parts);

template <class A, class B>
DatasetSpec Static<std::pair<A, B>>::Get() {
  return Join({Static<A>::Get(), Static<B>::Get()});
}
template <class... Ts>
DatasetSpec Static<std::tuple<Ts...>>::Get() {
  return Join({Static<Ts>::Get()...});
}

}  // namespace element_spec_detail

// What the element type alone says.
template <class T>
DatasetSpec StaticElementSpec() {
  return element_spec_detail::Static<T>::Get();
}

// The spec of one value of a tensor structure (its dtypes and shapes); other values as their type says.
template <class T>
DatasetSpec SpecOf(const T&) {
  return StaticElementSpec<T>();
}

// Each component with `batch` prepended to its shape (-1: unknown).
SLUICE_EXPORT DatasetSpec BatchedSpec(DatasetSpec spec, int64_t batch);
// Each component without its first dimension (an unknown rank stays unknown).
SLUICE_EXPORT DatasetSpec UnbatchedSpec(DatasetSpec spec);
// What two specs agree on: dimensions that differ become -1, ranks or dtypes that differ unknown.
SLUICE_EXPORT DatasetSpec MergedSpec(const DatasetSpec& a, const DatasetSpec& b);
SLUICE_EXPORT DatasetSpec SpecOf(const Tensor& value);
SLUICE_EXPORT DatasetSpec SpecOf(const ParsedExample& value);
template <class A, class B>
DatasetSpec SpecOf(const std::pair<A, B>& value) {
  return element_spec_detail::Join({SpecOf(value.first), SpecOf(value.second)});
}
template <class... Ts>
DatasetSpec SpecOf(const std::tuple<Ts...>& value) {
  return std::apply([](const auto&... parts) { return element_spec_detail::Join({SpecOf(parts)...}); },
                    value);
}
// A ParseSpec's features: fixed ones dense with the spec's shapes, var-len ones ragged [-1].
SLUICE_EXPORT DatasetSpec SpecOf(const ParseSpec& spec);

// After PaddedBatch: every dimension but the batch one padded to a size the graph does not state (-1).
SLUICE_EXPORT DatasetSpec PaddedSpec(DatasetSpec batched);

// What every value agrees on, for tensor structures; other types as their type says.
template <class T>
DatasetSpec MergedSpecOfValues(const std::vector<T>& values) {
  constexpr bool kHasTensors = std::is_same_v<T, Tensor> || std::is_same_v<T, ParsedExample> || requires {
    typename std::tuple_size<T>::type;
  };
  if constexpr (!kHasTensors) {
    return StaticElementSpec<T>();
  } else {
    if (values.empty()) return StaticElementSpec<T>();
    DatasetSpec spec = SpecOf(values[0]);
    for (size_t i = 1; i < values.size(); ++i) spec = MergedSpec(spec, SpecOf(values[i]));
    return spec;
  }
}

namespace element_spec_detail {
template <class X>
DatasetSpec Static<std::vector<X>>::Get() {
  return BatchedSpec(Static<X>::Get(), -1);
}
}  // namespace element_spec_detail

}  // namespace sluice

#endif  // SLUICE_OPS_ELEMENT_SPEC_H_
