// Registered functions: a function that can cross a process boundary is a registered name plus
// serializable arguments, from which each process builds the callable itself.
//
//   // normalize.h: the handle, usable anywhere (a name and a signature; no registration yet).
//   inline constexpr sluice::Function<sluice::Tensor(sluice::Tensor)> kNormalize{"normalize"};
//
//   // normalize.cc, linked into every program that builds or rebuilds the pipeline (sluice/ops/registration.h):
//   SLUICE_REGISTER_FUNCTION(kNormalize, [](const sluice::FunctionArgs& args)
//                                            -> absl::StatusOr<std::function<sluice::Tensor(sluice::Tensor)>> {
//     SLUICE_ASSIGN_OR_RETURN(double mean, args.Get<double>("mean"));
//     return [mean](sluice::Tensor t) { ...; return t; };
//   });
//
//   // anywhere:
//   ds.Map(kNormalize.With({{"mean", 0.5}}));   // or ds.Map(kNormalize) with no arguments
//
// Contract:
// - The factory takes FunctionArgs (named ParamValues: numbers, strings, lists, encoded values) and returns
//   the callable (or absl::StatusOr of it); the captured state of a registered function is therefore data.
//   It runs when the op is defined (in the client) and again when a graph is rebuilt (in a worker).
// - The signature is part of the registration: using a name registered with another signature, or one not
//   registered in this process, makes the dataset's one element a FailedPrecondition naming both.
// - A lambda passed with a `name` label is never taken for a registration, even when the label equals a
//   registered name: serializing it fails naming the op and its node path.
// - Threading: registration happens at static initialisation; lookups are safe from any thread.
#ifndef SLUICE_OPS_FUNCTION_REGISTRY_H_
#define SLUICE_OPS_FUNCTION_REGISTRY_H_

#include <any>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeindex>
#include <typeinfo>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/export.h"
#include "sluice/ops/op_builder_registry.h"
#include "sluice/ops/op_node.h"

namespace sluice {

// The arguments of a registered function (or dataset): named values of the graph's param types.
class FunctionArgs {
 public:
  FunctionArgs() = default;
  FunctionArgs(std::initializer_list<Param> params) : params_(params) {}
  explicit FunctionArgs(std::vector<Param> params) : params_(std::move(params)) {}

  const std::vector<Param>& params() const { return params_; }
  bool Has(absl::string_view name) const { return Find(name) != nullptr; }

  // The value named `name` as V: NotFound when absent, InvalidArgument when it holds another type
  // (an integer is accepted where a double is asked).
  template <class V>
  absl::StatusOr<V> Get(absl::string_view name) const {
    const ParamValue* value = Find(name);
    if (value == nullptr) return absl::NotFoundError(absl::StrCat("function argument '", name, "' is missing"));
    if (const V* typed = std::get_if<V>(value)) return *typed;
    if constexpr (std::is_same_v<V, double>) {
      if (const int64_t* integer = std::get_if<int64_t>(value)) return static_cast<double>(*integer);
    }
    return absl::InvalidArgumentError(absl::StrCat("function argument '", name, "' has another type"));
  }
  template <class V>
  absl::StatusOr<V> GetOr(absl::string_view name, V fallback) const {
    if (!Has(name)) return fallback;
    return Get<V>(name);
  }

