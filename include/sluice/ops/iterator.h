// Iterator<T>: one pass over a Dataset<T>, made by Dataset::MakeIterator().
//
// Contract:
// - `co_await it.Next()` gives absl::StatusOr<std::optional<T>>: an element, std::nullopt at the end
//   (end of sequence is not an error, and stays the end), or an error for that element. After an error
//   the iterator may be pulled again (tf.data semantics); most errors are per element.
// - NextBlocking() is the same for plain threads; range-for (`for (absl::StatusOr<T> x : it)`) uses it.
// - When every op in the pipeline is synchronous, Next() completes without suspending or allocating.
// - Cancellation: Next() observes the awaiting coroutine's stop token while it waits.
// - Threading: one consumer at a time. Destroying the iterator stops and joins the work its ops
//   started, blocking; do it on a thread that is not one of the iterator's pool workers, or first
//   `co_await it.Close()`.
// - Close(): an awaitable that cancels and awaits everything the pipeline started without blocking the
//   awaiting thread: the pipeline is torn down on a helper thread (where blocking joins are harmless)
//   and the awaiting coroutine resumes on the iterator's pool when it is gone. Afterwards Next() returns
//   the end (std::nullopt), and the destructor no longer blocks on the pipeline. Closing twice is a
//   no-op; Close itself is not cancellable (teardown always completes). Call it only when no Next() is
//   pending.
// - Close(timeout) / CloseBlocking(timeout): the same, bounded. A user function that never returns keeps
//   its call, and so the teardown, from finishing (functions can observe sluice::UserFunctionStopToken(),
//   sluice/ops/user_function_stop.h, and return early). If the teardown has not finished after `timeout`,
//   the awaiting coroutine resumes with DeadlineExceeded saying how many of the pipeline's tasks are still
//   inside user code or an input, on a helper thread (those calls may hold every pool worker); the
//   teardown goes on in the background and neither Close nor the destructor waits for it any more. What
//   those calls hold is freed when they return (never, if they never do). OK when everything finished in
//   time.
//
// - Save() (docs/checkpoint.md): `co_await it.Save()` gives the iterator's state as versioned bytes, from
//   which Dataset::RestoreIterator makes an iterator that continues exactly here: the saved position is
//   the element last returned by Next, and elements buffered inside the pipeline come out again after a
//   restore. Like Close, call it only when no Next() is pending; the iterator goes on unchanged after it.
//   An op that cannot be saved yet fails it with FailedPrecondition naming the op and its node path.
//   SaveBlocking() is for plain threads; SaveToFile(path) writes a temporary file, fsyncs it and renames
//   it over `path`.
//
//   Task<void> Consume(Iterator<int64_t> it) {     // e.g. running on a pool worker
//     for (int i = 0; i < 10; ++i) (void)co_await it.Next();
//     co_await it.Close();                         // safe here; ~Iterator would block this worker
//   }
#ifndef SLUICE_OPS_ITERATOR_H_
#define SLUICE_OPS_ITERATOR_H_

#include <condition_variable>
#include <coroutine>
#include <cstdint>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <semaphore>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "sluice/engine/thread_pool.h"
#include "sluice/ops/checkpoint_state.h"
#include "sluice/ops/node_path.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/stream.h"

namespace sluice {

namespace detail_iterator {

// Shared by a timed Close's teardown thread, its timer and the awaiter.
struct TimedClose {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;      // the teardown finished
  bool resumed = false;   // `awaiting` was handed to the pool
  bool timed_out = false;
  int64_t busy = 0;
  // True for the one caller that resumes the awaiting coroutine.
  bool Finish(bool timeout, int64_t busy_tasks = 0) {
    std::lock_guard<std::mutex> lock(mu);
    if (!timeout) done = true;
    cv.notify_all();
    if (resumed) return false;
    resumed = true;
    timed_out = timeout;
    busy = busy_tasks;
    return true;
  }
  bool WaitDone(absl::Duration timeout) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, absl::ToChronoNanoseconds(timeout), [this] { return done; });
  }
};

}  // namespace detail_iterator

