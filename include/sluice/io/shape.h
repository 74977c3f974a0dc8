// Shape: the dimensions of a tensor; rank 0 is a scalar with one element.
//
// Contract:
// - Storage: ranks up to kInlineRank live inside the object, so making, copying and moving such a shape
//   never allocates; larger ranks keep their dimensions on the heap (moving still only swaps a pointer).
// - A moved-from shape is a valid scalar shape (rank 0).
// - dims() is a view of the dimensions, valid while the shape is alive and unchanged; it converts to a
//   std::vector<int64_t> where a copy is wanted.
// - Threading: a value type; concurrent reads are fine.
//
//   Shape s({2, 3});
//   int64_t rows = s.dim(0);
//   std::vector<int64_t> copy = s.dims();
#ifndef SLUICE_IO_SHAPE_H_
#define SLUICE_IO_SHAPE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "sluice/export.h"

namespace sluice {

// A read-only view of a shape's dimensions.
class ShapeDims : public std::span<const int64_t> {
 public:
  using std::span<const int64_t>::span;
  explicit ShapeDims(std::span<const int64_t> dims) : std::span<const int64_t>(dims) {}

  operator std::vector<int64_t>() const { return std::vector<int64_t>(begin(), end()); }
  friend bool operator==(ShapeDims a, ShapeDims b) { return std::ranges::equal(a, b); }
};

class SLUICE_EXPORT Shape {
 public:
  // Ranks stored without a heap allocation; batches of images ([B, H, W, C]) still fit.
  static constexpr size_t kInlineRank = 4;

  Shape() noexcept {}
  Shape(std::initializer_list<int64_t> dims) { Assign(std::span<const int64_t>(dims.begin(), dims.size())); }
  explicit Shape(std::span<const int64_t> dims) { Assign(dims); }
  explicit Shape(const std::vector<int64_t>& dims) { Assign(dims); }

  Shape(const Shape& other) { Assign(other.dims()); }
  Shape(Shape&& other) noexcept { TakeFrom(other); }
  Shape& operator=(const Shape& other);
  Shape& operator=(Shape&& other) noexcept;
  ~Shape() { Release(); }

  size_t rank() const { return rank_; }
  int64_t dim(size_t i) const { return data()[i]; }
  ShapeDims dims() const { return ShapeDims(data(), rank_); }
  // Requires i < rank().
  void set_dim(size_t i, int64_t value) { mutable_data()[i] = value; }
  // Product of the dimensions (1 for a scalar).
  int64_t num_elements() const;
  // True when every dimension is >= 0 and the element count fits in int64 without overflow.
  bool IsValid() const;
  // A new shape with `dim` in front: [dim, *this]. Used to stack per-record tensors into a batch.
  Shape Prepend(int64_t dim) const;
  // "[2,3]"; "[]" for a scalar.
  std::string DebugString() const;

  friend bool operator==(const Shape& a, const Shape& b) { return a.dims() == b.dims(); }

 private:
  bool is_inline() const { return rank_ <= kInlineRank; }
  const int64_t* data() const { return is_inline() ? inline_ : heap_; }
  int64_t* mutable_data() { return is_inline() ? inline_ : heap_; }
  // Requires an empty (released) shape.
  void Assign(std::span<const int64_t> dims);
  // Steals `other`'s dimensions, leaving it a scalar; requires this to be released.
  void TakeFrom(Shape& other) noexcept;
  void Release() noexcept;

  size_t rank_ = 0;
  union {
    int64_t inline_[kInlineRank] = {};
    int64_t* heap_;
  };
};

}  // namespace sluice

#endif  // SLUICE_IO_SHAPE_H_