 private:
  const ParamValue* Find(absl::string_view name) const {
    for (const Param& p : params_) {
      if (p.name == name) return &p.value;
    }
    return nullptr;
  }
  std::vector<Param> params_;
};

// What the registry keeps of a registered function. `make` returns a std::any holding std::function<Sig>.
struct FunctionInfo {
  std::string name;
  std::type_index signature;
  std::string signature_name;  // readable, for errors: "Tensor(Tensor)"
  std::function<absl::StatusOr<std::any>(const FunctionArgs&)> make;
  // Per op that can hold this function ("Map", "Filter", ...): rebuilds that op from a graph node, given
  // the callable `make` returned. Filled by the registration (sluice/ops/registration.h).
  std::map<std::string, FunctionOpBuilder, std::less<>> op_builders;
};

SLUICE_EXPORT absl::Status RegisterFunction(FunctionInfo info);
SLUICE_EXPORT const FunctionInfo* FindFunction(std::string_view name);
SLUICE_EXPORT std::vector<std::string> RegisteredFunctionNames();

namespace function_detail {
template <class T>
std::string TypeLabel() {
  std::string name = ElementTypeName<std::remove_cvref_t<T>>();
  return name.empty() ? std::string("?") : name;
}
template <class R, class... A>
std::string SignatureName(R (*)(A...)) {
  std::vector<std::string> args = {TypeLabel<A>()...};
  std::string joined;
  for (size_t i = 0; i < args.size(); ++i) absl::StrAppend(&joined, i == 0 ? "" : ",", args[i]);
  return absl::StrCat(TypeLabel<R>(), "(", joined, ")");
}
}  // namespace function_detail

template <class Sig>
class BoundFunction;
template <class Sig>
absl::StatusOr<std::function<Sig>> ResolveFunction(const FunctionParam& function);

// A handle: the registered name and the signature. Cheap, constexpr, declared next to what uses it.
template <class Sig>
class Function {
 public:
  constexpr explicit Function(std::string_view name) : name_(name) {}
  constexpr std::string_view name() const { return name_; }
  BoundFunction<Sig> With(FunctionArgs args = {}) const { return BoundFunction<Sig>(std::string(name_), std::move(args)); }

 private:
  std::string_view name_;
};

// A handle with its arguments: what Map/Filter/Interleave/... take.
template <class Sig>
class BoundFunction {
 public:
  BoundFunction(std::string name, FunctionArgs args)
      : name_(std::move(name)), args_(std::make_shared<const std::vector<Param>>(args.params())) {}

  const std::string& name() const { return name_; }
  FunctionParam param() const { return FunctionParam{name_, args_, true}; }

  // The callable, made by the registered factory in this process.
  absl::StatusOr<std::function<Sig>> Resolve() const { return ResolveFunction<Sig>(param()); }

 private:
  std::string name_;
  std::shared_ptr<const std::vector<Param>> args_;
};

// The callable of a registered `function` with signature Sig: FailedPrecondition when the name is not
// registered here or has another signature; the factory's own error otherwise.
template <class Sig>
absl::StatusOr<std::function<Sig>> ResolveFunction(const FunctionParam& function) {
  if (!function.registered) {
    return absl::FailedPreconditionError(absl::StrCat("'", function.name, "' is a label, not a registered function"));
  }
  const FunctionInfo* info = FindFunction(function.name);
  const std::string wanted = function_detail::SignatureName(static_cast<Sig*>(nullptr));
  if (info == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("function '", function.name, "' (", wanted,
                                                      ") is not registered in this process"));
  }
  if (info->signature != std::type_index(typeid(Sig))) {
    return absl::FailedPreconditionError(absl::StrCat("function '", function.name, "' is registered as ",
                                                      info->signature_name, ", used as ", wanted));
  }
  FunctionArgs args(function.args != nullptr ? *function.args : std::vector<Param>{});
  absl::StatusOr<std::any> made = info->make(args);
  if (!made.ok()) {
    return absl::Status(made.status().code(),
                        absl::StrCat("function '", function.name, "': ", made.status().message()));
  }
  return std::any_cast<std::function<Sig>>(std::move(*made));
}

namespace ops {
template <class F>
struct IsFunctionHandle : std::false_type {};
template <class Sig>
struct IsFunctionHandle<Function<Sig>> : std::true_type {};
template <class Sig>
struct IsFunctionHandle<BoundFunction<Sig>> : std::true_type {};
template <class F>
concept NotFunctionHandle = !IsFunctionHandle<std::remove_cvref_t<F>>::value;
template <class F>
concept FunctionHandle = IsFunctionHandle<std::remove_cvref_t<F>>::value;

template <class Fn>
struct FunctionArgOf;
template <class R, class A>
struct FunctionArgOf<std::function<R(A)>> {
  using type = A;
};
// Scan's (state, element): the element is the dataset's.
template <class R, class S, class A>
struct FunctionArgOf<std::function<R(S, A)>> {
  using type = A;
};

// A handle with its arguments (a bare Function has none).
template <class Sig>
BoundFunction<Sig> Bind(const Function<Sig>& f) {
  return f.With();
}
template <class Sig>
const BoundFunction<Sig>& Bind(const BoundFunction<Sig>& f) {
  return f;
}
}  // namespace ops

}  // namespace sluice

#endif  // SLUICE_OPS_FUNCTION_REGISTRY_H_