template <class T>
class Iterator {
 public:
  using Result = absl::StatusOr<std::optional<T>>;

  Iterator(std::unique_ptr<Stream<T>> stream, IteratorContextPtr context)
      : context_(std::move(context)), stream_(std::move(stream)) {}
  // `root`: the definition the stream was made from, which Save needs to name the state's nodes.
  Iterator(std::unique_ptr<Stream<T>> stream, IteratorContextPtr context, std::shared_ptr<const OpNode> root)
      : context_(std::move(context)), stream_(std::move(stream)), root_(std::move(root)) {}
  Iterator(Iterator&&) noexcept = default;
  Iterator& operator=(Iterator&& other) noexcept {
    if (this != &other) {
      DropPipeline();
      JoinCloser();
      context_ = std::move(other.context_);
      stream_ = std::move(other.stream_);
      element_ = std::move(other.element_);
      root_ = std::move(other.root_);
      closer_ = std::move(other.closer_);
      timer_ = std::move(other.timer_);
      abandoned_ = other.abandoned_;
    }
    return *this;
  }
  ~Iterator() {
    DropPipeline();  // before the context that may own a private pool
    JoinCloser();
  }

  // See the contract above: `co_await it.Close();`.
  class [[nodiscard]] CloseAwaiter {
   public:
    explicit CloseAwaiter(Iterator* it) : it_(it) {}
    bool await_ready() const noexcept { return it_->stream_ == nullptr; }
    void await_suspend(std::coroutine_handle<> awaiting) {
      it_->JoinCloser();
      auto go = std::make_shared<std::binary_semaphore>(0);
      it_->closer_ = std::thread([go, stream = std::move(it_->stream_), context = it_->context_,
                                  awaiting]() mutable {
        // Waits until closer_ is stored: once `awaiting` resumes it may destroy the iterator, which
        // joins this thread.
        go->acquire();
        stream.reset();
        context->teardowns->JoinBlocking();
        context->pool->Execute(awaiting);
      });
      go->release();
    }
    void await_resume() const noexcept {}

   private:
    Iterator* it_;
  };
  CloseAwaiter Close() { return CloseAwaiter(this); }

  // See the contract above: `absl::Status closed = co_await it.Close(absl::Seconds(5));`.
  class [[nodiscard]] TimedCloseAwaiter {
   public:
    TimedCloseAwaiter(Iterator* it, absl::Duration timeout) : it_(it), timeout_(timeout) {}
    bool await_ready() const noexcept { return it_->stream_ == nullptr; }
    void await_suspend(std::coroutine_handle<> awaiting) {
      it_->JoinCloser();
      state_ = std::make_shared<detail_iterator::TimedClose>();
      auto go = std::make_shared<std::binary_semaphore>(0);
      // As in Close(): the teardown runs on a thread of its own; whichever of it and the timer comes
      // first resumes `awaiting`, once.
      it_->closer_ = std::thread([go, state = state_, stream = std::move(it_->stream_), context = it_->context_,
                                  awaiting]() mutable {
        go->acquire();
        stream.reset();
        context->teardowns->JoinBlocking();
        if (state->Finish(/*timed_out=*/false)) context->pool->Execute(awaiting);
      });
      // On a timeout `awaiting` resumes on the timer's thread: the stuck calls may hold every pool worker.
      it_->timer_ = std::thread([state = state_, context = it_->context_, awaiting, timeout = timeout_] {
        if (!state->WaitDone(timeout) && state->Finish(/*timed_out=*/true, context->busy_tasks->load())) {
          detail::Resume(awaiting);
        }
      });
      go->release();
    }
    absl::Status await_resume() {
      if (state_ == nullptr || !state_->timed_out) return absl::OkStatus();
      // The teardown may never end: let it go on alone. This runs on the timer's thread, which is done.
      it_->closer_.detach();
      it_->timer_.detach();
      it_->abandoned_ = true;
      return absl::DeadlineExceededError(absl::StrCat(
          "Iterator::Close: the pipeline was not torn down within ", absl::FormatDuration(timeout_), "; ",
          state_->busy, " of its tasks are still inside a user function or an input (a function that does "
          "not return? it can poll sluice::UserFunctionStopToken()); the teardown goes on in the background"));
    }

