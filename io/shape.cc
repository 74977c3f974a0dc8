#include "sluice/io/shape.h"

#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice {

void Shape::Assign(std::span<const int64_t> dims) {
  if (dims.size() > kInlineRank) {
    heap_ = new int64_t[dims.size()];
    std::copy(dims.begin(), dims.end(), heap_);
  } else {
    std::copy(dims.begin(), dims.end(), inline_);
  }
  rank_ = dims.size();
}

void Shape::TakeFrom(Shape& other) noexcept {
  // Whole words, whichever member is live: a fixed-size copy the compiler keeps branch-free.
  std::memcpy(inline_, other.inline_, sizeof(inline_));
  rank_ = other.rank_;
  other.rank_ = 0;
}

void Shape::Release() noexcept {
  if (!is_inline()) delete[] heap_;
  rank_ = 0;
}

Shape& Shape::operator=(const Shape& other) {
  if (this == &other) return *this;
  if (!is_inline() && rank_ == other.rank_) {  // same heap size: reuse the block
    std::copy(other.heap_, other.heap_ + rank_, heap_);
    return *this;
  }
  Shape copy(other);  // may throw; *this is untouched then
  Release();
  TakeFrom(copy);
  return *this;
}

Shape& Shape::operator=(Shape&& other) noexcept {
  if (this == &other) return *this;
  Release();
  TakeFrom(other);
  return *this;
}

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims()) n *= d;
  return n;
}

bool Shape::IsValid() const {
  int64_t n = 1;
  for (int64_t d : dims()) {
    if (d < 0) return false;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return false;
    n *= d;
  }
  return true;
}

Shape Shape::Prepend(int64_t dim) const {
  Shape out;
  if (rank_ + 1 > kInlineRank) out.heap_ = new int64_t[rank_ + 1];
  int64_t* to = rank_ + 1 > kInlineRank ? out.heap_ : out.inline_;
  to[0] = dim;
  std::copy(data(), data() + rank_, to + 1);
  out.rank_ = rank_ + 1;
  return out;
}

std::string Shape::DebugString() const { return absl::StrCat("[", absl::StrJoin(dims(), ","), "]"); }

}  // namespace sluice
