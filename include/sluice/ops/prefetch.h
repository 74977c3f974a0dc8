// Prefetch(buffer_size): runs the input ahead of the consumer on the iterator's thread pool, holding up
// to buffer_size elements; same elements, same order. buffer_size 0 is the input itself; any negative
// size other than kAutotune is InvalidArgument.
// kAutotune: the buffer starts at 2 elements and is a RAM tunable of the iterator's tuner (sluice/
// autotune.h), which raises it (up to kMaxAutotunePrefetch) while its consumer waits and the raise pays,
// within Options::ram_budget_bytes, judging element sizes by ApproxElementBytes (a running average of
// what the producer saw). With Options::autotune false it stays 2.
// Destroying the stream stops the producer and waits for it. Cardinality: the input's.
// Checkpoints (docs/checkpoint.md): Save stops the producer (through its scope's stop, which costs the
// per-element path nothing new), waits for it without blocking, saves the buffered elements then the
// input, and starts a new producer at the next Poll; the buffered elements come out first, before and
// after a restore.
#ifndef SLUICE_OPS_PREFETCH_H_
#define SLUICE_OPS_PREFETCH_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <stop_token>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sluice/engine/async_scope.h"
#include "sluice/engine/channel.h"
#include "sluice/engine/thread_pool.h"
#include "sluice/ops/autotune.h"
#include "sluice/ops/detail/async_stream_owner.h"
#include "sluice/ops/element_bytes.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/user_function_stop.h"

namespace sluice::ops {

inline constexpr int64_t kAutotune = -1;
inline constexpr size_t kInitialAutotunePrefetch = 2;
inline constexpr size_t kMaxAutotunePrefetch = 64;

namespace detail_prefetch {

// Pulls `input` on the pool and pushes into `buffer` until the input ends or the scope stops it. The
// stream that owns all three joins this task before destroying them.
// A running average of element sizes (1/8 weight to the newest), for the tuner's RAM budget.
inline void NoteElementBytes(std::atomic<int64_t>* average, int64_t bytes) {
  const int64_t old = average->load(std::memory_order_relaxed);
  average->store(old == 0 ? bytes : old + (bytes - old) / 8, std::memory_order_relaxed);
}

// Awaits `task` with `token` as its stop token instead of the awaiting coroutine's.
template <class T>
class [[nodiscard]] AwaitWithStopToken {
 public:
  AwaitWithStopToken(Task<T> task, const std::stop_token* token) : task_(std::move(task)), token_(token) {}
  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) {
    task_.handle().promise().set_stop_token(token_);
    awaiter_.emplace(task_.handle());
    return awaiter_->await_suspend(awaiting);  // a type-erased handle: the token set above stays
  }
  T await_resume() { return awaiter_->await_resume(); }

 private:
  Task<T> task_;
  const std::stop_token* token_;
  std::optional<typename Task<T>::Awaiter> awaiter_;
};

// Compact checkpoints: an element, with the mark of the input right after it was pulled (which is where
// the input stands once the consumer has the element) for every kMarkInterval-th element. The mark is
// out of line: inline, its 128 bytes were copied with every element through the channel (the parallel
// Map drain benchmark ran at 0.75x with compact mode on), where one in kMarkInterval elements has one.
template <class T>
struct MarkedElement {
  absl::StatusOr<T> element;
  std::unique_ptr<StreamMark> after;  // null for unmarked elements
};

// The producer's: its mark writer, its count of elements pulled, and the elements a restore stands
// before, which it drops first.
struct ProducerMarks {
  MarkWriter writer;
  int64_t pulled = 0;
  int64_t skip_left = 0;
  int64_t every = kMarkInterval;  // 1 where the input does not replay in order (ReplaysInOrder)
};
template <class T>
absl::StatusOr<T>& ElementOf(absl::StatusOr<T>& slot) {
  return slot;
}
template <class T>
absl::StatusOr<T>& ElementOf(MarkedElement<T>& slot) {
  return slot.element;
}

// The slot of an element just pulled from `input`: the element itself, or it with the input's mark.
template <class T, class Slot>
Slot MakeSlot(absl::StatusOr<T>&& element, const Stream<T>& input, ProducerMarks* marks) {
  if constexpr (std::is_same_v<Slot, absl::StatusOr<T>>) {
    return std::move(element);
  } else {
    Slot slot{std::move(element), nullptr};
    if (++marks->pulled % marks->every == 0) {
      slot.after = std::make_unique<StreamMark>();
      marks->writer.Begin(slot.after.get());
      input.Mark(marks->writer);  // the node accepted compact mode, so every stream below marks
    }
    return slot;
  }
}

// `element_bytes`: where to keep the average element size (nullptr: not tuned, not measured).
// Two stops: the task's own (its scope's), requested by a teardown and by a save's pause, ends the loop
// and interrupts a waiting push, whose element goes to `unpushed`; `teardown`, requested by a teardown
// only, is what the input's calls and user functions see, because the inputs cannot resume after a
// cancelled read (a file reader ends), so a pause lets the call in flight finish.
// `marks`: elements to drop first, and the writer for MarkedElement slots.
template <class T, class Slot>
Task<void> Produce(ThreadPool* pool, Stream<T>* input, Channel<Slot>* buffer,
                   std::atomic<int64_t>* element_bytes, std::atomic<int64_t>* busy_tasks,
                   const std::stop_token* teardown, std::optional<Slot>* unpushed, ProducerMarks* marks) {
  co_await pool->Schedule();
  const std::stop_token stop = co_await CurrentStopToken();
  absl::StatusOr<T> element;
  while (!stop.stop_requested()) {
    PollState state = PollState::kEnd;
    {
      UserCallScope call(*teardown, busy_tasks);  // the input's functions run here
      state = input->Poll(&element);
    }
    if (state == PollState::kEnd) break;
    if (state == PollState::kPending) {
      co_await AwaitWithStopToken<void>(input->WaitReady(), teardown);
      continue;
    }
    if (marks->skip_left > 0) {
      --marks->skip_left;
      continue;
    }
    if (element_bytes != nullptr) NoteElementBytes(element_bytes, ApproxElementBytes(element));
    auto push = buffer->Push(MakeSlot<T, Slot>(std::move(element), *input, marks));
    absl::Status pushed = co_await push;
    if (!pushed.ok()) {  // closed or cancelled: the consumer is gone, or a save pauses this producer
      if (unpushed != nullptr) *unpushed = std::move(push.value());
      break;
    }
  }
  // After a stop the buffer stays open: a teardown closes it itself, and a paused stream goes on.
  if (!stop.stop_requested()) buffer->Close();
}

}  // namespace detail_prefetch

