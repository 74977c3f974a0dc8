// Stream<T>: the iteration state of one op instance, pulled by its consumer.
//
// Contract:
// - Poll(out) tries to produce the next element without waiting: kReady with *out set (a value or an
//   error element; errors do not end the stream, a consumer may poll on), kEnd when the stream is over
//   (and stays over), or kPending when nothing is available yet. After kPending the consumer awaits
//   WaitReady() and polls again; WaitReady may complete spuriously.
// - Synchronous ops (a map without parallelism, filter, take, batch, ...) poll their input inline and are
//   kPending only when their input is, so a chain of them costs one virtual call per op per element and
//   no coroutine frame: this is how sluice fuses synchronous ops (see docs/dataset-plan.md).
// - Asynchronous ops (prefetch, parallel map, readers) produce on other threads into a bounded buffer;
//   Poll takes from it and WaitReady awaits it.
// - A stream is used by one consumer at a time; it is not thread-safe. Destroying it cancels and joins
//   any work it started (blocking briefly), so never destroy one on a thread its work needs.
#ifndef SLUICE_OPS_STREAM_H_
#define SLUICE_OPS_STREAM_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "sluice/engine/task.h"

namespace sluice {

enum class PollState : uint8_t { kReady, kPending, kEnd };

template <class T>
class Stream {
 public:
  using element_type = T;
  virtual ~Stream() = default;
  virtual PollState Poll(absl::StatusOr<T>* out) = 0;
  // Synchronous streams never return kPending, so the default never waits.
  virtual Task<void> WaitReady() { return ReadyNow(); }

 private:
  static Task<void> ReadyNow() { co_return; }
};

}  // namespace sluice

#endif  // SLUICE_OPS_STREAM_H_
