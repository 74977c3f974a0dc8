// Tensor: a typed, shaped, reference-counted n-dimensional array.
//
// Contract:
// - Elements: one of the DType element types below, stored densely in row-major (C) order.
//   kString elements are std::string objects living in the buffer; every other dtype is plain data.
// - Buffer: owned, allocated with 64-byte alignment (cache line / AVX-512 friendly) and shared by a
//   reference count; freed buffers are recycled by size class (io/tensor_buffer_pool.h). Copying a Tensor
//   is shallow (it shares the buffer, like tensorflow::Tensor); moving it is a few word copies and never
//   allocates. Clone() makes a deep copy.
// - Views: Slice() along dim 0 and Reshape() return Tensors sharing the same buffer (zero copy). A slice's
//   data() is aligned only as far as its byte offset allows; a freshly allocated tensor's data() is
//   64-byte aligned (also for zero elements).
// - Writes through data()/span() on one tensor are visible through every tensor sharing the buffer.
// - Errors: Slice()/Reshape() with bad arguments return InvalidArgument. Asking for data<T>() with a T
//   that does not match dtype() is a programming error and aborts with a message.
// - Threading: a Tensor is a value type; concurrent reads are fine, concurrent writes to a shared buffer
//   must be synchronised by the caller. The reference count itself is thread-safe.
//
//   Tensor t = Tensor::Zeros(DType::kFloat32, Shape({2, 3}));
//   t.span<float>()[4] = 1.5f;
//   Tensor row = *t.Slice(1, 2);           // shape [1, 3], shares t's buffer
//   Tensor flat = *t.Reshape(Shape({6}));  // shape [6], shares t's buffer
//   Tensor names = Tensor::FromVector<std::string>({"a", "b"});
#ifndef SLUICE_IO_TENSOR_H_
#define SLUICE_IO_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "sluice/export.h"
#include "sluice/io/shape.h"

namespace sluice {

// Element type. kString holds arbitrary bytes (tf.string). The values are stable (the element codec and
// cache files store them): new dtypes go at the end.
enum class DType : uint8_t {
  kBool,
  kUInt8,
  kInt32,
  kInt64,
  kFloat16,
  kFloat32,
  kFloat64,
  kString,
  kBFloat16
};
inline constexpr DType kLastDType = DType::kBFloat16;

// Bytes per element in the buffer (sizeof(std::string) for kString).
SLUICE_EXPORT size_t DTypeSize(DType dtype);
// TensorFlow's name for the dtype: "bool", "uint8", "int32", "int64", "half", "float", "double", "string",
// "bfloat16".
SLUICE_EXPORT std::string_view DTypeName(DType dtype);

// IEEE 754 binary16, stored as bits. Conversions round to nearest even and keep inf/NaN.
struct Half {
  uint16_t bits = 0;
  friend bool operator==(Half a, Half b) { return a.bits == b.bits; }
};
SLUICE_EXPORT Half FloatToHalf(float value);
SLUICE_EXPORT float HalfToFloat(Half value);

// bfloat16 (tf.bfloat16): the upper 16 bits of a float32, stored as bits. FloatToBFloat16 rounds to
// nearest even as TensorFlow does (so large finite values can round to inf) and keeps NaN a quiet NaN;
// BFloat16ToFloat is exact.
struct BFloat16 {
  uint16_t bits = 0;
  friend bool operator==(BFloat16 a, BFloat16 b) { return a.bits == b.bits; }
};
SLUICE_EXPORT BFloat16 FloatToBFloat16(float value);
SLUICE_EXPORT float BFloat16ToFloat(BFloat16 value);

// The C++ element type for each DType: DTypeOf<float>::value == DType::kFloat32, etc.
template <class T>
struct DTypeOf;
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::kBool;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::kUInt8;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::kInt32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::kInt64;
};
template <>
struct DTypeOf<Half> {
  static constexpr DType value = DType::kFloat16;
};
template <>
struct DTypeOf<BFloat16> {
  static constexpr DType value = DType::kBFloat16;
};
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kFloat32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::kFloat64;
};
template <>
struct DTypeOf<std::string> {
  static constexpr DType value = DType::kString;
};

