// ElementCodec<T>: a compact binary encoding of dataset elements, for the file-backed Cache and the data
// service's wire format.
//
// Contract:
// - ElementCodec<T>::Encode(value, &out) appends the encoding of `value` to `out` (never clears it).
//   ElementCodec<T>::Decode(&in, &value) reads one value from the front of `in`, advances `in` past it and
//   returns OK, or returns DataLoss (naming the type and what was wrong) and leaves `in` unspecified.
//   Decode never crashes, never reads outside `in` and never allocates more than the input could
//   describe, whatever the bytes (a count or size is checked against the bytes left before anything is
//   reserved), so it is safe to feed untrusted or corrupt input and to fuzz.
// - Supported: arithmetic types other than long double (fixed width, little-endian; bool is one byte
//   that must be 0 or 1), Half, std::string, Tensor (dtype, shape, then the elements; string tensors
//   element by element), ParsedExample (its fixed tensors, then each var feature's values and row
//   lengths, then its feature names when it has them), absl::Status (code, message and payloads),
//   absl::StatusOr<U> (errors are elements, so they cross the wire and are saved like values),
//   std::vector<U>, std::pair<A, B>, std::tuple<...> and std::optional<U> of supported types. Add a type by
//   specialising ElementCodec for it (in namespace sluice) with the same two static members.
// - HasElementCodec<T> is true when ElementCodec<T> exists for T (and, for containers, for everything
//   inside); code that needs serialisation (the file Cache) requires it with a static_assert.
// - EncodeElement / DecodeElement wrap one whole value: DecodeElement rejects trailing bytes.
// - Speed: lengths are LEB128 varints; vectors of arithmetic types and numeric tensors are one memcpy;
//   Decode reuses the output's storage (assign / resize), so decoding into a reused value allocates
//   only where the output must grow.
// - The encoding is stable across runs of the same build and platform-independent (little-endian on
//   the wire). An element carries no type tag or version: a stream of elements starts with one
//   ElementStreamHeader (below), which names the element type and the format version, so a reader of the
//   wrong type gets a FailedPrecondition naming both types instead of DataLoss from the first element.
// - Threading: stateless; every function is safe to call concurrently.
//
//   std::string bytes;
//   EncodeElement(std::make_pair(int64_t{7}, std::string("seven")), &bytes);
//   std::pair<int64_t, std::string> back;
//   absl::Status s = DecodeElement(bytes, &back);  // OK, back == {7, "seven"}
//
//   std::string stream;
//   EncodeElementStreamHeader<Tensor>(&stream);     // a writer, once
//   std::string_view in = stream;
//   s = CheckElementStreamHeader<std::vector<int64_t>>(&in);
//   // FailedPrecondition: "element stream holds Tensor, reader expects vector<int64>"
#ifndef SLUICE_OPS_ELEMENT_CODEC_H_
#define SLUICE_OPS_ELEMENT_CODEC_H_

#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "sluice/io/example.h"
#include "sluice/io/tensor.h"
#include "sluice/ops/element_type.h"