template <class T>
class PrefetchNode final : public Node<T> {
 public:
  PrefetchNode(NodePtr<T> input, int64_t buffer_size) : input_(std::move(input)), buffer_size_(buffer_size) {}
  std::string_view op_name() const override { return "Prefetch"; }
  DatasetSpec element_spec() const override { return input_->element_spec(); }
  bool keeps_compact_state(const Options&) const override { return HasElementCodec<T>; }
  std::vector<Param> params() const override { return {{"buffer_size", buffer_size_}}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    std::unique_ptr<Stream<T>> input = input_->MakeStream(context);
    return MakeOver(*context, std::move(input), {});
  }
  // State: the elements the producer had buffered (they come out first) and `skip`, the input elements
  // to drop first (the input's mark stands that many before where the producer stood; compact states),
  // then the input at /0.
  absl::StatusOr<std::unique_ptr<Stream<T>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    if constexpr (!HasElementCodec<T>) {
      return reader.Unsupported(path);
    } else {
      std::vector<absl::StatusOr<T>> buffered;
      int64_t skip = 0;
      if (absl::Status s = reader.ReadState(path, &buffered, &skip); !s.ok()) return s;
      if (skip < 0) return reader.Corrupt(path, absl::DataLossError(absl::StrCat(skip, " elements to skip")));
      auto input = input_->RestoreStream(context, reader, ChildNodePath(path, 0));
      if (!input.ok()) return input.status();
      return MakeOver(*context, std::move(*input),
                      std::deque<absl::StatusOr<T>>(std::make_move_iterator(buffered.begin()),
                                                    std::make_move_iterator(buffered.end())),
                      skip);
    }
  }

 private:
  // The prefetching stream over `input`, its buffered elements `carry` coming out first.
  std::unique_ptr<Stream<T>> MakeOver(const IteratorContext& context, std::unique_ptr<Stream<T>> input,
                                      std::deque<absl::StatusOr<T>> carry, int64_t skip = 0) const {
    const bool autotune = buffer_size_ == kAutotune;
    Tuner* tuner = autotune ? TunerFor(context) : nullptr;
    const size_t capacity = tuner != nullptr ? kMaxAutotunePrefetch
                            : autotune       ? kInitialAutotunePrefetch
                                             : static_cast<size_t>(buffer_size_);
    if constexpr (HasElementCodec<T>) {
      if (context.options.compact_checkpoints) {
        return detail_teardown::MakeAsyncStream<PrefetchStream<detail_prefetch::MarkedElement<T>>>(
            context.teardowns, std::move(input), context.pool, capacity, tuner, context.busy_tasks.get(),
            std::move(carry), skip, ReplaysInOrder(*input_, context.options) ? kMarkInterval : 1);
      }
    }
    return detail_teardown::MakeAsyncStream<PrefetchStream<absl::StatusOr<T>>>(
        context.teardowns, std::move(input), context.pool, capacity, tuner, context.busy_tasks.get(),
        std::move(carry), skip);
  }

  // Slot: absl::StatusOr<T>, or MarkedElement<T> for compact checkpoints: then a save writes the mark
  // of the last element returned instead of the buffer, without pausing the producer.
  template <class Slot>
  class PrefetchStream final : public Stream<T>, public Tunable {
    static constexpr bool kCompact = !std::is_same_v<Slot, absl::StatusOr<T>>;

   public:
    PrefetchStream(std::unique_ptr<Stream<T>> input, ThreadPool* pool, size_t capacity, Tuner* tuner,
                   std::atomic<int64_t>* busy_tasks, std::deque<absl::StatusOr<T>> carry = {},
                   int64_t skip = 0, int64_t mark_every = 1)
        : input_(std::move(input)),
          pool_(pool),
          buffer_(capacity),
          carry_(std::move(carry)),
          tuned_(tuner != nullptr),
          busy_tasks_(busy_tasks) {
      if (tuned_) {
        buffer_.SetLimit(kInitialAutotunePrefetch);
        registration_.emplace(tuner, this);
      }
      marks_.skip_left = skip;
      marks_.every = std::max<int64_t>(1, mark_every);
      if constexpr (kCompact) {
        marks_.writer.Begin(&returned_mark_);
        marked_ = input_->Mark(marks_.writer);
        returned_skip_ = skip;
      }
    }
    // Joined here only when nothing runs any more: made under an AsyncStreamOwner, which joins (or, on
    // a pool worker, hands off) first.
    ~PrefetchStream() override {
      BeginShutdown();
      scope_->JoinBlocking();
    }
    void BeginShutdown() {
      registration_.reset();  // the tuner no longer calls in
      teardown_.request_stop();
      scope_->RequestStop();
      buffer_.Close();
    }
    AsyncScope& scope() { return *scope_; }
    PollState Poll(absl::StatusOr<T>* out) override {
      if (!started_) {
        started_ = true;
        std::atomic<int64_t>* element_bytes = tuned_ ? &element_bytes_ : nullptr;
        scope_->Spawn(detail_prefetch::Produce<T, Slot>(pool_, input_.get(), &buffer_, element_bytes,
                                                        busy_tasks_, &teardown_token_, &unpushed_, &marks_));
      }
      if (!carry_.empty()) [[unlikely]] {  // buffered before a save or a restore: they come first
        *out = std::move(carry_.front());
        carry_.pop_front();
        return PollState::kReady;
      }
      if (waited_) {
        PollState state = *waited_ ? PollState::kReady : PollState::kEnd;
        if (*waited_) Take(std::move(**waited_), out);
        if (state == PollState::kReady) waited_.reset();
        return state;
      }
      if (std::optional<Slot> slot = buffer_.TryPop()) {
        Take(std::move(*slot), out);
        return PollState::kReady;
      }
      if (buffer_.closed() && buffer_.size() == 0) return PollState::kEnd;
      return PollState::kPending;
    }
    Task<void> WaitReady() override { return Wait(this); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      if constexpr (!HasElementCodec<T>) {
        return Stream<T>::SaveResult(writer->Unsupported(path, "its elements have no ElementCodec"));
      } else if constexpr (kCompact) {
        // The input stood at returned_mark_ when the consumer took its last element; the carry (a full
        // state's elements, restored) comes before anything the producer pulled.
        if (!marked_) return Stream<T>::SaveResult(writer->Unsupported(ChildNodePath(path, 0)));
        writer->WriteState(path, std::vector<absl::StatusOr<T>>(carry_.begin(), carry_.end()),
                           returned_skip_);
        returned_mark_.WriteTo(writer.get(), ChildNodePath(path, 0));
        return Stream<T>::SaveResult(absl::OkStatus());
      } else {
        return SaveBuffered(this, std::move(writer), std::move(path));
      }
    }
    bool Mark(MarkWriter& mark) const override {
      if constexpr (!kCompact) {
        return false;
      } else {
        mark.Write(std::vector<absl::StatusOr<T>>(carry_.begin(), carry_.end()), returned_skip_);
        mark.AppendInputMark(0, returned_mark_);
        return marked_;
      }
    }

    // Tunable (kAutotune only): a unit is one buffered element.
    int parallelism() const override { return static_cast<int>(buffer_.limit()); }
    int max_parallelism() const override { return static_cast<int>(buffer_.capacity()); }
    void SetParallelism(int n) override { buffer_.SetLimit(static_cast<size_t>(std::max(n, 1))); }
    BufferStats buffer_stats() const override {
      return BufferStats{static_cast<int64_t>(buffer_.size()), static_cast<int64_t>(buffer_.limit())};
    }
    bool uses_cpu() const override { return false; }
    int64_t unit_bytes() const override {
      return std::max<int64_t>(element_bytes_.load(std::memory_order_relaxed), sizeof(absl::StatusOr<T>));
    }

   private:
    void Take(Slot&& slot, absl::StatusOr<T>* out) {
      *out = std::move(detail_prefetch::ElementOf<T>(slot));
      if constexpr (kCompact) {
        if (slot.after != nullptr) {
          std::swap(returned_mark_, *slot.after);
          returned_skip_ = 0;
        } else {
          ++returned_skip_;
        }
      }
    }
    static Task<absl::Status> SaveBuffered(PrefetchStream* self, std::shared_ptr<CheckpointWriter> writer,
                                           std::string path) {
      if (self->started_) {
        // Pause: the stop ends the producer once its input call in flight returns (a Save can wait that
        // long); the join resumes this coroutine when it is gone, on its thread, without blocking one.
        self->scope_->RequestStop();
        co_await self->scope_->Join();
        self->scope_ = std::make_unique<AsyncScope>();
        self->started_ = false;  // the next Poll starts a new producer
        // In order: what WaitReady popped, what the buffer holds, what the producer could not push.
        if (self->waited_) {
          if (*self->waited_) self->carry_.push_back(std::move(**self->waited_));
          self->waited_.reset();
        }
        while (std::optional<absl::StatusOr<T>> element = self->buffer_.TryPop()) {
          self->carry_.push_back(std::move(*element));
        }
        if (self->unpushed_) {
          self->carry_.push_back(std::move(*self->unpushed_));
          self->unpushed_.reset();
        }
      }
      // The producer is gone: its count of elements still to drop is ours to read.
      writer->WriteState(path, std::vector<absl::StatusOr<T>>(self->carry_.begin(), self->carry_.end()),
                         self->marks_.skip_left);
      co_return co_await self->input_->Save(std::move(writer), ChildNodePath(path, 0));
    }

    static Task<void> Wait(PrefetchStream* self) {
      const auto start = std::chrono::steady_clock::now();
      // Resume through the pool, never inline inside the producer's Push: a consumer that then
      // destroyed this stream would join a producer suspended beneath it on the same stack.
      absl::StatusOr<std::optional<Slot>> popped = co_await self->buffer_.Pop(self->pool_);
      if (self->tuned_) {
        self->AddConsumerWait(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
      }
      if (!popped.ok()) co_return;  // cancelled: the consumer's stop; Poll reports pending again
      self->waited_ = std::move(*popped);
    }

    // Destruction order matters: the producer uses input_ and buffer_, so they are declared before the
    // scope, and the destructor joins the scope explicitly before any member goes.
    std::unique_ptr<Stream<T>> input_;
    ThreadPool* pool_;
    Channel<Slot> buffer_;
    // Set by WaitReady: the popped element, or an empty optional at the end of the stream.
    std::optional<std::optional<Slot>> waited_;
    // Elements buffered when the stream was saved or restored: they come out before the buffer's.
    std::deque<absl::StatusOr<T>> carry_;
    std::optional<Slot> unpushed_;  // written by a stopped producer, read after its join
    detail_prefetch::ProducerMarks marks_;  // the producer's (the constructor's before it starts)
    // Compact: the input's newest mark at or before its place after the last element returned, and the
    // number of elements between the two.
    StreamMark returned_mark_;
    int64_t returned_skip_ = 0;
    bool marked_ = false;           // compact: the input marks (the node check makes it so)
    std::stop_source teardown_;
    const std::stop_token teardown_token_ = teardown_.get_token();
    bool started_ = false;
    const bool tuned_;
    std::atomic<int64_t>* busy_tasks_;  // the iterator's
    std::atomic<int64_t> element_bytes_{0};  // average, written by the producer
    std::unique_ptr<AsyncScope> scope_ = std::make_unique<AsyncScope>();  // a new one after each save's pause
    std::optional<TunerRegistration> registration_;
  };

  NodePtr<T> input_;
  int64_t buffer_size_;
};

template <class T>
NodePtr<T> MakePrefetch(NodePtr<T> input, int64_t buffer_size) {
  if (buffer_size == 0) return input;
  if (buffer_size < 0 && buffer_size != kAutotune) {
    return MakeErrorSource<T>("Prefetch", absl::InvalidArgumentError(absl::StrCat(
                                              "Prefetch: buffer_size must be >= 0 or kAutotune, got ", buffer_size)));
  }
  return std::make_shared<PrefetchNode<T>>(std::move(input), buffer_size);
}

}  // namespace sluice::ops

#endif  // SLUICE_OPS_PREFETCH_H_
