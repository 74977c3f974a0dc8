#include "sluice/ops/iterator_state.h"

#include <algorithm>
#include <random>
#include <unordered_map>
#include <utility>

#include "sluice/ops/detail/mix64.h"

namespace sluice {
namespace {

constexpr size_t kMinPruneAt = 64;
// Salts that keep a deeper epoch's number and a pass index's number apart.
constexpr uint64_t kEpochSalt = 0x6a09e667f3bcc908ULL;
constexpr uint64_t kIndexSalt = 0xbb67ae8584caa73bULL;

uint64_t DrawSeed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

uint64_t MixPass(uint64_t number, uint64_t salt, uint64_t i) {
  return ops::detail_mix::Mix64(number ^ (salt + i * ops::detail_mix::kGoldenGamma));
}

// True when `w` was made from a shared_ptr (alive or not), false for an empty weak_ptr.
bool RefersToSomething(const std::weak_ptr<const void>& w) {
  const std::weak_ptr<const void> empty;
  return w.owner_before(empty) || empty.owner_before(w);
}

}  // namespace

template <class V>
V& IteratorState::NodeTable<V>::At(const NodeKey& key) {
  auto it = entries_.find(key.node);
  if (it == entries_.end()) {
    if (entries_.size() >= prune_at_) {
      std::erase_if(entries_, [](const auto& e) { return e.second.Stale(); });
      prune_at_ = std::max(kMinPruneAt, 2 * entries_.size());
    }
    it = entries_.try_emplace(key.node).first;
  } else if (it->second.Stale()) {
    // A destroyed node's entry at this address belongs to nobody now: the node asking is a new one.
    it->second = Entry{};
  }
  Entry& entry = it->second;
  if (!entry.tracked && RefersToSomething(key.alive)) {
    entry.alive = key.alive;
    entry.tracked = true;
  }
  return entry.value;
}

template <class V>
const V* IteratorState::NodeTable<V>::Find(const OpNode& node) const {
  auto it = entries_.find(&node);
  if (it == entries_.end() || it->second.Stale()) return nullptr;
  return &it->second.value;
}

IteratorState::IteratorState(uint64_t first_pass)
    : IteratorState(std::make_shared<Shared>(first_pass), first_pass, 0) {}

IteratorState::IteratorState(std::shared_ptr<Shared> shared, uint64_t base, uint64_t depth)
    : shared_(std::move(shared)), base_(base), depth_(depth) {}

uint64_t IteratorState::first_pass() const { return shared_->first_pass; }

uint64_t IteratorState::base() const { return base_.load(std::memory_order_relaxed); }

uint64_t IteratorState::EpochBase(uint64_t epoch) const {
  const uint64_t base = base_.load(std::memory_order_relaxed);
  if (depth_.load(std::memory_order_relaxed) == 0) return base + epoch;
  return epoch == 0 ? base : MixPass(base, kEpochSalt, epoch);
}

std::shared_ptr<IteratorState> IteratorState::ForEpoch(uint64_t epoch) const {
  return std::shared_ptr<IteratorState>(
      new IteratorState(shared_, EpochBase(epoch), depth_.load(std::memory_order_relaxed) + 1));
}

void IteratorState::ReuseForEpoch(const IteratorState& parent, uint64_t epoch) {
  base_.store(parent.EpochBase(epoch), std::memory_order_relaxed);
  depth_.store(parent.depth_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  next_passes_.Clear();
}

uint64_t IteratorState::Seed(const NodeKey& key) {
  std::lock_guard<std::mutex> lock(shared_->mu);
  SharedEntry& entry = shared_->nodes.At(key);
  if (!entry.seed.has_value()) entry.seed = DrawSeed();
  return *entry.seed;
}

uint64_t IteratorState::BeginPass(const NodeKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  return next_passes_.At(key)++;
}

uint64_t IteratorState::PassNumber(uint64_t index) const {
  const uint64_t base = base_.load(std::memory_order_relaxed);
  return index == 0 ? base : MixPass(base, kIndexSalt, index);
}

void IteratorState::ResumePass(const NodeKey& key, uint64_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t& next = next_passes_.At(key);
  next = std::max(next, index + 1);
}

void IteratorState::RewindPass(const NodeKey& key, uint64_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  next_passes_.At(key) = index + 1;
}

std::vector<uint64_t> IteratorState::NextPasses(const std::vector<NodeKey>& keys) {
  std::vector<uint64_t> next_passes;
  if (keys.empty()) return next_passes;
  next_passes.reserve(keys.size());
  std::lock_guard<std::mutex> lock(mu_);
  for (const NodeKey& key : keys) next_passes.push_back(next_passes_.At(key));
  return next_passes;
}

void IteratorState::SetNextPasses(const std::vector<NodeKey>& keys,
                                  const std::vector<uint64_t>& next_passes) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < keys.size() && i < next_passes.size(); ++i)
    next_passes_.At(keys[i]) = next_passes[i];
}

void IteratorState::Restore(const NodeKey& key, const NodeRecord& record) {
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->nodes.At(key).seed = record.seed;
  }
  std::lock_guard<std::mutex> lock(mu_);
  next_passes_.At(key) = record.next_pass;
}

std::shared_ptr<void> IteratorState::ResourceErased(const NodeKey& key, const std::type_info& type,
                                                    absl::FunctionRef<std::shared_ptr<void>()> make) {
  std::lock_guard<std::mutex> lock(shared_->mu);
  SharedEntry& entry = shared_->nodes.At(key);
  if (entry.resource == nullptr || entry.resource_type == nullptr || *entry.resource_type != type) {
    entry.resource = make();
    entry.resource_type = &type;
  }
  return entry.resource;
}

std::shared_ptr<void> IteratorState::FindResourceErased(const OpNode& node,
                                                        const std::type_info& type) const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  const SharedEntry* entry = shared_->nodes.Find(node);
  if (entry == nullptr || entry->resource_type == nullptr || *entry->resource_type != type) return nullptr;
  return entry->resource;
}

std::optional<IteratorState::NodeRecord> IteratorState::Find(const OpNode& node) const {
  std::optional<NodeRecord> record;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (const SharedEntry* entry = shared_->nodes.Find(node)) record = NodeRecord{entry->seed, 0};
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (const uint64_t* next = next_passes_.Find(node)) {
    if (!record) record.emplace();
    record->next_pass = *next;
  }
  return record;
}

size_t IteratorState::entries() const {
  size_t shared_entries = 0;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_entries = shared_->nodes.size();
  }
  std::lock_guard<std::mutex> lock(mu_);
  return shared_entries + next_passes_.size();
}

}  // namespace sluice