   private:
    Iterator* it_;
    absl::Duration timeout_;
    std::shared_ptr<detail_iterator::TimedClose> state_;
  };
  TimedCloseAwaiter Close(absl::Duration timeout) { return TimedCloseAwaiter(this, timeout); }

  // Close(timeout) for plain threads.
  absl::Status CloseBlocking(absl::Duration timeout) { return SyncWait(CloseWithin(this, timeout)); }

  // What the iterator's ops share (its pool, options).
  const IteratorContext& context() const { return *context_; }

  // Polls first; only when the pipeline has nothing ready does it run a coroutine that waits.
  class [[nodiscard]] NextAwaiter {
   public:
    explicit NextAwaiter(Iterator* it) : it_(it) {}
    bool await_ready() { return it_->TryNext(&ready_); }
    template <class Promise>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> awaiting) {
      slow_ = NextSlow(it_);
      slow_awaiter_.emplace(slow_.handle());
      return slow_awaiter_->await_suspend(awaiting);
    }
    Result await_resume() {
      if (slow_awaiter_) return slow_awaiter_->await_resume();
      return std::move(*ready_);
    }

   private:
    Iterator* it_;
    std::optional<Result> ready_;
    Task<Result> slow_;
    std::optional<typename Task<Result>::Awaiter> slow_awaiter_;
  };

  NextAwaiter Next() { return NextAwaiter(this); }

  // See the contract above: `absl::StatusOr<std::string> state = co_await it.Save();`.
  Task<absl::StatusOr<std::string>> Save() { return SaveState(this); }
  absl::StatusOr<std::string> SaveBlocking() { return SyncWait(SaveState(this)); }
  // Save() written to `path` atomically (temporary file, fsync, rename). The write blocks the calling
  // thread for the fsync.
  Task<absl::Status> SaveToFile(std::string path) { return SaveStateToFile(this, std::move(path)); }
  absl::Status SaveToFileBlocking(std::string path) {
    return SyncWait(SaveStateToFile(this, std::move(path)));
  }

  // Compact checkpoints (Options::compact_checkpoints), for a consumer that runs ahead of what it has
  // handed on (a distributed iterator's producer): MarkPosition writes where the pipeline stands now,
  // false where it cannot mark it (a closed iterator, a full state restored into a compact one);
  // SaveAtMark gives this iterator's state as if it stood at such an earlier mark. Its ops' counters and
  // seeds are those of now, as in a compact Prefetch's save, whose mark is older too.
  bool MarkPosition(StreamMark* out) const {
    if (stream_ == nullptr || !context_->options.compact_checkpoints) return false;
    MarkWriter writer;
    writer.Begin(out);
    return stream_->Mark(writer);
  }
  absl::StatusOr<std::string> SaveAtMark(const StreamMark& mark) const {
    if (root_ == nullptr) {
      return absl::FailedPreconditionError(
          "Iterator::SaveAtMark: this iterator was not made by Dataset::MakeIterator or RestoreIterator");
    }
    if (absl::Status functions = CheckFunctionStates(*root_); !functions.ok()) return functions;
    CheckpointWriter writer(root_.get());
    mark.WriteTo(&writer, kRootNodePath);
    return EncodeCheckpoint(root_, *context_->state, writer);
  }

  Result NextBlocking() {
    std::optional<Result> ready;
    if (TryNext(&ready)) return std::move(*ready);
    return SyncWait(NextSlow(this));
  }

  // Range-for over the remaining elements (blocking); errors are elements.
  class InputIterator {
   public:
    using value_type = absl::StatusOr<T>;
    using difference_type = std::ptrdiff_t;
    InputIterator() = default;
    explicit InputIterator(Iterator* it) : it_(it) { Advance(); }
    value_type& operator*() { return *current_; }
    InputIterator& operator++() {
      Advance();
      return *this;
    }
    void operator++(int) { Advance(); }
    bool operator==(std::default_sentinel_t) const { return !current_.has_value(); }

   private:
    void Advance() {
      Result next = it_->NextBlocking();
      if (!next.ok()) {
        current_.emplace(std::move(next).status());
      } else if (next->has_value()) {
        current_.emplace(std::move(**next));
      } else {
        current_.reset();
      }
    }
    Iterator* it_ = nullptr;
    std::optional<value_type> current_;
  };
  InputIterator begin() { return InputIterator(this); }
  std::default_sentinel_t end() { return {}; }

 private:
  // Destroys the pipeline and waits for the teardowns its async streams handed off (see
  // sluice/ops/detail/async_stream_owner.h): afterwards nothing the pipeline started still runs.
  void DropPipeline() {
    stream_.reset();
    if (context_ != nullptr && !abandoned_) context_->teardowns->JoinBlocking();
  }

  void JoinCloser() {
    if (closer_.joinable()) closer_.join();
    if (timer_.joinable()) timer_.join();
  }

  static Task<absl::StatusOr<std::string>> SaveState(Iterator* it) {
    if (it->stream_ == nullptr)
      return Failed(absl::FailedPreconditionError("Iterator::Save: the iterator is closed"));
    if (it->root_ == nullptr) {
      return Failed(absl::FailedPreconditionError(
          "Iterator::Save: this iterator was not made by Dataset::MakeIterator or RestoreIterator"));
    }
    return SaveAfterStreams(it);
  }
  static Task<absl::StatusOr<std::string>> Failed(absl::Status status) { co_return status; }
  static Task<absl::StatusOr<std::string>> SaveAfterStreams(Iterator* it) {
    // Before any op pauses: a function declared Stateful that cannot be saved fails the whole save.
    if (absl::Status functions = CheckFunctionStates(*it->root_); !functions.ok()) co_return functions;
    auto writer = std::make_shared<CheckpointWriter>(it->root_.get());
    absl::Status saved = co_await it->stream_->Save(writer, std::string(kRootNodePath));
    if (!saved.ok()) co_return saved;
    co_return EncodeCheckpoint(it->root_, *it->context_->state, *writer);
  }
  static Task<absl::Status> SaveStateToFile(Iterator* it, std::string path) {
    absl::StatusOr<std::string> state = co_await SaveState(it);
    if (!state.ok()) co_return state.status();
    co_return WriteFileAtomically(path, *state);
  }

  static Task<absl::Status> CloseWithin(Iterator* it, absl::Duration timeout) { co_return co_await it->Close(timeout); }

  // True with *out set when the pipeline answered without waiting.
  bool TryNext(std::optional<Result>* out) {
    if (stream_ == nullptr) {  // closed (or moved from)
      out->emplace(std::nullopt);
      return true;
    }
    switch (stream_->Poll(&element_)) {
      case PollState::kReady:
        if (element_.ok()) {
          out->emplace(std::optional<T>(std::move(*element_)));
        } else {
          out->emplace(std::move(element_).status());
        }
        return true;
      case PollState::kEnd:
        out->emplace(std::nullopt);
        return true;
      case PollState::kPending:
        return false;
    }
    return false;
  }

  static Task<Result> NextSlow(Iterator* it) {
    for (;;) {
      std::optional<Result> ready;
      if (it->TryNext(&ready)) co_return std::move(*ready);
      std::stop_token stop = co_await CurrentStopToken();
      if (stop.stop_requested()) co_return absl::CancelledError("Iterator::Next cancelled");
      co_await it->stream_->WaitReady();
    }
  }

  IteratorContextPtr context_;
  std::unique_ptr<Stream<T>> stream_;  // destroyed before the context that owns a private pool
  absl::StatusOr<T> element_;
  std::shared_ptr<const OpNode> root_;  // null for iterators made from a bare stream: they cannot Save
  std::thread closer_;  // the thread that ran Close's teardown; joined before the next one, and at the end
  std::thread timer_;   // a timed Close's timer, joined with closer_
  bool abandoned_ = false;  // a timed Close gave up waiting: the teardown runs on alone
};

}  // namespace sluice

#endif  // SLUICE_OPS_ITERATOR_H_
