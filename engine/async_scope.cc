#include "sluice/engine/async_scope.h"

#include "sluice/engine/detail/status_traits.h"

namespace sluice {

AsyncScope::~AsyncScope() {
  RequestStop();
  JoinBlocking();
}

void AsyncScope::StartChild(Child child) noexcept {
  child.handle_.promise().scope_ = this;
  child.handle_.promise().set_stop_token(&token_);
  pending_.fetch_add(1, std::memory_order_acq_rel);
  detail::Resume(child.handle_);
}

std::coroutine_handle<> AsyncScope::OnChildDone() noexcept {
  std::coroutine_handle<> joiner;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) != 1) return std::noop_coroutine();
    joiner = std::exchange(joiner_, nullptr);
    all_done_.notify_all();
  }
  return joiner ? detail::TransferTo(joiner) : std::noop_coroutine();
}

bool AsyncScope::JoinAwaiter::await_suspend(std::coroutine_handle<> awaiting) noexcept {
  std::lock_guard<std::mutex> lock(scope_->mu_);
  if (scope_->pending_.load(std::memory_order_acquire) == 0) return false;
  scope_->joiner_ = awaiting;
  return true;
}

void AsyncScope::JoinBlocking() {
  std::unique_lock<std::mutex> lock(mu_);
  all_done_.wait(lock, [this] { return pending_.load(std::memory_order_acquire) == 0; });
}

void AsyncScope::RecordError(absl::Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (first_error_.ok()) first_error_ = std::move(status);
}

absl::Status AsyncScope::first_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return first_error_;
}

void AsyncScope::Child::promise_type::unhandled_exception() noexcept {
  scope_->RecordError(detail::StatusFromCurrentException("spawned task"));
}

}  // namespace sluice
