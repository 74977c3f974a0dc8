// PerReplica<T>: one value per local replica of a MirroredStrategy (tf.distribute's PerReplica).
//
// Contract:
// - Holds exactly num_local_replicas values; value i belongs to local replica i (global replica id
//   worker_index * num_local_replicas + i). LocalResults() exposes them in that order, as
//   strategy.experimental_local_results does.
// - A plain value type: copyable when T is, no synchronisation of its own.
//
//   PerReplica<int> ids = strategy.DistributeValuesFromFunction([](const ValueContext& c) {
//     return c.replica_id_in_sync_group;
//   });
//   for (int id : ids.LocalResults()) { ... }
#ifndef SLUICE_DISTRIBUTE_PER_REPLICA_H_
#define SLUICE_DISTRIBUTE_PER_REPLICA_H_

#include <cstddef>
#include <utility>
#include <vector>

namespace sluice {

template <class T>
class PerReplica {
 public:
  using value_type = T;

  PerReplica() = default;
  explicit PerReplica(std::vector<T> values) : values_(std::move(values)) {}

  const std::vector<T>& LocalResults() const { return values_; }
  std::vector<T>& LocalResults() { return values_; }
  size_t size() const { return values_.size(); }
  T& operator[](size_t replica) { return values_[replica]; }
  const T& operator[](size_t replica) const { return values_[replica]; }
  auto begin() { return values_.begin(); }
  auto end() { return values_.end(); }
  auto begin() const { return values_.begin(); }
  auto end() const { return values_.end(); }

  friend bool operator==(const PerReplica& a, const PerReplica& b) { return a.values_ == b.values_; }

 private:
  std::vector<T> values_;
};

}  // namespace sluice

#endif  // SLUICE_DISTRIBUTE_PER_REPLICA_H_
