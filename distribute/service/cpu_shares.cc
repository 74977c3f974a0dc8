#include "distribute/service/cpu_shares.h"

#include <algorithm>
#include <utility>

namespace sluice::service {

CpuShares::Share::Share(Share&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), value_(std::move(other.value_)) {}

CpuShares::Share::~Share() {
  if (owner_ != nullptr) owner_->Leave(value_.get());
}

void CpuShares::Share::SetIdle(bool idle) {
  if (owner_ != nullptr) owner_->SetIdle(value_.get(), idle);
}

CpuShares::CpuShares(int threads) : threads_(std::max(1, threads)) {}

CpuShares::Share CpuShares::Join() {
  auto value = std::make_shared<std::atomic<int>>(0);
  std::lock_guard<std::mutex> lock(mu_);
  shares_.push_back(Entry{value});
  RedistributeLocked();
  return Share(this, std::move(value));
}

void CpuShares::Leave(const std::atomic<int>* value) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(shares_, [value](const Entry& e) { return e.value.get() == value; });
  RedistributeLocked();
}

void CpuShares::SetIdle(const std::atomic<int>* value, bool idle) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Entry& e : shares_) {
    if (e.value.get() != value) continue;
    if (e.idle == idle) return;
    e.idle = idle;
    break;
  }
  RedistributeLocked();
}

void CpuShares::RedistributeLocked() {
  const auto running =
      static_cast<int>(std::count_if(shares_.begin(), shares_.end(), [](const Entry& e) { return !e.idle; }));
  if (running == 0) return;
  const int each = threads_ / running;
  const int remainder = threads_ % running;
  int i = 0;
  for (Entry& e : shares_) {
    if (e.idle) continue;
    e.value->store(std::max(1, each + (i < remainder ? 1 : 0)), std::memory_order_relaxed);
    ++i;
  }
}

}  // namespace sluice::service