namespace sluice {

// Specialised per supported type; the primary template is deliberately undefined.
template <class T, class Enable = void>
struct ElementCodec;

template <class T>
concept HasElementCodec = requires(const T& value, std::string* out, std::string_view* in, T* decoded) {
  ElementCodec<T>::Encode(value, out);
  { ElementCodec<T>::Decode(in, decoded) } -> std::same_as<absl::Status>;
};

namespace codec_detail {

inline absl::Status Truncated(std::string_view what) {
  return absl::DataLossError(
      absl::StrCat("ElementCodec: truncated input while decoding ", absl::string_view(what.data(), what.size())));
}

// Fixed-width little-endian integers.
template <class U>
inline void PutFixed(U value, std::string* out) {
  static_assert(std::is_trivially_copyable_v<U>);
  char bytes[sizeof(U)];
  std::memcpy(bytes, &value, sizeof(U));
  if constexpr (std::endian::native == std::endian::big && sizeof(U) > 1) {
    for (size_t i = 0; i < sizeof(U) / 2; ++i) std::swap(bytes[i], bytes[sizeof(U) - 1 - i]);
  }
  out->append(bytes, sizeof(U));
}

template <class U>
inline bool GetFixed(std::string_view* in, U* value) {
  if (in->size() < sizeof(U)) return false;
  char bytes[sizeof(U)];
  std::memcpy(bytes, in->data(), sizeof(U));
  if constexpr (std::endian::native == std::endian::big && sizeof(U) > 1) {
    for (size_t i = 0; i < sizeof(U) / 2; ++i) std::swap(bytes[i], bytes[sizeof(U) - 1 - i]);
  }
  std::memcpy(value, bytes, sizeof(U));
  in->remove_prefix(sizeof(U));
  return true;
}

inline void PutVarint(uint64_t value, std::string* out) {
  char bytes[10];
  size_t n = 0;
  while (value >= 0x80) {
    bytes[n++] = static_cast<char>(value | 0x80);
    value >>= 7;
  }
  bytes[n++] = static_cast<char>(value);
  out->append(bytes, n);
}

inline void PutString(std::string_view value, std::string* out) {
  PutVarint(value.size(), out);
  out->append(value.data(), value.size());
}

// False on truncation or on a varint longer than 64 bits.
inline bool GetVarint(std::string_view* in, uint64_t* value) {
  uint64_t result = 0;
  for (size_t i = 0; i < in->size() && i < 10; ++i) {
    uint64_t byte = static_cast<unsigned char>((*in)[i]);
    if (i == 9 && byte > 1) return false;  // bits beyond 64
    result |= (byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      in->remove_prefix(i + 1);
      *value = result;
      return true;
    }
  }
  return false;
}

// The fewest bytes any encoded T takes: bounds how many elements a count may claim.
template <class T>
inline constexpr size_t kMinBytes = 1;
template <class... Ts>
inline constexpr size_t kMinBytes<std::tuple<Ts...>> = (size_t{0} + ... + kMinBytes<Ts>);
template <class A, class B>
inline constexpr size_t kMinBytes<std::pair<A, B>> = kMinBytes<A> + kMinBytes<B>;

// Values whose encoding takes no bytes (empty tuples) cannot be bounded by the input size; cap them.
inline constexpr uint64_t kMaxZeroSizeCount = uint64_t{1} << 20;

// Reads a count of elements each at least `min_bytes` long; DataLoss when the input cannot hold them.
inline absl::Status GetCount(std::string_view* in, size_t min_bytes, std::string_view what, uint64_t* count) {
  if (!GetVarint(in, count)) return Truncated(what);
  uint64_t limit = min_bytes == 0 ? kMaxZeroSizeCount : in->size() / min_bytes;
  if (*count > limit) {
    return absl::DataLossError(absl::StrCat("ElementCodec: ", absl::string_view(what.data(), what.size()),
                                            " claims ", *count, " elements but only ", in->size(),
                                            " bytes remain"));
  }
  return absl::OkStatus();
}

template <class T>
inline constexpr bool kIsPlainArithmetic =
    std::is_arithmetic_v<T> && !std::is_same_v<T, long double> && !std::is_same_v<T, bool>;

}  // namespace codec_detail

// Integers and floating point (not bool, not long double): fixed width, little-endian.
template <class T>
struct ElementCodec<T, std::enable_if_t<codec_detail::kIsPlainArithmetic<T>>> {
  static void Encode(const T& value, std::string* out) { codec_detail::PutFixed(value, out); }
  static absl::Status Decode(std::string_view* in, T* value) {
    if (!codec_detail::GetFixed(in, value)) return codec_detail::Truncated("an arithmetic value");
    return absl::OkStatus();
  }
};

template <>
struct ElementCodec<bool> {
  static void Encode(const bool& value, std::string* out) { out->push_back(value ? '\1' : '\0'); }
  static absl::Status Decode(std::string_view* in, bool* value) {
    if (in->empty()) return codec_detail::Truncated("a bool");
    char byte = in->front();
    if (byte != 0 && byte != 1) return absl::DataLossError("ElementCodec: a bool byte is neither 0 nor 1");
    *value = byte == 1;
    in->remove_prefix(1);
    return absl::OkStatus();
  }
};

// The 16-bit floats (Half, BFloat16): their bits.
template <class T>
requires std::same_as<T, Half> || std::same_as<T, BFloat16>
struct ElementCodec<T> {
  static void Encode(const T& value, std::string* out) { codec_detail::PutFixed(value.bits, out); }
  static absl::Status Decode(std::string_view* in, T* value) {
    if (!codec_detail::GetFixed(in, &value->bits))
      return codec_detail::Truncated(DTypeName(DTypeOf<T>::value));
    return absl::OkStatus();
  }
};

template <>
struct ElementCodec<std::string> {
  static void Encode(const std::string& value, std::string* out) {
    codec_detail::PutVarint(value.size(), out);
    out->append(value);
  }
  static absl::Status Decode(std::string_view* in, std::string* value) {
    uint64_t size = 0;
    if (!codec_detail::GetVarint(in, &size) || size > in->size()) return codec_detail::Truncated("a string");
    value->assign(in->data(), static_cast<size_t>(size));
    in->remove_prefix(static_cast<size_t>(size));
    return absl::OkStatus();
  }
};

template <class U>
  requires HasElementCodec<U>
struct ElementCodec<std::vector<U>> {
  static void Encode(const std::vector<U>& value, std::string* out) {
    codec_detail::PutVarint(value.size(), out);
    if constexpr (codec_detail::kIsPlainArithmetic<U> && std::endian::native == std::endian::little) {
      out->append(reinterpret_cast<const char*>(value.data()), value.size() * sizeof(U));
    } else {
      for (const U& x : value) ElementCodec<U>::Encode(x, out);
    }
  }
  static absl::Status Decode(std::string_view* in, std::vector<U>* value) {
    uint64_t count = 0;
    if (absl::Status s = codec_detail::GetCount(in, codec_detail::kMinBytes<U>, "a vector", &count); !s.ok()) {
      return s;
    }
    if constexpr (codec_detail::kIsPlainArithmetic<U> && std::endian::native == std::endian::little) {
      size_t bytes = static_cast<size_t>(count) * sizeof(U);
      if (bytes > in->size()) return codec_detail::Truncated("a vector");
      value->resize(static_cast<size_t>(count));
      if (bytes > 0) std::memcpy(value->data(), in->data(), bytes);
      in->remove_prefix(bytes);
    } else if constexpr (std::is_same_v<U, bool>) {
      value->clear();
      value->reserve(static_cast<size_t>(count));
      for (uint64_t i = 0; i < count; ++i) {
        bool x = false;
        if (absl::Status s = ElementCodec<bool>::Decode(in, &x); !s.ok()) return s;
        value->push_back(x);
      }
    } else {
      static_assert(std::is_default_constructible_v<U>, "ElementCodec: vector elements must be default-constructible");
      value->resize(static_cast<size_t>(count));
      for (U& x : *value) {
        if (absl::Status s = ElementCodec<U>::Decode(in, &x); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }
};

template <class A, class B>
  requires HasElementCodec<A> && HasElementCodec<B>
struct ElementCodec<std::pair<A, B>> {
  static void Encode(const std::pair<A, B>& value, std::string* out) {
    ElementCodec<A>::Encode(value.first, out);
    ElementCodec<B>::Encode(value.second, out);
  }
  static absl::Status Decode(std::string_view* in, std::pair<A, B>* value) {
    if (absl::Status s = ElementCodec<A>::Decode(in, &value->first); !s.ok()) return s;
    return ElementCodec<B>::Decode(in, &value->second);
  }
};

template <class... Ts>
  requires(HasElementCodec<Ts> && ...)
struct ElementCodec<std::tuple<Ts...>> {
  static void Encode(const std::tuple<Ts...>& value, std::string* out) {
    (void)out;  // unused for the empty tuple
    std::apply([&](const Ts&... xs) { (ElementCodec<Ts>::Encode(xs, out), ...); }, value);
  }
  static absl::Status Decode(std::string_view* in, std::tuple<Ts...>* value) {
    absl::Status status;
    // Stops at the first failure: && short-circuits the fold.
    (void)in;
    std::apply([&](Ts&... xs) { (void)(((status = ElementCodec<Ts>::Decode(in, &xs)).ok()) && ...); }, *value);
    return status;
  }
};

template <class U>
  requires HasElementCodec<U>
struct ElementCodec<std::optional<U>> {
  static void Encode(const std::optional<U>& value, std::string* out) {
    out->push_back(value.has_value() ? '\1' : '\0');
    if (value) ElementCodec<U>::Encode(*value, out);
  }
  static absl::Status Decode(std::string_view* in, std::optional<U>* value) {
    if (in->empty()) return codec_detail::Truncated("an optional");
    char tag = in->front();
    in->remove_prefix(1);
    if (tag == 0) {
      value->reset();
      return absl::OkStatus();
    }
    if (tag != 1) return absl::DataLossError("ElementCodec: an optional's tag is neither 0 nor 1");
    if (!value->has_value()) value->emplace();
    return ElementCodec<U>::Decode(in, &**value);
  }
};

// Tensor: dtype byte, rank varint, dims varints, then the elements (numeric: raw little-endian bytes;
// bool: one 0/1 byte each; string: varint length + bytes each).
template <>
struct ElementCodec<Tensor> {
  static constexpr uint64_t kMaxRank = 254;

  static void Encode(const Tensor& value, std::string* out) {
    out->push_back(static_cast<char>(value.dtype()));
    const std::vector<int64_t>& dims = value.shape().dims();
    codec_detail::PutVarint(dims.size(), out);
    for (int64_t d : dims) codec_detail::PutVarint(static_cast<uint64_t>(d), out);
    if (value.num_elements() == 0) return;
    if (value.dtype() == DType::kString) {
      for (const std::string& s : value.span<std::string>()) ElementCodec<std::string>::Encode(s, out);
    } else {
      static_assert(std::endian::native == std::endian::little, "Tensor encoding assumes a little-endian host");
      out->append(static_cast<const char*>(value.raw_data()), value.num_bytes());
    }
  }

  static absl::Status Decode(std::string_view* in, Tensor* value) {
    if (in->empty()) return codec_detail::Truncated("a tensor");
    uint8_t dtype_byte = static_cast<uint8_t>(in->front());
    if (dtype_byte > static_cast<uint8_t>(kLastDType)) {
      return absl::DataLossError(absl::StrCat("ElementCodec: unknown tensor dtype ", dtype_byte));
    }
    in->remove_prefix(1);
    DType dtype = static_cast<DType>(dtype_byte);
    uint64_t rank = 0;
    if (!codec_detail::GetVarint(in, &rank)) return codec_detail::Truncated("a tensor's rank");
    if (rank > kMaxRank || rank > in->size()) {
      return absl::DataLossError(absl::StrCat("ElementCodec: tensor rank ", rank, " is not plausible"));
    }
    std::vector<int64_t> dims(static_cast<size_t>(rank));
    for (int64_t& d : dims) {
      uint64_t dim = 0;
      if (!codec_detail::GetVarint(in, &dim)) return codec_detail::Truncated("a tensor's shape");
      if (dim > static_cast<uint64_t>(INT64_MAX)) return absl::DataLossError("ElementCodec: tensor dim out of range");
      d = static_cast<int64_t>(dim);
    }
    // Every element takes at least one byte, so the count is bounded by the bytes left; checking the
    // product against that bound as it grows also rules out overflow.
    size_t element_bytes = dtype == DType::kString ? 1 : DTypeSize(dtype);
    uint64_t limit = in->size() / element_bytes;
    uint64_t elements = 1;
    bool any_zero = false;
    for (int64_t d : dims) any_zero |= d == 0;
    if (any_zero) {
      elements = 0;
    } else {
      for (int64_t d : dims) {
        if (elements > limit / static_cast<uint64_t>(d)) {
          return absl::DataLossError(absl::StrCat("ElementCodec: a tensor's shape claims more elements than the ",
                                                  in->size(), " bytes left"));
        }
        elements *= static_cast<uint64_t>(d);
      }
    }
    Tensor t = Tensor::Empty(dtype, Shape(std::move(dims)));
    if (elements == 0) {
      *value = std::move(t);
      return absl::OkStatus();
    }
    if (dtype == DType::kString) {
      for (std::string& s : t.span<std::string>()) {
        if (absl::Status st = ElementCodec<std::string>::Decode(in, &s); !st.ok()) return st;
      }
    } else {
      size_t bytes = t.num_bytes();
      if (bytes > in->size()) return codec_detail::Truncated("a tensor's elements");
      if (dtype == DType::kBool) {
        for (size_t i = 0; i < bytes; ++i) {
          if ((*in)[i] != 0 && (*in)[i] != 1) {
            return absl::DataLossError("ElementCodec: a bool tensor byte is not 0 or 1");
          }
        }
      }
      std::memcpy(t.raw_data(), in->data(), bytes);
      in->remove_prefix(bytes);
    }
    *value = std::move(t);
    return absl::OkStatus();
  }
};

// ParsedExample: the fixed tensors, then per var feature its values and row lengths, as vectors of
// tensors; then 0, or 1 and the fixed and var-len feature names as vectors of strings. The layout
// ParseExample guarantees (rank-1 values, int64 row lengths) is not checked: the codec carries any value
// faithfully, and decoding stays bounded by the input either way.
template <>
struct ElementCodec<VarLenValues> {
  static void Encode(const VarLenValues& value, std::string* out) {
    ElementCodec<Tensor>::Encode(value.values, out);
    ElementCodec<Tensor>::Encode(value.row_lengths, out);
  }
  static absl::Status Decode(std::string_view* in, VarLenValues* value) {
    if (absl::Status s = ElementCodec<Tensor>::Decode(in, &value->values); !s.ok()) return s;
    return ElementCodec<Tensor>::Decode(in, &value->row_lengths);
  }
};

template <>
struct ElementCodec<ParsedExample> {
  static void Encode(const ParsedExample& value, std::string* out) {
    ElementCodec<std::vector<Tensor>>::Encode(value.fixed, out);
    ElementCodec<std::vector<VarLenValues>>::Encode(value.var, out);
    codec_detail::PutVarint(value.names != nullptr ? 1 : 0, out);
    if (value.names != nullptr) {
      ElementCodec<std::vector<std::string>>::Encode(value.names->fixed, out);
      ElementCodec<std::vector<std::string>>::Encode(value.names->var, out);
    }
  }
  static absl::Status Decode(std::string_view* in, ParsedExample* value) {
    if (absl::Status s = ElementCodec<std::vector<Tensor>>::Decode(in, &value->fixed); !s.ok()) return s;
    if (absl::Status s = ElementCodec<std::vector<VarLenValues>>::Decode(in, &value->var); !s.ok()) return s;
    uint64_t has_names = 0;
    if (!codec_detail::GetVarint(in, &has_names))
      return codec_detail::Truncated("a parsed example's names flag");
    if (has_names > 1)
      return absl::DataLossError("ElementCodec: a parsed example's names flag is not 0 or 1");
    value->names = nullptr;
    if (has_names == 0) return absl::OkStatus();
    FeatureNames names;
    if (absl::Status s = ElementCodec<std::vector<std::string>>::Decode(in, &names.fixed); !s.ok()) return s;
    if (absl::Status s = ElementCodec<std::vector<std::string>>::Decode(in, &names.var); !s.ok()) return s;
    // Elements of one stream share a spec: the table decoded last on this thread is reused when equal.
    thread_local std::shared_ptr<const FeatureNames> last;
    if (last == nullptr || *last != names) last = std::make_shared<const FeatureNames>(std::move(names));
    value->names = last;
    return absl::OkStatus();
  }
};

// absl::Status: the code (varint); a non-OK status then has its message and its payloads (count, then
// type URL and bytes for each). Codes outside absl's canonical set are DataLoss.
template <>
struct ElementCodec<absl::Status> {
  static void Encode(const absl::Status& value, std::string* out) {
    codec_detail::PutVarint(static_cast<uint64_t>(value.code()), out);
    if (value.ok()) return;
    codec_detail::PutString(std::string_view(value.message().data(), value.message().size()), out);
    uint64_t payloads = 0;
    value.ForEachPayload([&](absl::string_view, const absl::Cord&) { ++payloads; });
    codec_detail::PutVarint(payloads, out);
    value.ForEachPayload([&](absl::string_view type_url, const absl::Cord& payload) {
      codec_detail::PutString(std::string_view(type_url.data(), type_url.size()), out);
      codec_detail::PutVarint(payload.size(), out);
      for (absl::string_view chunk : payload.Chunks()) out->append(chunk.data(), chunk.size());
    });
  }
  static absl::Status Decode(std::string_view* in, absl::Status* value) {
    uint64_t code = 0;
    if (!codec_detail::GetVarint(in, &code)) return codec_detail::Truncated("a status code");
    if (code > static_cast<uint64_t>(absl::StatusCode::kUnauthenticated)) {
      return absl::DataLossError(absl::StrCat("ElementCodec: unknown status code ", code));
    }
    if (code == 0) {
      *value = absl::OkStatus();
      return absl::OkStatus();
    }
    std::string message;
    if (absl::Status s = ElementCodec<std::string>::Decode(in, &message); !s.ok()) return s;
    absl::Status status(static_cast<absl::StatusCode>(code), message);
    uint64_t payloads = 0;
    // A payload takes at least two bytes: the lengths of its URL and of its bytes.
    if (absl::Status s = codec_detail::GetCount(in, 2, "a status's payloads", &payloads); !s.ok()) return s;
    std::string type_url;
    std::string payload;
    for (uint64_t i = 0; i < payloads; ++i) {
      if (absl::Status s = ElementCodec<std::string>::Decode(in, &type_url); !s.ok()) return s;
      if (absl::Status s = ElementCodec<std::string>::Decode(in, &payload); !s.ok()) return s;
      status.SetPayload(type_url, absl::Cord(payload));
    }
    *value = std::move(status);
    return absl::OkStatus();
  }
};

// absl::StatusOr<U>: tag byte 1 then the value, or 0 then the (non-OK) status.
template <class U>
  requires HasElementCodec<U>
struct ElementCodec<absl::StatusOr<U>> {
  static void Encode(const absl::StatusOr<U>& value, std::string* out) {
    out->push_back(value.ok() ? '\1' : '\0');
    if (value.ok()) {
      ElementCodec<U>::Encode(*value, out);
    } else {
      ElementCodec<absl::Status>::Encode(value.status(), out);
    }
  }
  static absl::Status Decode(std::string_view* in, absl::StatusOr<U>* value) {
    if (in->empty()) return codec_detail::Truncated("a StatusOr");
    char tag = in->front();
    in->remove_prefix(1);
    if (tag == 1) {
      static_assert(std::is_default_constructible_v<U>, "ElementCodec: StatusOr values must be default-constructible");
      if (!value->ok()) value->emplace();
      return ElementCodec<U>::Decode(in, &**value);
    }
    if (tag != 0) return absl::DataLossError("ElementCodec: a StatusOr's tag is neither 0 nor 1");
    absl::Status status;
    if (absl::Status s = ElementCodec<absl::Status>::Decode(in, &status); !s.ok()) return s;
    // absl::StatusOr cannot hold an OK status without a value.
    if (status.ok()) return absl::DataLossError("ElementCodec: a StatusOr's error is OK");
    *value = std::move(status);
    return absl::OkStatus();
  }
};

// Appends the encoding of one value to `out`.
template <class T>
  requires HasElementCodec<T>
void EncodeElement(const T& value, std::string* out) {
  ElementCodec<T>::Encode(value, out);
}

// Decodes exactly one value from `bytes`; trailing bytes are DataLoss.
template <class T>
  requires HasElementCodec<T>
absl::Status DecodeElement(std::string_view bytes, T* value) {
  if (absl::Status s = ElementCodec<T>::Decode(&bytes, value); !s.ok()) return s;
  if (!bytes.empty()) {
    return absl::DataLossError(absl::StrCat("ElementCodec: ", bytes.size(), " trailing bytes after the element"));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------------------
// The element stream header: "SLEL", the format version (varint), then the element type's name
// (ElementTypeName, varint length + bytes). A writer puts it once at the start of a stream of encoded
// elements (a cache file, a data-service connection); the reader checks it before decoding any element.
// - Not a header (bad magic, truncated): DataLoss.
// - Another format version: FailedPrecondition naming both versions (this build reads only its own).
// - Another element type: FailedPrecondition "element stream holds vector<int64>, reader expects Tensor".
//   Unnamed types ("") match only each other; a stream of them is as unchecked as before the header.

// Bumped whenever the encoding of any element type changes. 2: ParsedExample carries its feature names.
inline constexpr uint64_t kElementFormatVersion = 2;

inline void EncodeElementStreamHeader(std::string_view type_name, std::string* out) {
  out->append("SLEL", 4);
  codec_detail::PutVarint(kElementFormatVersion, out);
  codec_detail::PutString(type_name, out);
}

template <class T>
void EncodeElementStreamHeader(std::string* out) {
  EncodeElementStreamHeader(ElementTypeName<T>(), out);
}

// Reads the header from the front of `in` and advances past it.
inline absl::Status CheckElementStreamHeader(std::string_view* in, std::string_view expected_type_name) {
  if (in->size() < 4 || in->substr(0, 4) != "SLEL") {
    return absl::DataLossError("ElementCodec: not an element stream (no element stream header)");
  }
  in->remove_prefix(4);
  uint64_t version = 0;
  if (!codec_detail::GetVarint(in, &version)) return codec_detail::Truncated("an element stream header");
  if (version != kElementFormatVersion) {
    return absl::FailedPreconditionError(absl::StrCat("element stream has format version ", version,
                                                      ", this build reads only version ", kElementFormatVersion));
  }
  uint64_t size = 0;
  if (!codec_detail::GetVarint(in, &size) || size > in->size()) {
    return codec_detail::Truncated("an element stream header");
  }
  std::string_view type_name = in->substr(0, static_cast<size_t>(size));
  in->remove_prefix(static_cast<size_t>(size));
  if (type_name != expected_type_name) {
    auto describe = [](std::string_view name) {
      return name.empty() ? std::string("an unnamed element type") : std::string(name);
    };
    return absl::FailedPreconditionError(absl::StrCat("element stream holds ", describe(type_name),
                                                      ", reader expects ", describe(expected_type_name)));
  }
  return absl::OkStatus();
}

template <class T>
absl::Status CheckElementStreamHeader(std::string_view* in) {
  return CheckElementStreamHeader(in, ElementTypeName<T>());
}

}  // namespace sluice

#endif  // SLUICE_OPS_ELEMENT_CODEC_H_
