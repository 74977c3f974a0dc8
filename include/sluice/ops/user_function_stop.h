// UserFunctionStopToken(): how a user function that may run long learns that
// its pipeline is going away.
//
// Contract:
// - Inside a function the pipeline's own tasks call (a parallel Map's function,
// or any op's function in the
//   input of a Prefetch, a parallel Map or a parallel Interleave's inner
//   pipelines), UserFunctionStopToken() is the stop token of the task that made
//   the call. Stop is requested when that task's op is torn down: the iterator
//   is destroyed or closed, or an Interleave drops a finished inner pipeline.
// - A function that polls it and returns early (any value or error) lets
// Close() and ~Iterator finish;
//   what it returns after stop is discarded. Functions that never return block
//   teardown: see Iterator::Close(timeout).
// - Elsewhere (a synchronous Map pulled by the consumer's own thread, code
// outside any pipeline) it is a
//   token that is never stopped.
//
//   auto slow = [](Tensor t) -> absl::StatusOr<Tensor> {
//     for (int pass = 0; pass < 100; ++pass) {
//       if (sluice::UserFunctionStopToken().stop_requested()) return
//       absl::CancelledError("closing"); Refine(t);
//     }
//     return t;
//   };
#ifndef SLUICE_OPS_USER_FUNCTION_STOP_H_
#define SLUICE_OPS_USER_FUNCTION_STOP_H_

#include <atomic>
#include <cstdint>
#include <stop_token>

#include "sluice/export.h"

namespace sluice {

SLUICE_EXPORT std::stop_token UserFunctionStopToken() noexcept;

namespace ops {

// Set by an op's task around the calls it makes into the pipeline (its input's
// Poll, its function): the token UserFunctionStopToken() returns on this thread
// meanwhile, and one more in `busy` (the iterator's count of tasks inside user
// code, which Close(timeout) reports; may be null). Nests.
class SLUICE_EXPORT UserCallScope {
 public:
  UserCallScope(const std::stop_token &token, std::atomic<int64_t> *busy) noexcept;
  ~UserCallScope();
  UserCallScope(const UserCallScope &) = delete;
  UserCallScope &operator=(const UserCallScope &) = delete;

 private:
  const std::stop_token *previous_;
  std::atomic<int64_t> *busy_;
};

}  // namespace ops
}  // namespace sluice

#endif  // SLUICE_OPS_USER_FUNCTION_STOP_H_