namespace detail {
// The shared, 64-byte aligned allocation behind one or more Tensors: an intrusive reference count and the
// elements in one block, so making a tensor costs one allocation.
class TensorBuffer;
}  // namespace detail

class SLUICE_EXPORT Tensor {
 public:
  static constexpr size_t kAlignment = 64;

  // An empty float tensor of shape [0] with no buffer.
  Tensor();

  // A tensor with uninitialised numeric elements (strings are empty). Fastest; fill it before reading.
  // An invalid shape (negative dim, overflow) yields a tensor of shape [0]; check with Shape::IsValid().
  static Tensor Empty(DType dtype, Shape shape);
  // A tensor with every element zero / false / empty string.
  static Tensor Zeros(DType dtype, Shape shape);
  // A rank-1 tensor of shape [values.size()] holding a copy of `values`.
  template <class T>
  static Tensor FromVector(std::span<const T> values);
  template <class T>
  static Tensor FromVector(std::initializer_list<T> values) {
    return FromVector<T>(std::span<const T>(values.begin(), values.size()));
  }
  template <class T>
  static Tensor FromVector(const std::vector<T>& values) {
    return FromVector<T>(std::span<const T>(values.data(), values.size()));
  }
  // A rank-0 tensor.
  template <class T>
  static Tensor Scalar(T value) {
    Tensor t = Empty(DTypeOf<T>::value, Shape());
    t.data<T>()[0] = std::move(value);
    return t;
  }

  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor();

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t num_elements() const { return num_elements_; }
  // Bytes of element storage this tensor covers (num_elements * DTypeSize).
  size_t num_bytes() const { return static_cast<size_t>(num_elements_) * DTypeSize(dtype_); }

  // Typed access; T must be the dtype's element type (see DTypeOf) or this aborts.
  template <class T>
  T* data() {
    CheckType(DTypeOf<T>::value);
    return static_cast<T*>(raw_data());
  }
  template <class T>
  const T* data() const {
    CheckType(DTypeOf<T>::value);
    return static_cast<const T*>(raw_data());
  }
  template <class T>
  std::span<T> span() {
    return std::span<T>(data<T>(), static_cast<size_t>(num_elements_));
  }
  template <class T>
  std::span<const T> span() const {
    return std::span<const T>(data<T>(), static_cast<size_t>(num_elements_));
  }
  // Untyped element storage (nullptr for a default-constructed tensor).
  void* raw_data() const;

  // Rows [start, limit) along dim 0, sharing the buffer. Requires rank >= 1 and 0 <= start <= limit <=
  // dim(0).
  absl::StatusOr<Tensor> Slice(int64_t start, int64_t limit) const;
  // Row `index` along dim 0 with that dimension dropped (shape [d1, ...]), sharing the buffer.
  absl::StatusOr<Tensor> SubTensor(int64_t index) const;
  // The same elements viewed with another shape of equal element count, sharing the buffer.
  absl::StatusOr<Tensor> Reshape(Shape shape) const;
  // A deep copy into a fresh 64-byte aligned buffer.
  Tensor Clone() const;

  // True when both tensors view the same allocation (views, copies).
  bool SharesBufferWith(const Tensor& other) const;

  // Same dtype, shape and element values (floats compare by value, so NaN != NaN; halves by bits).
  friend SLUICE_EXPORT bool operator==(const Tensor& a, const Tensor& b);

  // "float[2,3] {0, 1.5, 0, ...}" showing at most `max_entries` elements.
  std::string DebugString(size_t max_entries = 16) const;

 private:
  // Takes over one reference to `buffer`.
  Tensor(DType dtype, Shape shape, detail::TensorBuffer* buffer, size_t offset);
  static void LeaveMovedFrom(Tensor& other) noexcept;
  void CheckType(DType requested) const;

  DType dtype_ = DType::kFloat32;
  Shape shape_;
  int64_t num_elements_ = 0;
  detail::TensorBuffer* buffer_ = nullptr;  // owns one reference; null for a default tensor
  size_t offset_ = 0;                       // byte offset of this view inside buffer_
};

template <class T>
Tensor Tensor::FromVector(std::span<const T> values) {
  Tensor t = Empty(DTypeOf<T>::value, Shape({static_cast<int64_t>(values.size())}));
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

}  // namespace sluice

#endif  // SLUICE_IO_TENSOR_H_
