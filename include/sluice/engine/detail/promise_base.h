// Base of every sluice promise: carries the stop token that cancellation travels on.
//
// A child coroutine (a Task being awaited, a generator being pulled) points at its awaiter's token, so a
// stop requested at the root reaches every primitive the chain is suspended in. The pointer is valid
// because a child only runs while its parent awaits it (structured concurrency); roots (SyncWait,
// AsyncScope, WhenAll) own the token they hand down.
#ifndef SLUICE_ENGINE_DETAIL_PROMISE_BASE_H_
#define SLUICE_ENGINE_DETAIL_PROMISE_BASE_H_

#include <concepts>
#include <coroutine>
#include <stop_token>

namespace sluice::detail {

// The token of a promise nobody handed one to. Not exported on purpose: with hidden visibility,
// libsluice.so and each program have their own copy of this static, which is fine because a default
// stop_token has no state (every copy behaves alike) and nothing compares a token's address with it.
// Exporting it would only add a GOT load to the creation of every coroutine frame.
inline const std::stop_token& NeverStopToken() noexcept {
  static const std::stop_token token;
  return token;
}

class PromiseBase {
 public:
  const std::stop_token& stop_token() const noexcept { return *stop_token_; }
  // `token` must outlive every resumption of this coroutine until it is set again.
  void set_stop_token(const std::stop_token* token) noexcept { stop_token_ = token; }

 private:
  const std::stop_token* stop_token_ = &NeverStopToken();
};

template <class Promise>
concept SluicePromise = std::derived_from<Promise, PromiseBase>;

// Copies the awaiting coroutine's token pointer into the child's promise; a foreign awaiter (not a
// sluice coroutine) leaves the child with a token that never stops.
template <class ChildPromise, class ParentPromise>
void InheritStopToken(ChildPromise& child, std::coroutine_handle<ParentPromise> parent) noexcept {
  if constexpr (SluicePromise<ParentPromise>) {
    child.set_stop_token(&parent.promise().stop_token());
  }
}

}  // namespace sluice::detail

#endif  // SLUICE_ENGINE_DETAIL_PROMISE_BASE_H_
