#include "sluice/io/tensor.h"

#include <atomic>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "io/tensor_buffer_pool.h"

namespace sluice {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return sizeof(bool);
    case DType::kUInt8:
      return 1;
    case DType::kInt32:
      return 4;
    case DType::kInt64:
      return 8;
    case DType::kFloat16:
      return 2;
    case DType::kFloat32:
      return 4;
    case DType::kFloat64:
      return 8;
    case DType::kString:
      return sizeof(std::string);
    case DType::kBFloat16:
      return 2;
  }
  return 0;
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return "bool";
    case DType::kUInt8:
      return "uint8";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kFloat16:
      return "half";
    case DType::kFloat32:
      return "float";
    case DType::kFloat64:
      return "double";
    case DType::kString:
      return "string";
    case DType::kBFloat16:
      return "bfloat16";
  }
  return "unknown";
}

Half FloatToHalf(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) {  // inf or NaN; keep NaN quiet and non-zero
    return Half{static_cast<uint16_t>(sign | 0x7c00u | (mant != 0 ? 0x200u | (mant >> 13) : 0u))};
  }
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 0x1f) return Half{static_cast<uint16_t>(sign | 0x7c00u)};
  if (e <= 0) {
    if (e < -10) return Half{static_cast<uint16_t>(sign)};
    mant |= 0x800000u;
    const int shift = 14 - e;
    uint32_t half_mant = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++half_mant;
    return Half{static_cast<uint16_t>(sign | half_mant)};
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  // A carry out of the mantissa correctly bumps the exponent (and reaches inf on overflow).
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return Half{static_cast<uint16_t>(half)};
}

float HalfToFloat(Half value) {
  const uint32_t h = value.bits;
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float magnitude = static_cast<float>(mant) * 0x1p-24f;  // exact: subnormal halves fit in float
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

BFloat16 FloatToBFloat16(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) {  // NaN: quiet, sign kept
    return BFloat16{static_cast<uint16_t>((x >> 16) | 0x0040u)};
  }
  // Round to nearest even on the 16 dropped bits; a carry reaches the exponent (and inf) as it should.
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return BFloat16{static_cast<uint16_t>((x + rounding) >> 16)};
}

float BFloat16ToFloat(BFloat16 value) {
  return std::bit_cast<float>(static_cast<uint32_t>(value.bits) << 16);
}

namespace detail {

// Layout of one allocation: [TensorBuffer header, padded to kAlignment][elements]. The block itself is
// kAlignment-aligned, so the elements are too.
class TensorBuffer {
 public:
  static constexpr size_t kHeaderBytes = Tensor::kAlignment;

  // Numeric payloads are left uninitialised unless `zero`; strings are always constructed because their
  // destructor must run.
  static TensorBuffer* Allocate(DType dtype, size_t count, bool zero) {
    void* block = AllocateTensorBlock(BlockBytes(dtype, count));
    auto* buffer = new (block) TensorBuffer(dtype, count);
    if (dtype == DType::kString) {
      auto* strings = static_cast<std::string*>(buffer->data());
      for (size_t i = 0; i < count; ++i) new (strings + i) std::string();
    } else if (zero && count > 0) {
      std::memset(buffer->data(), 0, count * DTypeSize(dtype));
    }
    return buffer;
  }

  void* data() { return reinterpret_cast<char*>(this) + kHeaderBytes; }

  // Copies only need the count to stay above zero: relaxed suffices.
  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }

  // acq_rel: the release publishes this owner's writes to the elements; the acquire by the last owner
  // makes every other owner's writes visible before the elements are destroyed.
  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (dtype_ == DType::kString) {
      auto* strings = static_cast<std::string*>(data());
      for (size_t i = 0; i < count_; ++i) strings[i].~basic_string();
    }
    const size_t block_bytes = BlockBytes(dtype_, count_);
    this->~TensorBuffer();
    FreeTensorBlock(this, block_bytes);
  }

 private:
  static size_t BlockBytes(DType dtype, size_t count) { return kHeaderBytes + count * DTypeSize(dtype); }

  TensorBuffer(DType dtype, size_t count) : dtype_(dtype), count_(count) {}
  ~TensorBuffer() = default;

  std::atomic<int64_t> refs_{1};
  DType dtype_;
  size_t count_;
};

static_assert(sizeof(TensorBuffer) <= TensorBuffer::kHeaderBytes);
static_assert(kTensorBlockAlignment == Tensor::kAlignment);

}  // namespace detail

Tensor::Tensor() : shape_({0}) {}

Tensor::Tensor(DType dtype, Shape shape, detail::TensorBuffer* buffer, size_t offset)
    : dtype_(dtype),
      shape_(std::move(shape)),
      num_elements_(shape_.num_elements()),
      buffer_(buffer),
      offset_(offset) {}

