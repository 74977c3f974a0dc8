// IteratorState: everything random or stateful that one iterator keeps for the nodes of its pipeline, so
// that a definition (an OpNode graph) holds none and stays data another process can rebuild.
//
// Contract:
// - One object per iterator, reached through IteratorContext::state (sluice/ops/op_node.h); every stream
//   of the iterator, on any thread, uses the same one. Two iterators of one definition have two objects
//   and never perturb each other.
// - Per node it keeps: the seed drawn for an unseeded random op (drawn at its first use, nondeterministic,
//   the same for the rest of the iterator), the node's pass counter (the pass number each new pass gets:
//   first_pass(), first_pass() + 1, ... in the order the passes begin; a Repeat's epochs are passes), and
//   one op-specific resource (a memory Cache's contents).
// - A node is named by a NodeKey: its address plus, when the node is owned by a shared_ptr, a weak
//   reference to it. Nodes an Interleave's function builds per element die while their streams run, and
//   a new node may then take the same address; the weak reference tells the two apart, so the new node
//   starts afresh (as a new definition always did). Entries of destroyed nodes are dropped as new ones
//   arrive (amortised), so an iterator over millions of such inner datasets does not grow.
// - The plain-data part of an entry (NodeRecord: seed, next pass) is what a checkpoint saves per node
//   path (sluice/ops/node_path.h); resources are the op's to save (OpNode::SaveResource).
// - Threading: every member is thread-safe (one mutex; streams are made from pool threads too).
//
//   // In a node's MakeStream:
//   IteratorState& state = *context->state;
//   IteratorState::NodeKey key{this, this->weak_from_this()};
//   uint64_t seed = seeded_ ? seed_ : state.Seed(key);
//   uint64_t pass = state.BeginPass(key);   // 0 for the iterator's first pass of this node, then 1, ...
#ifndef SLUICE_OPS_ITERATOR_STATE_H_
#define SLUICE_OPS_ITERATOR_STATE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include "absl/functional/function_ref.h"
#include "sluice/export.h"

namespace sluice {

class OpNode;

class SLUICE_EXPORT IteratorState {
 public:
  struct NodeKey {
    const OpNode* node = nullptr;
    // The node's weak_from_this(); empty for a node not owned by a shared_ptr (then the address alone
    // names it, and the caller keeps the node alive as long as the iterator).
    std::weak_ptr<const void> alive;
  };

  // The saveable part of one node's entry.
  struct NodeRecord {
    std::optional<uint64_t> seed;  // drawn for an unseeded op; nullopt until then
    uint64_t next_pass = 0;        // the number the node's next new pass gets
    friend bool operator==(const NodeRecord&, const NodeRecord&) = default;
  };

  // first_pass: the number every node's first pass gets. 0 for Dataset::MakeIterator; a
  // DistributedDataset's k-th iterator (its epoch k) starts at k (sluice/distribute/distributed_iterator.h).
  explicit IteratorState(uint64_t first_pass = 0);
  IteratorState(const IteratorState&) = delete;
  IteratorState& operator=(const IteratorState&) = delete;

  uint64_t first_pass() const { return first_pass_; }

  // The node's seed in this iterator: drawn at the first call, the same at every later one.
  uint64_t Seed(const NodeKey& key);

  // Begins a new pass of the node and returns its number.
  uint64_t BeginPass(const NodeKey& key);
  // Begins pass `pass` again (a stream resumed at a saved position); later new passes come after it.
  void ResumePass(const NodeKey& key, uint64_t pass);
  // The same, for a stream restored from a compact mark, which may be older than the saved records (a
  // Prefetch above had begun later passes): the next new pass is pass + 1, whatever the records said.
  void RewindPass(const NodeKey& key, uint64_t pass);

  // The next pass numbers of `keys`' nodes, and setting them back (a Repeat's save and restore: a
  // restore from an older compact mark begins the passes after it again with the numbers they had).
  std::vector<uint64_t> NextPasses(const std::vector<NodeKey>& keys);
  void SetNextPasses(const std::vector<NodeKey>& keys, const std::vector<uint64_t>& next_passes);

  // Sets the node's record to one a checkpoint saved (a restored iterator, before any stream is made).
  void Restore(const NodeKey& key, const NodeRecord& record);

  // The node's resource of type R, made by `make` (under the lock: keep it cheap) at the first call.
  // A node holds one resource; asking for another type replaces it (no op does).
  template <class R, class Make>
  std::shared_ptr<R> Resource(const NodeKey& key, Make make) {
    auto make_erased = [&make]() -> std::shared_ptr<void> { return std::shared_ptr<R>(make()); };
    return std::static_pointer_cast<R>(ResourceErased(key, typeid(R), make_erased));
  }

  // The node's resource of type R, or null when it has none; never makes one (a checkpoint's save).
  template <class R>
  std::shared_ptr<R> FindResource(const OpNode& node) const {
    return std::static_pointer_cast<R>(FindResourceErased(node, typeid(R)));
  }

  // The node's record, or nullopt when this iterator has not used the node (or only a destroyed node
  // at the same address).
  std::optional<NodeRecord> Find(const OpNode& node) const;

  // Entries held now, destroyed nodes' included until they are dropped (for tests).
  size_t entries() const;

 private:
  struct Entry {
    std::weak_ptr<const void> alive;
    bool tracked = false;  // `alive` refers to a node (it was owned by a shared_ptr)
    NodeRecord record;
    std::shared_ptr<void> resource;
    const std::type_info* resource_type = nullptr;
    bool Stale() const { return tracked && alive.expired(); }
  };

  Entry& EntryLocked(const NodeKey& key);
  std::shared_ptr<void> ResourceErased(const NodeKey& key, const std::type_info& type,
                                       absl::FunctionRef<std::shared_ptr<void>()> make);
  std::shared_ptr<void> FindResourceErased(const OpNode& node, const std::type_info& type) const;

  const uint64_t first_pass_;
  mutable std::mutex mu_;
  std::unordered_map<const OpNode*, Entry> entries_;
  size_t prune_at_;  // entries_.size() at which destroyed nodes' entries are dropped next
};

}  // namespace sluice

#endif  // SLUICE_OPS_ITERATOR_STATE_H_
