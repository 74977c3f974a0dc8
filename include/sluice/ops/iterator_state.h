// IteratorState: everything random or stateful that one iterator keeps for the nodes of its pipeline, so
// that a definition (an OpNode graph) holds none and stays data another process can rebuild.
//
// Contract:
// - One iterator's states form a tree: the root (IteratorContext::state of the iterator) and one child per
//   epoch of every Repeat stream (ForEpoch), handed to the streams of that epoch through their context.
//   Two iterators of one definition share nothing and never perturb each other.
// - Shared by the whole tree, per node: the seed drawn for an unseeded random op (drawn at its first use,
//   nondeterministic, the same for the rest of the iterator) and one op-specific resource (a memory
//   Cache's contents).
// - Per state (per epoch), per node: the pass counter. A node's new streams in one epoch get pass indices
//   0, 1, 2, ... (BeginPass; usually there is one), and PassNumber turns an index into the number that
//   seeds the pass. The numbers depend on the enclosing Repeats' epochs and the index only, never on how
//   many streams other epochs began: a parallel op that runs ahead of a Take through an inner Repeat
//   begins passes of later inner epochs, and the outer Repeat's next epoch still numbers its passes as an
//   iterator without the run-ahead would.
//   - The root's index 0 is first_pass() (0, or a DistributedDataset's epoch k: k). A Repeat directly
//     under the root numbers its epoch e first_pass() + e, so Shuffle().Repeat(3) shuffles with passes
//     0, 1, 2 as three epochs of a DistributedDataset do. Deeper epochs and indices above 0 are hashes of
//     the enclosing number with the epoch or index.
// - A node is named by a NodeKey: its address plus, when the node is owned by a shared_ptr, a weak
//   reference to it. Nodes an Interleave's function builds per element die while their streams run, and
//   a new node may then take the same address; the weak reference tells the two apart, so the new node
//   starts afresh (as a new definition always did). Entries of destroyed nodes are dropped as new ones
//   arrive (amortised), so an iterator over millions of such inner datasets does not grow.
// - The plain-data part of an entry (NodeRecord: seed, next pass index in this state) is what a checkpoint
//   saves per node path (sluice/ops/node_path.h); resources are the op's to save (OpNode::SaveResource).
// - Threading: every member is thread-safe (streams are made from pool threads too).
//
//   // In a node's MakeStream:
//   IteratorState& state = *context->state;
//   IteratorState::NodeKey key{this, this->weak_from_this()};
//   uint64_t seed = seeded_ ? seed_ : state.Seed(key);
//   uint64_t pass = state.PassNumber(state.BeginPass(key));  // save the index, seed with the number
#ifndef SLUICE_OPS_ITERATOR_STATE_H_
#define SLUICE_OPS_ITERATOR_STATE_H_

#include <atomic>
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

  // The saveable part of one node's entries: its seed (the iterator's) and its pass counter (this state's).
  struct NodeRecord {
    std::optional<uint64_t> seed;  // drawn for an unseeded op; nullopt until then
    uint64_t next_pass = 0;        // the index the node's next new pass gets in this state
    friend bool operator==(const NodeRecord&, const NodeRecord&) = default;
  };

  // A root state. first_pass: the number of every node's first pass at the root; 0 for
  // Dataset::MakeIterator, k for a DistributedDataset's k-th iterator
  // (sluice/distribute/distributed_iterator.h).
  explicit IteratorState(uint64_t first_pass = 0);
  IteratorState(const IteratorState&) = delete;
  IteratorState& operator=(const IteratorState&) = delete;

  uint64_t first_pass() const;
  // The number of pass index 0 in this state.
  uint64_t base() const;

  // The state of a Repeat's epoch `epoch` (0 for the first) of a stream made with this state: the same
  // seeds and resources, its own pass counters.
  std::shared_ptr<IteratorState> ForEpoch(uint64_t epoch) const;
  // Makes this state what parent.ForEpoch(epoch) would return, in place (counters cleared). Only for a
  // state of the same parent that nothing else uses any more (a Repeat's previous epoch).
  void ReuseForEpoch(const IteratorState& parent, uint64_t epoch);

  // The node's seed in this iterator: drawn at the first call, the same at every later one.
  uint64_t Seed(const NodeKey& key);

  // Begins a new pass of the node in this state and returns its index.
  uint64_t BeginPass(const NodeKey& key);
  // The number that seeds pass `index` of this state.
  uint64_t PassNumber(uint64_t index) const;
  // Begins pass `index` again (a stream resumed at a saved position); later new passes come after it.
  void ResumePass(const NodeKey& key, uint64_t index);
  // The same, for a stream restored from a compact mark, which may be older than the saved records (a
  // Prefetch above had begun later passes): the next new pass is index + 1, whatever the records said.
  void RewindPass(const NodeKey& key, uint64_t index);

  // The next pass indices of `keys`' nodes, and setting them back (a Repeat's save and restore: a
  // restore from an older compact mark begins the passes after it again with the indices they had).
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
  // at the same address) for its seed, a resource or a pass in this state.
  std::optional<NodeRecord> Find(const OpNode& node) const;

  // Entries held now by this state and the shared part, destroyed nodes' included until they are
  // dropped (for tests).
  size_t entries() const;

 private:
  // Entries per node, keyed by address; an entry of a destroyed node is reset when its address is asked
  // for again, and dropped as new entries arrive.
  template <class V>
  class NodeTable {
   public:
    V& At(const NodeKey& key);
    const V* Find(const OpNode& node) const;
    size_t size() const { return entries_.size(); }
    void Clear() { entries_.clear(); }

   private:
    struct Entry {
      std::weak_ptr<const void> alive;
      bool tracked = false;  // `alive` refers to a node (it was owned by a shared_ptr)
      V value{};
      bool Stale() const { return tracked && alive.expired(); }
    };
    std::unordered_map<const OpNode*, Entry> entries_;
    size_t prune_at_ = 64;  // entries_.size() at which destroyed nodes' entries are dropped next
  };
  struct SharedEntry {
    std::optional<uint64_t> seed;
    std::shared_ptr<void> resource;
    const std::type_info* resource_type = nullptr;
  };
  struct Shared {
    explicit Shared(uint64_t first) : first_pass(first) {}
    const uint64_t first_pass;
    std::mutex mu;
    NodeTable<SharedEntry> nodes;
  };

  IteratorState(std::shared_ptr<Shared> shared, uint64_t base, uint64_t depth);
  uint64_t EpochBase(uint64_t epoch) const;
  std::shared_ptr<void> ResourceErased(const NodeKey& key, const std::type_info& type,
                                       absl::FunctionRef<std::shared_ptr<void>()> make);
  std::shared_ptr<void> FindResourceErased(const OpNode& node, const std::type_info& type) const;

  const std::shared_ptr<Shared> shared_;
  // Atomic only because ReuseForEpoch changes them while the previous epoch's streams, gone by then, may
  // have read them last on other threads; no order is needed.
  std::atomic<uint64_t> base_;
  std::atomic<uint64_t> depth_;  // Repeats above this state: 0 at the root
  mutable std::mutex mu_;
  NodeTable<uint64_t> next_passes_;
};

}  // namespace sluice

#endif  // SLUICE_OPS_ITERATOR_STATE_H_
