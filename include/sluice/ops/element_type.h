// ElementTypeName<T>(): a stable, human-readable name for a dataset element type, the name under which
// elements cross a process boundary (data service, serialised pipelines) and are saved (cache files,
// checkpoints).
//
// Contract:
// - Built-ins: "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "half",
//   "float", "double", "string" (std::string), "Tensor", "ParsedExample", "Status" (absl::Status).
//   Compositions name their parts recursively, without spaces: "vector<int64>", "pair<int64,string>",
//   "tuple<Tensor,int64,string>", "optional<float>", "StatusOr<Tensor>", "tuple<>".
// - A user type is named by an ADL hook declared next to it, in its own namespace:
//
//     namespace my {
//     struct Point { int64_t x = 0, y = 0; };
//     SLUICE_ELEMENT_TYPE_NAME(Point, "my.Point");  // or by hand:
//     // constexpr std::string_view SluiceElementTypeName(const Point*) { return "my.Point"; }
//     }  // namespace my
//     ElementTypeName<std::vector<my::Point>>();  // "vector<my.Point>"
//
//   The hook must be declared before the first use of ElementTypeName (or Node<T>) for the type in a
//   translation unit, which declaring it in the type's header guarantees.
//   To look the type up by name at run time (a graph deserializer, a data-service worker), also register
//   it once in a .cc: SLUICE_REGISTER_ELEMENT_TYPE(my::Point) (sluice/ops/element_type_registry.h).
// - Any other type, and any composition with such a part, has the empty name: its elements cannot cross a
//   process boundary, and a stream of them carries no type check.
// - Names are the same in every process and build; they do not depend on the platform's spelling of
//   int64_t (long or long long).
// - Threading: pure; safe to call concurrently.
//
// Why an ADL hook and not a specialisation of a sluice template (the Abseil choice, as AbslHashValue and
// AbslStringify): the hook lives with the type, so every translation unit that can name the type sees
// it. A specialisation written in one .cc would be missing from the others, which then silently name the
// type "" (and the program is ill-formed, no diagnostic required); it would also have to be written at
// global namespace, outside the user's own. The run-time registry is a separate, explicit step because
// registering has a side effect that must happen exactly once per process.
#ifndef SLUICE_OPS_ELEMENT_TYPE_H_
#define SLUICE_OPS_ELEMENT_TYPE_H_

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Declares the ADL hook that names `Type`; use it at namespace scope in the namespace that declares `Type`,
// next to the type (in its header). `Type` is the unqualified name; `name` a string literal.
#define SLUICE_ELEMENT_TYPE_NAME(Type, name) \
  [[maybe_unused]] constexpr std::string_view SluiceElementTypeName(const Type*) { return name; }

