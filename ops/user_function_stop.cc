#include "sluice/ops/user_function_stop.h"

namespace sluice {
namespace {

// The innermost UserCallScope's token on this thread; null outside every scope.
thread_local const std::stop_token *tls_call_stop = nullptr;

}  // namespace

std::stop_token UserFunctionStopToken() noexcept {
  return tls_call_stop != nullptr ? *tls_call_stop : std::stop_token();
}

namespace ops {

UserCallScope::UserCallScope(const std::stop_token &token, std::atomic<int64_t> *busy) noexcept
    : previous_(tls_call_stop), busy_(busy) {
  tls_call_stop = &token;
  if (busy_ != nullptr) busy_->fetch_add(1, std::memory_order_relaxed);
}

UserCallScope::~UserCallScope() {
  tls_call_stop = previous_;
  if (busy_ != nullptr) busy_->fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace ops
}  // namespace sluice
