// GeneratorStream: adapts an AsyncGenerator<absl::StatusOr<T>> (a file reader, say) into a Stream<T>.
// Poll is kPending until WaitReady() has pulled the next element; each element costs one coroutine
// round trip, which is noise next to reading a record. Destroying the stream destroys the generator
// (a reader then cancels and joins its reads).
#ifndef SLUICE_OPS_GENERATOR_SOURCE_H_
#define SLUICE_OPS_GENERATOR_SOURCE_H_

#include <optional>
#include <utility>

#include "sluice/engine/async_generator.h"
#include "sluice/ops/stream.h"

namespace sluice::ops {

template <class T>
class GeneratorStream final : public Stream<T> {
 public:
  explicit GeneratorStream(AsyncGenerator<absl::StatusOr<T>> generator) : generator_(std::move(generator)) {}
  PollState Poll(absl::StatusOr<T>* out) override {
    if (stash_) {
      *out = std::move(*stash_);
      stash_.reset();
      return PollState::kReady;
    }
    return ended_ ? PollState::kEnd : PollState::kPending;
  }
  Task<void> WaitReady() override { return Pull(this); }

 private:
  static Task<void> Pull(GeneratorStream* self) {
    if (self->stash_ || self->ended_) co_return;
    std::optional<absl::StatusOr<T>> next = co_await self->generator_.Next();
    if (next) {
      self->stash_ = std::move(*next);
    } else {
      self->ended_ = true;
    }
  }

  AsyncGenerator<absl::StatusOr<T>> generator_;
  std::optional<absl::StatusOr<T>> stash_;
  bool ended_ = false;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_GENERATOR_SOURCE_H_