namespace sluice {

// A name needs no complete type: forward declarations keep this header light for sluice/ops/op_node.h,
// which every op includes. The definitions are in sluice/io/tensor.h and sluice/io/example.h.
class Tensor;
struct Half;
struct BFloat16;
struct ParsedExample;

namespace element_type_detail {

// Blocks ordinary lookup, so only ADL finds a user's SluiceElementTypeName.
void SluiceElementTypeName() = delete;

template <class T>
concept HasNameHook = requires(const T* p) {
  { SluiceElementTypeName(p) } -> std::convertible_to<std::string_view>;
};

// Name<T>::Get() is the name and Name<T>::kNamed says at compile time whether it is non-empty; the
// primary template covers user types (hook or nothing).
template <class T>
struct Name {
  static constexpr bool kNamed = HasNameHook<T>;
  static std::string Get() {
    if constexpr (HasNameHook<T>) {
      return std::string(std::string_view(SluiceElementTypeName(static_cast<const T*>(nullptr))));
    } else {
      return std::string();
    }
  }
};

// The standard signed and unsigned integer types; not bool and not the character types.
template <class T>
concept StandardInteger =
    std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char> && !std::is_same_v<T, wchar_t> &&
    !std::is_same_v<T, char8_t> && !std::is_same_v<T, char16_t> && !std::is_same_v<T, char32_t>;

// Integers by width and signedness, so int64_t is "int64" whether it is long or long long.
template <StandardInteger T>
struct Name<T> {
  static constexpr bool kNamed = true;
  static std::string Get() {
    return (std::is_signed_v<T> ? "int" : "uint") + std::to_string(8 * sizeof(T));
  }
};

#define SLUICE_ELEMENT_TYPE_DETAIL_BUILTIN(Type, literal) \
  template <>                                             \
  struct Name<Type> {                                     \
    static constexpr bool kNamed = true;                  \
    static std::string Get() { return literal; }          \
  }
SLUICE_ELEMENT_TYPE_DETAIL_BUILTIN(bool, "bool");
SLUICE_ELEMENT_TYPE_DETAIL_BUILTIN(float, "float");
SLUICE_ELEMENT_TYPE_DETAIL_BUILTIN(double, "double");
SLUICE_ELEMENT_TYPE_DETAIL_BUILTIN(std::string, "string");
SLUICE_ELEMENT_TYPE_DETAIL_BUILTIN(Half, "half");
SLUICE_ELEMENT_TYPE_DETAIL_BUILTIN(BFloat16, "bfloat16");
SLUICE_ELEMENT_TYPE_DETAIL_BUILTIN(Tensor, "Tensor");
SLUICE_ELEMENT_TYPE_DETAIL_BUILTIN(ParsedExample, "ParsedExample");
SLUICE_ELEMENT_TYPE_DETAIL_BUILTIN(absl::Status, "Status");
#undef SLUICE_ELEMENT_TYPE_DETAIL_BUILTIN

// "<prefix><a,b,...>", or "" when any part has no name.
inline std::string Compose(std::string_view prefix, std::initializer_list<std::string> parts) {
  std::string out(prefix);
  out.push_back('<');
  bool first = true;
  for (const std::string& part : parts) {
    if (part.empty()) return std::string();
    if (!first) out.push_back(',');
    out += part;
    first = false;
  }
  out.push_back('>');
  return out;
}

template <class U>
struct Name<std::vector<U>> {
  static constexpr bool kNamed = Name<U>::kNamed;
  static std::string Get() { return Compose("vector", {Name<U>::Get()}); }
};
template <class A, class B>
struct Name<std::pair<A, B>> {
  static constexpr bool kNamed = Name<A>::kNamed && Name<B>::kNamed;
  static std::string Get() { return Compose("pair", {Name<A>::Get(), Name<B>::Get()}); }
};
template <class... Ts>
struct Name<std::tuple<Ts...>> {
  static constexpr bool kNamed = (true && ... && Name<Ts>::kNamed);
  static std::string Get() { return Compose("tuple", {Name<Ts>::Get()...}); }
};
template <class U>
struct Name<std::optional<U>> {
  static constexpr bool kNamed = Name<U>::kNamed;
  static std::string Get() { return Compose("optional", {Name<U>::Get()}); }
};
template <class U>
struct Name<absl::StatusOr<U>> {
  static constexpr bool kNamed = Name<U>::kNamed;
  static std::string Get() { return Compose("StatusOr", {Name<U>::Get()}); }
};

}  // namespace element_type_detail

// The name of element type T, or "" when T cannot cross a process boundary. cv and reference qualifiers
// are ignored.
template <class T>
std::string ElementTypeName() {
  return element_type_detail::Name<std::remove_cvref_t<T>>::Get();
}

// True when ElementTypeName<T>() is not empty, known at compile time.
template <class T>
inline constexpr bool kHasElementTypeName = element_type_detail::Name<std::remove_cvref_t<T>>::kNamed;

}  // namespace sluice

#endif  // SLUICE_OPS_ELEMENT_TYPE_H_