Tensor::Tensor(const Tensor& other)
    : dtype_(other.dtype_),
      shape_(other.shape_),
      num_elements_(other.num_elements_),
      buffer_(other.buffer_),
      offset_(other.offset_) {
  if (buffer_ != nullptr) buffer_->Ref();
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) {
    if (other.buffer_ != nullptr) other.buffer_->Ref();
    if (buffer_ != nullptr) buffer_->Unref();
    dtype_ = other.dtype_;
    shape_ = other.shape_;
    num_elements_ = other.num_elements_;
    buffer_ = other.buffer_;
    offset_ = other.offset_;
  }
  return *this;
}

// Leaves a moved-from tensor a valid empty one, shape [0], rather than one whose shape and element count
// disagree. A rank-1 shape is stored inline, so this never allocates.
void Tensor::LeaveMovedFrom(Tensor& other) noexcept {
  other.shape_ = Shape({0});
  other.num_elements_ = 0;
  other.offset_ = 0;
}

Tensor::Tensor(Tensor&& other) noexcept
    : dtype_(other.dtype_),
      shape_(std::move(other.shape_)),
      num_elements_(other.num_elements_),
      buffer_(std::exchange(other.buffer_, nullptr)),
      offset_(other.offset_) {
  LeaveMovedFrom(other);
}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this != &other) {
    if (buffer_ != nullptr) buffer_->Unref();
    dtype_ = other.dtype_;
    shape_ = std::move(other.shape_);
    num_elements_ = other.num_elements_;
    buffer_ = std::exchange(other.buffer_, nullptr);
    offset_ = other.offset_;
    LeaveMovedFrom(other);
  }
  return *this;
}

Tensor::~Tensor() {
  if (buffer_ != nullptr) buffer_->Unref();
}

namespace {

// Shapes whose byte size would overflow size_t count as invalid too.
bool AllocatableShape(DType dtype, const Shape& shape) {
  if (!shape.IsValid()) return false;
  const uint64_t count = static_cast<uint64_t>(shape.num_elements());
  return count <= (std::numeric_limits<size_t>::max() - 2 * Tensor::kAlignment) / DTypeSize(dtype);
}

}  // namespace

Tensor Tensor::Empty(DType dtype, Shape shape) {
  if (!AllocatableShape(dtype, shape)) shape = Shape({0});
  const size_t count = static_cast<size_t>(shape.num_elements());
  detail::TensorBuffer* buffer = detail::TensorBuffer::Allocate(dtype, count, /*zero=*/false);
  return Tensor(dtype, std::move(shape), buffer, 0);
}

Tensor Tensor::Zeros(DType dtype, Shape shape) {
  if (!AllocatableShape(dtype, shape)) shape = Shape({0});
  const size_t count = static_cast<size_t>(shape.num_elements());
  detail::TensorBuffer* buffer = detail::TensorBuffer::Allocate(dtype, count, /*zero=*/true);
  return Tensor(dtype, std::move(shape), buffer, 0);
}

void* Tensor::raw_data() const {
  if (buffer_ == nullptr) return nullptr;
  return static_cast<char*>(buffer_->data()) + offset_;
}

void Tensor::CheckType(DType requested) const {
  if (requested != dtype_) {
    // A crash path: straight to stderr, whatever the log level and sink (see sluice/engine/log.h).
    std::fprintf(stderr, "sluice::Tensor: element type %s requested from a %s tensor\n",
                 std::string(DTypeName(requested)).c_str(), std::string(DTypeName(dtype_)).c_str());
    std::abort();
  }
}

absl::StatusOr<Tensor> Tensor::Slice(int64_t start, int64_t limit) const {
  if (shape_.rank() == 0) return absl::InvalidArgumentError("Tensor::Slice: cannot slice a scalar");
  const int64_t rows = shape_.dim(0);
  if (start < 0 || start > limit || limit > rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("Tensor::Slice: range [", start, ", ", limit, ") is outside dim 0 of size ", rows));
  }
  Shape dims = shape_;
  dims.set_dim(0, limit - start);
  const int64_t row_elements = rows == 0 ? 0 : num_elements_ / rows;
  const size_t offset = offset_ + static_cast<size_t>(start * row_elements) * DTypeSize(dtype_);
  if (buffer_ != nullptr) buffer_->Ref();  // the view owns its own reference
  return Tensor(dtype_, Shape(std::move(dims)), buffer_, offset);
}

