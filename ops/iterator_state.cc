#include "sluice/ops/iterator_state.h"

#include <algorithm>
#include <random>
#include <unordered_map>

namespace sluice {
namespace {

constexpr size_t kMinPruneAt = 64;

uint64_t DrawSeed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

// True when `w` was made from a shared_ptr (alive or not), false for an empty weak_ptr.
bool RefersToSomething(const std::weak_ptr<const void>& w) {
  const std::weak_ptr<const void> empty;
  return w.owner_before(empty) || empty.owner_before(w);
}

}  // namespace

IteratorState::IteratorState(uint64_t first_pass) : first_pass_(first_pass), prune_at_(kMinPruneAt) {}

IteratorState::Entry& IteratorState::EntryLocked(const NodeKey& key) {
  auto it = entries_.find(key.node);
  if (it == entries_.end()) {
    if (entries_.size() >= prune_at_) {
      std::erase_if(entries_, [](const auto& e) { return e.second.Stale(); });
      prune_at_ = std::max(kMinPruneAt, 2 * entries_.size());
    }
    it = entries_.try_emplace(key.node).first;
    it->second.record.next_pass = first_pass_;
  } else if (it->second.Stale()) {
    // A destroyed node's entry at this address belongs to nobody now: the node asking is a new one.
    it->second = Entry{};
    it->second.record.next_pass = first_pass_;
  }
  Entry& entry = it->second;
  if (!entry.tracked && RefersToSomething(key.alive)) {
    entry.alive = key.alive;
    entry.tracked = true;
  }
  return entry;
}

uint64_t IteratorState::Seed(const NodeKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& entry = EntryLocked(key);
  if (!entry.record.seed.has_value()) entry.record.seed = DrawSeed();
  return *entry.record.seed;
}

uint64_t IteratorState::BeginPass(const NodeKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  return EntryLocked(key).record.next_pass++;
}

void IteratorState::ResumePass(const NodeKey& key, uint64_t pass) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& entry = EntryLocked(key);
  entry.record.next_pass = std::max(entry.record.next_pass, pass + 1);
}

void IteratorState::RewindPass(const NodeKey& key, uint64_t pass) {
  std::lock_guard<std::mutex> lock(mu_);
  EntryLocked(key).record.next_pass = pass + 1;
}

std::vector<uint64_t> IteratorState::NextPasses(const std::vector<NodeKey>& keys) {
  std::vector<uint64_t> next_passes;
  if (keys.empty()) return next_passes;
  next_passes.reserve(keys.size());
  std::lock_guard<std::mutex> lock(mu_);
  for (const NodeKey& key : keys) next_passes.push_back(EntryLocked(key).record.next_pass);
  return next_passes;
}

void IteratorState::SetNextPasses(const std::vector<NodeKey>& keys,
                                  const std::vector<uint64_t>& next_passes) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < keys.size() && i < next_passes.size(); ++i) {
    EntryLocked(keys[i]).record.next_pass = next_passes[i];
  }
}

void IteratorState::Restore(const NodeKey& key, const NodeRecord& record) {
  std::lock_guard<std::mutex> lock(mu_);
  EntryLocked(key).record = record;
}

std::shared_ptr<void> IteratorState::ResourceErased(const NodeKey& key, const std::type_info& type,
                                                    absl::FunctionRef<std::shared_ptr<void>()> make) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& entry = EntryLocked(key);
  if (entry.resource == nullptr || entry.resource_type == nullptr || *entry.resource_type != type) {
    entry.resource = make();
    entry.resource_type = &type;
  }
  return entry.resource;
}

std::shared_ptr<void> IteratorState::FindResourceErased(const OpNode& node,
                                                        const std::type_info& type) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(&node);
  if (it == entries_.end() || it->second.Stale()) return nullptr;
  const Entry& entry = it->second;
  if (entry.resource_type == nullptr || *entry.resource_type != type) return nullptr;
  return entry.resource;
}

std::optional<IteratorState::NodeRecord> IteratorState::Find(const OpNode& node) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(&node);
  if (it == entries_.end() || it->second.Stale()) return std::nullopt;
  return it->second.record;
}

size_t IteratorState::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace sluice
