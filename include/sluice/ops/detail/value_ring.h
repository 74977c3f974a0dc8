// ValueRing<T>: a FIFO over storage it keeps. It grows by doubling when a push finds it full and never
// shrinks; a pop only moves the front index, leaving the value (normally moved from) in its cell until a
// later push assigns over it.
//
// Why not std::deque: a deque allocates a chunk every few pushes and frees it every few pops, on whichever
// thread crosses the chunk. Between an async op's workers and its consumer that is a malloc and a
// cross-thread free per few elements, under the op's lock; and a moved-from std::string handed back a
// buffer by libstdc++'s move assignment is freed right there too. Here, in steady state, a push and a pop
// neither allocate nor free: what the moved-from cell still holds goes back to the pusher's value by move
// assignment, and is freed by the pusher outside the lock.
//
// Threading: none of its own (the owner's lock guards it).
#ifndef SLUICE_OPS_DETAIL_VALUE_RING_H_
#define SLUICE_OPS_DETAIL_VALUE_RING_H_

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace sluice::ops::detail_ring {

template <class T>
class ValueRing {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Cells held: what the ring has grown to.
  size_t capacity() const { return cells_.size(); }
  // The k-th value from the front (k < size()).
  T& operator[](size_t k) { return cells_[Cell(k)]; }
  const T& operator[](size_t k) const { return cells_[Cell(k)]; }
  T& front() { return cells_[head_]; }

  void push_back(T&& value) {
    if (size_ == cells_.size()) Grow();
    cells_[Cell(size_)] = std::move(value);
    ++size_;
  }
  // A default value at the back.
  T& emplace_back() {
    if (size_ == cells_.size()) Grow();
    T& cell = cells_[Cell(size_)];
    Reset(&cell);
    ++size_;
    return cell;
  }
  // Drops the front from the FIFO; its cell keeps the value until a push reuses the cell.
  void pop_front() {
    head_ = Cell(1);
    --size_;
  }
  // Empties the FIFO and releases what every cell holds (live values and moved-from leftovers).
  void clear() {
    for (T& cell : cells_) Reset(&cell);
    head_ = 0;
    size_ = 0;
  }

 private:
  size_t Cell(size_t k) const {
    const size_t i = head_ + k;
    return i < cells_.size() ? i : i - cells_.size();
  }
  // In place, not by assigning a temporary (GCC 12 warns of an InlinedVector moved from a fresh one).
  static void Reset(T* cell) {
    std::destroy_at(cell);
    std::construct_at(cell);
  }
  void Grow() {
    std::vector<T> grown(cells_.empty() ? 4 : cells_.size() * 2);
    for (size_t k = 0; k < size_; ++k) grown[k] = std::move(cells_[Cell(k)]);
    cells_ = std::move(grown);
    head_ = 0;
  }

  std::vector<T> cells_;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace sluice::ops::detail_ring

#endif  // SLUICE_OPS_DETAIL_VALUE_RING_H_
