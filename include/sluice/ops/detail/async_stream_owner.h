// AsyncStreamOwner<Impl>: owns an asynchronous stream (one that runs tasks on the pool: parallel map and
// interleave, prefetch) and tears it down without ever blocking a pool worker.
//
// Why: such a stream must join its tasks before its state goes, and those tasks need the pool's threads
// to finish. Repeat and Interleave destroy their inner streams on whatever thread polls them, often a pool
// worker; blocking there in a join starved the pool (two pipelines deadlocked a 2-thread pool).
//
// Contract:
// - Impl derives Stream<T>, and has `void BeginShutdown()` (stops new work, wakes parked tasks; may be
//   called twice) and `AsyncScope& scope()` holding every task it started.
// - Destroying the owner on a plain thread stops and joins the tasks there, then destroys Impl (as before).
// - Destroying it on a pool worker or an I/O thread (Reactor::IsAnyIoThread: a read's completion resumes
//   the pipeline there, and a join could wait for that thread's next completion) while tasks are still
//   running stops them and hands Impl to the iterator's `teardowns` scope: the last task to finish
//   destroys Impl, on its own thread, which may in turn hand off the streams Impl owns. Nothing blocks.
// - ~Iterator and Iterator::Close join `teardowns` after dropping the pipeline, so when they return every
//   task the pipeline ever started has finished and every user function has been destroyed.
#ifndef SLUICE_OPS_DETAIL_ASYNC_STREAM_OWNER_H_
#define SLUICE_OPS_DETAIL_ASYNC_STREAM_OWNER_H_

#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/status/statusor.h"
#include "sluice/engine/async_scope.h"
#include "sluice/engine/reactor.h"
#include "sluice/engine/task.h"
#include "sluice/engine/thread_pool.h"
#include "sluice/ops/autotune.h"
#include "sluice/ops/stream.h"

namespace sluice::ops::detail_teardown {

// What an owner shows of the stream it holds, for tests that inspect a stream the tuner adjusts.
class TunableHolder {
 public:
  virtual ~TunableHolder() = default;
  virtual Tunable* tunable() = 0;  // null when the held stream is not tunable
};

template <class Impl>
class AsyncStreamOwner final : public Stream<typename Impl::element_type>, public TunableHolder {
 public:
  using T = typename Impl::element_type;

  // `teardowns`: the iterator's (IteratorContext::teardowns); null means always join here.
  AsyncStreamOwner(std::unique_ptr<Impl> impl, std::shared_ptr<AsyncScope> teardowns)
      : impl_(std::move(impl)), teardowns_(std::move(teardowns)) {}
  AsyncStreamOwner(const AsyncStreamOwner&) = delete;
  AsyncStreamOwner& operator=(const AsyncStreamOwner&) = delete;

  ~AsyncStreamOwner() override {
    impl_->BeginShutdown();
    const bool must_not_block = ThreadPool::IsAnyWorkerThread() || Reactor::IsAnyIoThread();
    if (teardowns_ != nullptr && must_not_block && impl_->scope().pending() > 0) {
      teardowns_->Spawn(DestroyWhenJoined(std::move(impl_)));
      return;
    }
    impl_->scope().JoinBlocking();
  }

  PollState Poll(absl::StatusOr<T>* out) override { return impl_->Poll(out); }
  Task<void> WaitReady() override { return impl_->WaitReady(); }
  std::optional<SourcePosition> position() const override { return impl_->position(); }
  bool Mark(MarkWriter& mark) const override { return impl_->Mark(mark); }
  Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
    return impl_->Save(std::move(writer), std::move(path));
  }

  Tunable* tunable() override {
    if constexpr (std::is_base_of_v<Tunable, Impl>) {
      return impl_.get();
    } else {
      return nullptr;
    }
  }

 private:
  // Resumed by the last of Impl's tasks as it finishes (AsyncScope::Join), so Impl goes on that thread.
  static Task<void> DestroyWhenJoined(std::unique_ptr<Impl> impl) {
    co_await impl->scope().Join();
    impl.reset();
  }

  std::unique_ptr<Impl> impl_;
  std::shared_ptr<AsyncScope> teardowns_;
};

// make_unique for an async stream under its owner.
template <class Impl, class... Args>
std::unique_ptr<Stream<typename Impl::element_type>> MakeAsyncStream(std::shared_ptr<AsyncScope> teardowns,
                                                                     Args&&... args) {
  return std::make_unique<AsyncStreamOwner<Impl>>(std::make_unique<Impl>(std::forward<Args>(args)...),
                                                  std::move(teardowns));
}

}  // namespace sluice::ops::detail_teardown

#endif  // SLUICE_OPS_DETAIL_ASYNC_STREAM_OWNER_H_