absl::StatusOr<Tensor> Tensor::SubTensor(int64_t index) const {
  absl::StatusOr<Tensor> row = Slice(index, index + 1);
  if (!row.ok()) return row.status();
  if (index >= shape_.dim(0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Tensor::SubTensor: index ", index, " is outside dim 0 of size ", shape_.dim(0)));
  }
  Tensor& view = *row;
  view.shape_ = Shape(shape_.dims().subspan(1));
  return std::move(view);
}

absl::StatusOr<Tensor> Tensor::Reshape(Shape shape) const {
  if (!shape.IsValid() || shape.num_elements() != num_elements_) {
    return absl::InvalidArgumentError(absl::StrCat("Tensor::Reshape: cannot view ", num_elements_,
                                                   " elements of shape ", shape_.DebugString(), " as shape ",
                                                   shape.DebugString()));
  }
  Tensor view = *this;
  view.shape_ = std::move(shape);
  return view;
}

Tensor Tensor::Clone() const {
  Tensor copy = Empty(dtype_, shape_);
  if (num_elements_ == 0) return copy;
  if (dtype_ == DType::kString) {
    const auto* src = static_cast<const std::string*>(raw_data());
    auto* dst = static_cast<std::string*>(copy.raw_data());
    for (int64_t i = 0; i < num_elements_; ++i) dst[i] = src[i];
  } else {
    std::memcpy(copy.raw_data(), raw_data(), num_bytes());
  }
  return copy;
}

bool Tensor::SharesBufferWith(const Tensor& other) const {
  return buffer_ != nullptr && buffer_ == other.buffer_;
}

namespace {

template <class T>
bool ElementsEqual(const Tensor& a, const Tensor& b) {
  const T* x = a.data<T>();
  const T* y = b.data<T>();
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    if (!(x[i] == y[i])) return false;
  }
  return true;
}

template <class T>
void AppendElements(const Tensor& t, size_t n, std::string* out) {
  const T* x = t.data<T>();
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) absl::StrAppend(out, ", ");
    if constexpr (std::is_same_v<T, std::string>) {
      absl::StrAppend(out, "\"", absl::CHexEscape(x[i]), "\"");
    } else if constexpr (std::is_same_v<T, Half>) {
      absl::StrAppend(out, HalfToFloat(x[i]));
    } else if constexpr (std::is_same_v<T, BFloat16>) {
      absl::StrAppend(out, BFloat16ToFloat(x[i]));
    } else if constexpr (std::is_same_v<T, bool>) {
      absl::StrAppend(out, x[i] ? "true" : "false");
    } else if constexpr (std::is_same_v<T, uint8_t>) {
      absl::StrAppend(out, static_cast<int>(x[i]));
    } else {
      absl::StrAppend(out, x[i]);
    }
  }
}

}  // namespace

bool operator==(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || !(a.shape() == b.shape())) return false;
  if (a.num_elements() == 0) return true;
  switch (a.dtype()) {
    case DType::kBool:
      return ElementsEqual<bool>(a, b);
    case DType::kUInt8:
      return ElementsEqual<uint8_t>(a, b);
    case DType::kInt32:
      return ElementsEqual<int32_t>(a, b);
    case DType::kInt64:
      return ElementsEqual<int64_t>(a, b);
    case DType::kFloat16:
      return ElementsEqual<Half>(a, b);
    case DType::kFloat32:
      return ElementsEqual<float>(a, b);
    case DType::kFloat64:
      return ElementsEqual<double>(a, b);
    case DType::kString:
      return ElementsEqual<std::string>(a, b);
    case DType::kBFloat16:
      return ElementsEqual<BFloat16>(a, b);
  }
  return false;
}

std::string Tensor::DebugString(size_t max_entries) const {
  std::string out = absl::StrCat(std::string(DTypeName(dtype_)), shape_.DebugString(), " {");
  const size_t total = static_cast<size_t>(num_elements_);
  const size_t n = total < max_entries ? total : max_entries;
  if (n > 0) {
    switch (dtype_) {
      case DType::kBool:
        AppendElements<bool>(*this, n, &out);
        break;
      case DType::kUInt8:
        AppendElements<uint8_t>(*this, n, &out);
        break;
      case DType::kInt32:
        AppendElements<int32_t>(*this, n, &out);
        break;
      case DType::kInt64:
        AppendElements<int64_t>(*this, n, &out);
        break;
      case DType::kFloat16:
        AppendElements<Half>(*this, n, &out);
        break;
      case DType::kFloat32:
        AppendElements<float>(*this, n, &out);
        break;
      case DType::kFloat64:
        AppendElements<double>(*this, n, &out);
        break;
      case DType::kString:
        AppendElements<std::string>(*this, n, &out);
        break;
      case DType::kBFloat16:
        AppendElements<BFloat16>(*this, n, &out);
        break;
    }
  }
  if (n < total) absl::StrAppend(&out, ", ...");
  absl::StrAppend(&out, "}");
  return out;
}

}  // namespace sluice
