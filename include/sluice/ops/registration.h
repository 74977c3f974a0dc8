// Registration: what makes a pipeline rebuildable from its graph in this process (sluice/ops/graph.h).
//
//   SLUICE_REGISTER_ELEMENT_TYPE(my::Point);         // name + codec + the standard ops over my::Point
//   SLUICE_REGISTER_FUNCTION(kNormalize, factory);   // a function usable by Map/Filter/Interleave/...
//   SLUICE_REGISTER_DATASET(kMyRows, factory);        // a leaf for what params cannot describe
//
// Each is one line at namespace scope in a .cc linked into every program that builds or rebuilds the
// pipeline (the client and the data-service worker). A .cc in a static library that nothing references is
// dropped by the linker, and its registrations with it.
//
// - SLUICE_REGISTER_ELEMENT_TYPE(T): the type record (sluice/ops/element_type_registry.h) and op builders
//   for the ops generic in T: Take, Skip, Repeat, Shuffle, Prefetch, Shard, AutoShard, Cache (files only with
//   a codec), Concatenate, IgnoreErrors, Enumerate, Batch, BatchVectors, Unbatch, PaddedBatch, Rebatch,
//   SampleFromDatasets, ChooseFromDatasets, FromVector (with a codec), Error, and Zip when T is a pair or
//   tuple. Ops whose result type (Batched<T>, pair<int64,T>) has no name are skipped. Later ops over a result
//   type need that type registered too (compositions are registered one by one).
// - SLUICE_REGISTER_FUNCTION(handle, factory): handle is a sluice::Function<Sig>;
//   factory(const FunctionArgs&) returns a callable convertible to std::function<Sig> (or absl::StatusOr of
//   one). Registers builders for
//   the ops that can hold a function of that signature: R(T) for Map and parallel Map; bool(T) also for
//   Filter and TakeWhile; an integer (T) also for BucketBySequenceLength; Dataset<U>(T) also for
//   Interleave, FlatMap and parallel Interleave;
//   std::pair<S, U>(const S&, T) for Scan (S with a codec: the initial state travels as a param). A second
//   registration of a name aborts at startup naming both signatures.
// - SLUICE_REGISTER_DATASET(handle, factory): handle is a sluice::Function<Dataset<T>()>; factory(args)
//   returns the Dataset<T> (or absl::StatusOr of it). RegisteredDataset(handle.With(args)) is the dataset; in
//   a graph it is one leaf holding the name and args.
#ifndef SLUICE_OPS_REGISTRATION_H_
#define SLUICE_OPS_REGISTRATION_H_

#include <any>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeindex>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/export.h"
#include "sluice/engine/detail/status_traits.h"
#include "sluice/ops/dataset.h"
#include "sluice/ops/element_type_registry.h"
#include "sluice/ops/function_registry.h"
#include "sluice/ops/op_builder_registry.h"
#include "sluice/ops/registered_dataset.h"
#include "sluice/ops/encode_elements.h"
#include "sluice/ops/split_reader.h"

