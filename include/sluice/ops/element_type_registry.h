// The element type registry: the process-wide table from an element type's name (sluice/ops/element_type.h)
// to what code that meets the type only by name needs (a pipeline deserializer, a data-service worker):
// whether it has an ElementCodec and type-erased encode/decode working on std::any.
//
// Contract:
// - SLUICE_REGISTER_ELEMENT_TYPE(T) (sluice/ops/registration.h) registers T during static initialisation,
//   with the op builders generic in T. Use it once per type per
//   program, at namespace scope (any namespace) in a .cc that is linked into the program: a .cc in a static
//   library that nothing else references is dropped by the linker, and its registration with it. T must
//   have a name (SLUICE_ELEMENT_TYPE_NAME next to the type, or a composition of named types): a type
//   without one does not compile. Registering a name that another type holds aborts at startup with a
//   message naming both (as a flag defined twice does in Abseil).
// - The built-ins are registered from the start: bool, int8 ... uint64, half, float, double, string,
//   Tensor, ParsedExample, Status. Compositions (vector<int64>, ...) are registered only when some code
//   registers them: their number is unbounded.
// - FindElementType(name) returns the record or nullptr; records are never removed or changed, so the
//   pointer stays valid for the life of the process.
// - ElementTypeInfo::encode appends EncodeElement of the T held in `value` (InvalidArgument when it holds
//   something else); ::decode decodes exactly one value (DecodeElement: DataLoss on bad bytes, trailing
//   bytes included) into a fresh T in *value. Both return Unimplemented when the type has no codec or is
//   not copyable and default-constructible (std::any needs both).
// - Threading: registering and looking up are safe from any thread; the functions in a record are stateless.
//
//   // point.h
//   namespace my {
//   struct Point { int64_t x = 0, y = 0; };
//   SLUICE_ELEMENT_TYPE_NAME(Point, "my.Point");
//   }  // namespace my
//   template <> struct sluice::ElementCodec<my::Point> { ...Encode, Decode... };
//
//   // point.cc
//   #include "sluice/ops/registration.h"
//   SLUICE_REGISTER_ELEMENT_TYPE(my::Point);
//
//   // anywhere, by name
//   const sluice::ElementTypeInfo* info = sluice::FindElementType("my.Point");
//   std::any value;
//   absl::Status s = info->decode(bytes, &value);  // std::any_cast<my::Point>(value)
#ifndef SLUICE_OPS_ELEMENT_TYPE_REGISTRY_H_
#define SLUICE_OPS_ELEMENT_TYPE_REGISTRY_H_

#include <any>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeindex>
#include <typeinfo>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sluice/export.h"
#include "sluice/ops/element_codec.h"
#include "sluice/ops/element_type.h"

namespace sluice {

struct ElementTypeInfo {
  std::string name;
  std::type_index type;
  bool has_codec = false;
  absl::Status (*encode)(const std::any& value, std::string* out) = nullptr;
  absl::Status (*decode)(std::string_view bytes, std::any* value) = nullptr;
};

// Adds `info`. InvalidArgument for an empty name; AlreadyExists when the name is registered for another
// type; OK (and nothing changes) when it is registered for the same type.
SLUICE_EXPORT absl::Status RegisterElementType(ElementTypeInfo info);

// The record registered under `name`, or nullptr.
SLUICE_EXPORT const ElementTypeInfo* FindElementType(std::string_view name);

// Every registered name, sorted (for error messages and tooling).
SLUICE_EXPORT std::vector<std::string> RegisteredElementTypeNames();

namespace element_type_detail {

template <class T>
inline constexpr bool kErasable = HasElementCodec<T> && std::is_copy_constructible_v<T> &&
                                  std::is_default_constructible_v<T>;

template <class T>
absl::Status EncodeAny(const std::any& value, std::string* out) {
  if constexpr (kErasable<T>) {
    const T* typed = std::any_cast<T>(&value);
    if (typed == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("element type ", ElementTypeName<T>(), ": the value holds another type"));
    }
    EncodeElement(*typed, out);
    return absl::OkStatus();
  } else {
    (void)value;
    (void)out;
    return absl::UnimplementedError(absl::StrCat("element type ", ElementTypeName<T>(), " cannot be encoded"));
  }
}

template <class T>
absl::Status DecodeAny(std::string_view bytes, std::any* value) {
  if constexpr (kErasable<T>) {
    T decoded{};
    if (absl::Status s = DecodeElement(bytes, &decoded); !s.ok()) return s;
    *value = std::move(decoded);
    return absl::OkStatus();
  } else {
    (void)bytes;
    (void)value;
    return absl::UnimplementedError(absl::StrCat("element type ", ElementTypeName<T>(), " cannot be decoded"));
  }
}

// Registers or aborts with a message naming the conflict: see SLUICE_REGISTER_ELEMENT_TYPE.
SLUICE_EXPORT bool RegisterAtStartup(ElementTypeInfo info);

}  // namespace element_type_detail

// The record for T (not registered).
template <class T>
ElementTypeInfo MakeElementTypeInfo() {
  return ElementTypeInfo{ElementTypeName<T>(), std::type_index(typeid(T)), element_type_detail::kErasable<T>,
                         &element_type_detail::EncodeAny<T>, &element_type_detail::DecodeAny<T>};
}

template <class T>
absl::Status RegisterElementType() {
  return RegisterElementType(MakeElementTypeInfo<T>());
}

}  // namespace sluice

#endif  // SLUICE_OPS_ELEMENT_TYPE_REGISTRY_H_