namespace sluice {
namespace registration_detail {

using Built = absl::StatusOr<std::shared_ptr<const OpNode>>;

template <class T>
Built Erase(const Dataset<T>& dataset) {
  return std::shared_ptr<const OpNode>(dataset.node());
}

#define SLUICE_REGISTRATION_ASSIGN_(lhs, expr)     \
  auto lhs##_or = (expr);                           \
  if (!lhs##_or.ok()) return lhs##_or.status();     \
  auto lhs = std::move(*lhs##_or)

template <class T>
void AddBuilder(std::string op, std::string element_type, OpBuilder builder) {
  RegisterOpBuilder(std::move(op), std::move(element_type), ElementTypeName<T>(), std::move(builder));
}

template <class T>
struct IsZipResult : std::false_type {};
template <class A, class B>
struct IsZipResult<std::pair<A, B>> : std::true_type {
  static Built Build(const OpBuildInput& in) {
    SLUICE_REGISTRATION_ASSIGN_(a, in.Input<A>(0));
    SLUICE_REGISTRATION_ASSIGN_(b, in.Input<B>(1));
    return Erase(Zip(Dataset<A>(a), Dataset<B>(b)));
  }
};
template <class A, class B, class C, class... Rest>
struct IsZipResult<std::tuple<A, B, C, Rest...>> : std::true_type {
  template <size_t... I>
  static Built BuildAt(const OpBuildInput& in, std::index_sequence<I...>) {
    using Types = std::tuple<A, B, C, Rest...>;
    std::tuple<absl::StatusOr<NodePtr<std::tuple_element_t<I, Types>>>...> inputs{
        in.Input<std::tuple_element_t<I, Types>>(I)...};
    absl::Status status;
    ((status.Update(std::get<I>(inputs).status())), ...);
    if (!status.ok()) return status;
    return Erase(Zip(Dataset<std::tuple_element_t<I, Types>>(*std::get<I>(inputs))...));
  }
  static Built Build(const OpBuildInput& in) { return BuildAt(in, std::index_sequence_for<A, B, C, Rest...>{}); }
};

// The ops generic in T (see the header comment).
template <class T>
void RegisterGenericOps() {
  if constexpr (std::is_copy_constructible_v<T> && std::is_default_constructible_v<T>) {
    const std::string name = ElementTypeName<T>();
    auto unary = [name](std::string op, std::function<Built(Dataset<T>, const OpBuildInput&)> make) {
      AddBuilder<T>(std::move(op), name, [make](const OpBuildInput& in) -> Built {
        SLUICE_REGISTRATION_ASSIGN_(input, in.Input<T>(0));
        return make(Dataset<T>(input), in);
      });
    };
    unary("Take", [](Dataset<T> d, const OpBuildInput& in) -> Built {
      SLUICE_REGISTRATION_ASSIGN_(count, in.Get<int64_t>("count"));
      return Erase(d.Take(count));
    });
    unary("Skip", [](Dataset<T> d, const OpBuildInput& in) -> Built {
      SLUICE_REGISTRATION_ASSIGN_(count, in.Get<int64_t>("count"));
      return Erase(d.Skip(count));
    });
    unary("Repeat", [](Dataset<T> d, const OpBuildInput& in) -> Built {
      SLUICE_REGISTRATION_ASSIGN_(count, in.Get<int64_t>("count"));
      return Erase(d.Repeat(count));
    });
    unary("Shuffle", [](Dataset<T> d, const OpBuildInput& in) -> Built {
      SLUICE_REGISTRATION_ASSIGN_(buffer_size, in.Get<int64_t>("buffer_size"));
      SLUICE_REGISTRATION_ASSIGN_(reshuffle, in.Get<bool>("reshuffle_each_iteration"));
      SLUICE_REGISTRATION_ASSIGN_(seed, in.GetOptional<int64_t>("seed"));
      std::optional<uint64_t> unsigned_seed;
      if (seed) unsigned_seed = static_cast<uint64_t>(*seed);
      return Erase(d.Shuffle(buffer_size, unsigned_seed, reshuffle));
    });
    unary("Prefetch", [](Dataset<T> d, const OpBuildInput& in) -> Built {
      SLUICE_REGISTRATION_ASSIGN_(buffer_size, in.Get<int64_t>("buffer_size"));
      return Erase(d.Prefetch(buffer_size));
    });
    unary("Shard", [](Dataset<T> d, const OpBuildInput& in) -> Built {
      SLUICE_REGISTRATION_ASSIGN_(num_shards, in.Get<int64_t>("num_shards"));
      SLUICE_REGISTRATION_ASSIGN_(index, in.Get<int64_t>("index"));
      return Erase(d.Shard(num_shards, index));
    });
    unary("AutoShard", [](Dataset<T> d, const OpBuildInput& in) -> Built {
      SLUICE_REGISTRATION_ASSIGN_(num_workers, in.Get<int64_t>("num_workers"));
      SLUICE_REGISTRATION_ASSIGN_(index, in.Get<int64_t>("index"));
      SLUICE_REGISTRATION_ASSIGN_(policy_name, in.Get<std::string>("policy"));
      absl::StatusOr<AutoShardPolicy> policy = AutoShardPolicyFromName(policy_name);
      if (!policy.ok()) return in.Error(std::string(policy.status().message()));
      return Erase(d.AutoShard(num_workers, index, *policy));
    });
    unary("Cache", [](Dataset<T> d, const OpBuildInput& in) -> Built {
      SLUICE_REGISTRATION_ASSIGN_(filename, in.Get<std::string>("filename"));
      if (filename.empty()) return Erase(d.Cache());
      if constexpr (HasElementCodec<T>) {
        return Erase(d.Cache(filename));
      } else {
        return in.Error("a file cache needs an ElementCodec for its element type");
      }
    });
    unary("IgnoreErrors", [](Dataset<T> d, const OpBuildInput& in) -> Built {
      SLUICE_REGISTRATION_ASSIGN_(log_warning, in.Get<bool>("log_warning"));
      return Erase(d.IgnoreErrors(log_warning));
    });
    // The data-service worker's internal ops (sluice/ops/split_reader.h, sluice/ops/encode_elements.h).
    unary("_ReadSplits", [](Dataset<T> d, const OpBuildInput& in) -> Built {
      SLUICE_REGISTRATION_ASSIGN_(feed_id, in.Get<std::string>("feed"));
      std::shared_ptr<SplitFeed> feed = FindSplitFeed(feed_id);
      if (feed == nullptr) return in.Error(absl::StrCat("no split feed '", feed_id, "' in this process"));
      return std::shared_ptr<const OpNode>(
          std::make_shared<ops::SplitReaderNode<T>>(d.node(), std::move(feed_id), std::move(feed)));
    });
    if constexpr (HasElementCodec<T>) {
      AddBuilder<T>("_EncodeElements", ElementTypeName<std::string>(), [](const OpBuildInput& in) -> Built {
        SLUICE_REGISTRATION_ASSIGN_(input, in.Input<T>(0));
        return std::shared_ptr<const OpNode>(std::make_shared<ops::EncodeElementsNode<T>>(input));
      });
    }
    unary("Concatenate", [](Dataset<T> d, const OpBuildInput& in) -> Built {
      SLUICE_REGISTRATION_ASSIGN_(other, in.Input<T>(1));
      return Erase(d.Concatenate(Dataset<T>(other)));
    });
    if (const std::string pair = ElementTypeName<std::pair<int64_t, T>>(); !pair.empty()) {
      AddBuilder<T>("Enumerate", pair, [](const OpBuildInput& in) -> Built {
        SLUICE_REGISTRATION_ASSIGN_(input, in.Input<T>(0));
        SLUICE_REGISTRATION_ASSIGN_(start, in.Get<int64_t>("start"));
        return Erase(Dataset<T>(input).Enumerate(start));
      });
    }
    if (const std::string batched = ElementTypeName<Batched<T>>(); !batched.empty()) {
      AddBuilder<T>("Batch", batched, [](const OpBuildInput& in) -> Built {
        SLUICE_REGISTRATION_ASSIGN_(input, in.Input<T>(0));
        SLUICE_REGISTRATION_ASSIGN_(batch_size, in.Get<int64_t>("batch_size"));
        SLUICE_REGISTRATION_ASSIGN_(drop_remainder, in.Get<bool>("drop_remainder"));
        SLUICE_REGISTRATION_ASSIGN_(num_parallel_calls, in.Get<int64_t>("num_parallel_calls"));
        SLUICE_REGISTRATION_ASSIGN_(deterministic, in.GetOptional<bool>("deterministic"));
        return Erase(Dataset<T>(input).Batch(batch_size, drop_remainder, num_parallel_calls, deterministic));
      });
    }
    if constexpr (ops::IsUnbatchable<T>) {
      if (const std::string rows = ElementTypeName<ops::Unbatched<T>>(); !rows.empty()) {
        AddBuilder<T>("Unbatch", rows, [](const OpBuildInput& in) -> Built {
          SLUICE_REGISTRATION_ASSIGN_(input, in.Input<T>(0));
          return Erase(Dataset<T>(input).Unbatch());
        });
      }
    }
    if constexpr (IsConcatenable<T>) {
      unary("Rebatch", [](Dataset<T> d, const OpBuildInput& in) -> Built {
        SLUICE_REGISTRATION_ASSIGN_(batch_sizes, in.Get<std::vector<int64_t>>("batch_sizes"));
        SLUICE_REGISTRATION_ASSIGN_(drop_remainder, in.Get<bool>("drop_remainder"));
        return Erase(d.Rebatch(batch_sizes, drop_remainder));
      });
    }
    if (const std::string vectors = ElementTypeName<std::vector<T>>(); !vectors.empty()) {
      AddBuilder<T>("BatchVectors", vectors, [](const OpBuildInput& in) -> Built {
        SLUICE_REGISTRATION_ASSIGN_(input, in.Input<T>(0));
        SLUICE_REGISTRATION_ASSIGN_(batch_size, in.Get<int64_t>("batch_size"));
        SLUICE_REGISTRATION_ASSIGN_(drop_remainder, in.Get<bool>("drop_remainder"));
        return Erase(Dataset<T>(input).BatchVectors(batch_size, drop_remainder));
      });
    }
    if constexpr (ops::IsPaddable<T>) {
      const std::string padded = ElementTypeName<Batched<T>>();
      if (!padded.empty()) {
        AddBuilder<T>("PaddedBatch", padded, [](const OpBuildInput& in) -> Built {
          SLUICE_REGISTRATION_ASSIGN_(input, in.Input<T>(0));
          Dataset<T> d(input);
          SLUICE_REGISTRATION_ASSIGN_(batch_size, in.Get<int64_t>("batch_size"));
          SLUICE_REGISTRATION_ASSIGN_(drop_remainder, in.Get<bool>("drop_remainder"));
          SLUICE_REGISTRATION_ASSIGN_(shapes, in.Get<EncodedParam>("padded_shapes"));
          SLUICE_REGISTRATION_ASSIGN_(values, in.Get<EncodedParam>("padding_values"));
          SLUICE_REGISTRATION_ASSIGN_(padded_shapes, ops::DecodePaddedShapes(shapes.bytes));
          SLUICE_REGISTRATION_ASSIGN_(padding_values, ops::DecodePaddingValues(values.bytes));
          return Erase(
              d.PaddedBatch(batch_size, std::move(padded_shapes), std::move(padding_values), drop_remainder));
        });
      }
    }
    AddBuilder<T>("SampleFromDatasets", name, [](const OpBuildInput& in) -> Built {
      std::vector<Dataset<T>> datasets;
      for (size_t i = 0; i < in.inputs.size(); ++i) {
        SLUICE_REGISTRATION_ASSIGN_(input, in.Input<T>(i));
        datasets.emplace_back(input);
      }
      SLUICE_REGISTRATION_ASSIGN_(weights, in.Get<std::vector<double>>("weights"));
      SLUICE_REGISTRATION_ASSIGN_(stop, in.Get<bool>("stop_on_empty_dataset"));
      SLUICE_REGISTRATION_ASSIGN_(seed, in.GetOptional<int64_t>("seed"));
      SLUICE_REGISTRATION_ASSIGN_(rerandomize, in.GetOptional<bool>("rerandomize_each_iteration"));
      std::optional<uint64_t> unsigned_seed;
      if (seed) unsigned_seed = static_cast<uint64_t>(*seed);
      return Erase(SampleFromDatasets<T>(datasets, weights, unsigned_seed, stop, rerandomize.value_or(false)));
    });
    RegisterOpBuilder("ChooseFromDatasets", name, ElementTypeName<int64_t>(), [](const OpBuildInput& in) -> Built {
      SLUICE_REGISTRATION_ASSIGN_(choices, in.Input<int64_t>(0));
      std::vector<Dataset<T>> datasets;
      for (size_t i = 1; i < in.inputs.size(); ++i) {
        SLUICE_REGISTRATION_ASSIGN_(input, in.Input<T>(i));
        datasets.emplace_back(input);
      }
      SLUICE_REGISTRATION_ASSIGN_(stop, in.Get<bool>("stop_on_empty_dataset"));
      return Erase(ChooseFromDatasets<T>(datasets, Dataset<int64_t>(choices), stop));
    });
    RegisterOpBuilder("Error", name, "", [](const OpBuildInput& in) -> Built {
      SLUICE_REGISTRATION_ASSIGN_(op, in.Get<std::string>("op"));
      SLUICE_REGISTRATION_ASSIGN_(code_name, in.Get<std::string>("code"));
      SLUICE_REGISTRATION_ASSIGN_(message, in.Get<std::string>("message"));
      SLUICE_REGISTRATION_ASSIGN_(code, ops::StatusCodeFromName(code_name));
      return std::shared_ptr<const OpNode>(ops::MakeErrorSource<T>(op, absl::Status(code, message)));
    });
    if constexpr (HasElementCodec<T>) {
      RegisterOpBuilder("FromVector", name, "", [](const OpBuildInput& in) -> Built {
        SLUICE_REGISTRATION_ASSIGN_(size, in.Get<int64_t>("size"));
        SLUICE_REGISTRATION_ASSIGN_(encoded, in.Get<EncodedParam>("values"));
        std::string_view bytes = encoded.bytes;
        std::vector<T> values;
        while (!bytes.empty()) {
          T value{};
          if (absl::Status s = ElementCodec<T>::Decode(&bytes, &value); !s.ok()) {
            return in.Error(absl::StrCat("value ", values.size(), ": ", s.message()));
          }
          values.push_back(std::move(value));
        }
        if (static_cast<int64_t>(values.size()) != size) {
          return in.Error(absl::StrCat("holds ", values.size(), " values, its size says ", size));
        }
        return Erase(FromVector<T>(std::move(values)));
      });
    }
    if constexpr (HasElementCodec<T>) {
      // The value param of FromTensors and FromTensorSlices: one encoded element, nothing after it.
      auto decode_value = [](const OpBuildInput& in) -> absl::StatusOr<T> {
        SLUICE_REGISTRATION_ASSIGN_(encoded, in.Get<EncodedParam>("value"));
        std::string_view bytes = encoded.bytes;
        T value{};
        if (absl::Status s = ElementCodec<T>::Decode(&bytes, &value); !s.ok()) {
          return in.Error(absl::StrCat("value: ", s.message()));
        }
        if (!bytes.empty()) return in.Error(absl::StrCat("value: ", bytes.size(), " bytes after it"));
        return value;
      };
      RegisterOpBuilder("FromTensors", name, "", [decode_value](const OpBuildInput& in) -> Built {
        SLUICE_REGISTRATION_ASSIGN_(value, decode_value(in));
        return Erase(FromTensors<T>(std::move(value)));
      });
      if constexpr (ops::IsTensorSliceable<T>) {
        RegisterOpBuilder("FromTensorSlices", name, "", [decode_value](const OpBuildInput& in) -> Built {
          SLUICE_REGISTRATION_ASSIGN_(size, in.Get<int64_t>("size"));
          SLUICE_REGISTRATION_ASSIGN_(value, decode_value(in));
          Dataset<T> slices = FromTensorSlices<T>(std::move(value));
          if (slices.node()->cardinality() != size) {
            return in.Error(
                absl::StrCat("its value has ", slices.node()->cardinality(), " rows, its size says ", size));
          }
          return Erase(std::move(slices));
        });
      }
    }
    if constexpr (IsZipResult<T>::value) {
      using First = std::tuple_element_t<0, T>;
      RegisterOpBuilder("Zip", name, ElementTypeName<First>(), &IsZipResult<T>::Build);
    }
  }
}

template <class T>
bool RegisterTypeAtStartup() {
  static_assert(kHasElementTypeName<T>,
                "SLUICE_REGISTER_ELEMENT_TYPE: the type has no element type name; declare "
                "SLUICE_ELEMENT_TYPE_NAME(Type, \"name\") next to it (sluice/ops/element_type.h)");
  element_type_detail::RegisterAtStartup(MakeElementTypeInfo<T>());
  RegisterGenericOps<T>();
  return true;
}

// A factory's result as StatusOr<V>.
template <class V, class R>
absl::StatusOr<V> AsStatusOr(R&& result) {
  if constexpr (detail::IsStatusOr<std::remove_cvref_t<R>>::value) {
    if (!result.ok()) return result.status();
    return V(std::move(*result));
  } else {
    return V(std::forward<R>(result));
  }
}

// The registered function a node holds (its first FunctionParam).
inline FunctionParam FunctionOf(const OpBuildInput& in) {
  for (const Param& p : in.node->params) {
    if (const auto* f = std::get_if<FunctionParam>(&p.value)) return *f;
  }
  return {};
}

template <class T>
struct IsDataset : std::false_type {};
template <class U>
struct IsDataset<Dataset<U>> : std::true_type {};

// Builders of the ops that can hold a function of signature R(A).
template <class Sig>
struct FunctionOps;
template <class R, class A>
struct FunctionOps<R(A)> {
  using T = std::remove_cvref_t<A>;
  using Fn = std::function<R(A)>;
  using U = ops::UnwrapStatusOrT<R>;

  static Fn Callable(const std::any& callable) { return std::any_cast<Fn>(callable); }
  static FunctionParam Function(const OpBuildInput& in) { return FunctionOf(in); }

  static void Add(std::map<std::string, FunctionOpBuilder, std::less<>>* builders) {
    (*builders)["Map"] = [](const OpBuildInput& in, std::any callable) -> Built {
      SLUICE_REGISTRATION_ASSIGN_(input, in.Input<T>(0));
      return std::shared_ptr<const OpNode>(
          std::make_shared<ops::MapNode<T, Fn>>(input, Callable(callable), Function(in)));
    };
    (*builders)["ParallelMap"] = [](const OpBuildInput& in, std::any callable) -> Built {
      SLUICE_REGISTRATION_ASSIGN_(input, in.Input<T>(0));
      SLUICE_REGISTRATION_ASSIGN_(num_parallel_calls, in.Get<int64_t>("num_parallel_calls"));
      SLUICE_REGISTRATION_ASSIGN_(deterministic, in.GetOptional<bool>("deterministic"));
      return std::shared_ptr<const OpNode>(
          ops::MakeParallelMap<T, Fn>(input, Callable(callable), num_parallel_calls, deterministic, Function(in)));
    };
    if constexpr (std::is_same_v<U, bool>) {
      (*builders)["Filter"] = [](const OpBuildInput& in, std::any callable) -> Built {
        SLUICE_REGISTRATION_ASSIGN_(input, in.Input<T>(0));
        return std::shared_ptr<const OpNode>(
            std::make_shared<ops::FilterNode<T, Fn>>(input, Callable(callable), Function(in)));
      };
      (*builders)["TakeWhile"] = [](const OpBuildInput& in, std::any callable) -> Built {
        SLUICE_REGISTRATION_ASSIGN_(input, in.Input<T>(0));
        return std::shared_ptr<const OpNode>(
            std::make_shared<ops::TakeWhileNode<T, Fn>>(input, Callable(callable), Function(in)));
      };
    }
    if constexpr (std::is_integral_v<U> && !std::is_same_v<U, bool>) {
      if (!ElementTypeName<Batched<T>>().empty()) {
        (*builders)["BucketBySequenceLength"] = [](const OpBuildInput& in, std::any callable) -> Built {
          SLUICE_REGISTRATION_ASSIGN_(input, in.Input<T>(0));
          SLUICE_REGISTRATION_ASSIGN_(boundaries, in.Get<std::vector<int64_t>>("bucket_boundaries"));
          SLUICE_REGISTRATION_ASSIGN_(batch_sizes, in.Get<std::vector<int64_t>>("bucket_batch_sizes"));
          SLUICE_REGISTRATION_ASSIGN_(shapes, in.Get<EncodedParam>("padded_shapes"));
          SLUICE_REGISTRATION_ASSIGN_(values, in.Get<EncodedParam>("padding_values"));
          SLUICE_REGISTRATION_ASSIGN_(pad_to_boundary, in.Get<bool>("pad_to_bucket_boundary"));
          SLUICE_REGISTRATION_ASSIGN_(no_padding, in.Get<bool>("no_padding"));
          SLUICE_REGISTRATION_ASSIGN_(drop_remainder, in.Get<bool>("drop_remainder"));
          SLUICE_REGISTRATION_ASSIGN_(padded_shapes, ops::DecodePaddedShapes(shapes.bytes));
          SLUICE_REGISTRATION_ASSIGN_(padding_values, ops::DecodePaddingValues(values.bytes));
          return std::shared_ptr<const OpNode>(ops::MakeBucketBySequenceLength<T>(
              input, Callable(callable), Function(in),
              ops::BucketOptions{std::move(boundaries), std::move(batch_sizes), std::move(padded_shapes),
                                 std::move(padding_values), pad_to_boundary, no_padding, drop_remainder}));
        };
      }
    }
    if constexpr (IsDataset<U>::value) {
      auto interleave = [](const OpBuildInput& in, std::any callable) -> Built {
        SLUICE_REGISTRATION_ASSIGN_(input, in.Input<T>(0));
        SLUICE_REGISTRATION_ASSIGN_(cycle_length, in.Get<int64_t>("cycle_length"));
        SLUICE_REGISTRATION_ASSIGN_(block_length, in.Get<int64_t>("block_length"));
        return std::shared_ptr<const OpNode>(std::make_shared<ops::InterleaveNode<T, Fn>>(
            in.node->op, input, Callable(callable), Function(in), cycle_length, block_length));
      };
      (*builders)["Interleave"] = interleave;
      (*builders)["FlatMap"] = interleave;
      (*builders)["ParallelInterleave"] = [](const OpBuildInput& in, std::any callable) -> Built {
        SLUICE_REGISTRATION_ASSIGN_(input, in.Input<T>(0));
        SLUICE_REGISTRATION_ASSIGN_(cycle_length, in.Get<int64_t>("cycle_length"));
        SLUICE_REGISTRATION_ASSIGN_(block_length, in.Get<int64_t>("block_length"));
        SLUICE_REGISTRATION_ASSIGN_(num_parallel_calls, in.Get<int64_t>("num_parallel_calls"));
        SLUICE_REGISTRATION_ASSIGN_(deterministic, in.GetOptional<bool>("deterministic"));
        return std::shared_ptr<const OpNode>(ops::MakeParallelInterleave<T, Fn>(
            input, Callable(callable), cycle_length, block_length, num_parallel_calls, deterministic, Function(in)));
      };
    }
  }
};

// Scan's function: std::pair<S, U>(const S&, T) (or StatusOr of the pair); the initial state is a param.
template <class R, class S, class A>
struct FunctionOps<R(const S&, A)> {
  using T = std::remove_cvref_t<A>;
  using Fn = std::function<R(const S&, A)>;
  static void Add(std::map<std::string, FunctionOpBuilder, std::less<>>* builders) {
    if constexpr (HasElementCodec<S> && std::is_default_constructible_v<S>) {
      (*builders)["Scan"] = [](const OpBuildInput& in, std::any callable) -> Built {
        SLUICE_REGISTRATION_ASSIGN_(input, in.Input<T>(0));
        SLUICE_REGISTRATION_ASSIGN_(encoded, in.Get<EncodedParam>("initial_state"));
        S state{};
        if (absl::Status s = DecodeElement(encoded.bytes, &state); !s.ok()) {
          return in.Error(absl::StrCat("initial_state: ", s.message()));
        }
        return std::shared_ptr<const OpNode>(std::make_shared<ops::ScanNode<T, S, Fn>>(
            input, std::move(state), std::any_cast<Fn>(callable), FunctionOf(in)));
      };
    }
  }
};

// A registered dataset: Function<Dataset<T>()>; its one builder makes the leaf.
template <class T>
struct FunctionOps<Dataset<T>()> {
  static void Add(std::map<std::string, FunctionOpBuilder, std::less<>>* builders) {
    (*builders)["RegisteredDataset"] = [](const OpBuildInput& in, std::any callable) -> Built {
      Dataset<T> dataset = std::any_cast<std::function<Dataset<T>()>>(callable)();
      return std::shared_ptr<const OpNode>(
          std::make_shared<ops::RegisteredDatasetNode<T>>(dataset.node(), FunctionOf(in)));
    };
  }
};

template <class Sig, class Factory>
bool RegisterFunctionAtStartup(const Function<Sig>& handle, Factory factory) {
  FunctionInfo info{std::string(handle.name()), std::type_index(typeid(Sig)),
                    function_detail::SignatureName(static_cast<Sig*>(nullptr)), nullptr, {}};
  info.make = [factory = std::move(factory)](const FunctionArgs& args) -> absl::StatusOr<std::any> {
    absl::StatusOr<std::function<Sig>> made = AsStatusOr<std::function<Sig>>(factory(args));
    if (!made.ok()) return made.status();
    return std::any(std::move(*made));
  };
  FunctionOps<Sig>::Add(&info.op_builders);
  if (absl::Status status = RegisterFunction(std::move(info)); !status.ok()) {
    // Two registrations of one name would make every graph naming it ambiguous; fail before main runs.
    std::fprintf(stderr, "SLUICE_REGISTER_FUNCTION: %s\n", std::string(status.message()).c_str());
    std::abort();
  }
  return true;
}

template <class T, class Factory>
bool RegisterDatasetAtStartup(const Function<Dataset<T>()>& handle, Factory factory) {
  return RegisterFunctionAtStartup(handle, [factory = std::move(factory)](
                                               const FunctionArgs& args) -> absl::StatusOr<std::function<Dataset<T>()>> {
    absl::StatusOr<Dataset<T>> dataset = AsStatusOr<Dataset<T>>(factory(args));
    if (!dataset.ok()) return dataset.status();
    return std::function<Dataset<T>()>([dataset = *std::move(dataset)] { return dataset; });
  });
}

}  // namespace registration_detail
}  // namespace sluice

#define SLUICE_REGISTRATION_DETAIL_CONCAT_(a, b) a##b
#define SLUICE_REGISTRATION_DETAIL_CONCAT(a, b) SLUICE_REGISTRATION_DETAIL_CONCAT_(a, b)

// Registers the type (which may contain commas: std::pair<int64_t, my::Point>) and its generic op builders.
#define SLUICE_REGISTER_ELEMENT_TYPE(...)                                                                     \
  [[maybe_unused]] static const bool SLUICE_REGISTRATION_DETAIL_CONCAT(sluice_element_type_registered_,    \
                                                                       __COUNTER__) =                      \
      ::sluice::registration_detail::RegisterTypeAtStartup<__VA_ARGS__>()

#define SLUICE_REGISTER_FUNCTION(handle, ...)                                                           \
  [[maybe_unused]] static const bool SLUICE_REGISTRATION_DETAIL_CONCAT(sluice_function_registered_,   \
                                                                       __COUNTER__) =                 \
      ::sluice::registration_detail::RegisterFunctionAtStartup(handle, __VA_ARGS__)

#define SLUICE_REGISTER_DATASET(handle, ...)                                                           \
  [[maybe_unused]] static const bool SLUICE_REGISTRATION_DETAIL_CONCAT(sluice_dataset_registered_,   \
                                                                       __COUNTER__) =                \
      ::sluice::registration_detail::RegisterDatasetAtStartup(handle, __VA_ARGS__)

#endif  // SLUICE_OPS_REGISTRATION_H_
