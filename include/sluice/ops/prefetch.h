// Prefetch(buffer_size): runs the input ahead of the consumer on the iterator's thread pool, holding up
// to buffer_size elements; same elements, same order. buffer_size 0 is the input itself; any negative
// size other than kAutotune is InvalidArgument.
// kAutotune: the buffer starts at 2 elements and is a RAM tunable of the iterator's tuner (sluice/
// autotune.h), which raises it (up to kMaxAutotunePrefetch) while its consumer waits and the raise pays,
// within Options::ram_budget_bytes, judging element sizes by ApproxElementBytes (a running average of
// what the producer saw). With Options::autotune false it stays 2.
// Destroying the stream stops the producer and waits for it. Cardinality: the input's.
#ifndef SLUICE_OPS_PREFETCH_H_
#define SLUICE_OPS_PREFETCH_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sluice/engine/async_scope.h"
#include "sluice/ops/autotune.h"
#include "sluice/ops/detail/async_stream_owner.h"
#include "sluice/engine/channel.h"
#include "sluice/ops/element_bytes.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/user_function_stop.h"
#include "sluice/ops/error_source.h"
#include "sluice/engine/thread_pool.h"

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

// `element_bytes`: where to keep the average element size (nullptr: not tuned, not measured).
template <class T>
Task<void> Produce(ThreadPool* pool, Stream<T>* input, Channel<absl::StatusOr<T>>* buffer,
                   std::atomic<int64_t>* element_bytes, std::atomic<int64_t>* busy_tasks) {
  co_await pool->Schedule();
  const std::stop_token stop = co_await CurrentStopToken();
  absl::StatusOr<T> element;
  while (!stop.stop_requested()) {
    PollState state = PollState::kEnd;
    {
      UserCallScope call(stop, busy_tasks);  // the input's functions run here
      state = input->Poll(&element);
    }
    if (state == PollState::kEnd) break;
    if (state == PollState::kPending) {
      co_await input->WaitReady();
      continue;
    }
    if (element_bytes != nullptr) NoteElementBytes(element_bytes, ApproxElementBytes(element));
    absl::Status pushed = co_await buffer->Push(std::move(element));
    if (!pushed.ok()) break;  // closed or cancelled: the consumer is gone
  }
  buffer->Close();
}

}  // namespace detail_prefetch

template <class T>
class PrefetchNode final : public Node<T> {
 public:
  PrefetchNode(NodePtr<T> input, int64_t buffer_size) : input_(std::move(input)), buffer_size_(buffer_size) {}
  std::string_view op_name() const override { return "Prefetch"; }
  std::vector<Param> params() const override { return {{"buffer_size", buffer_size_}}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    const bool autotune = buffer_size_ == kAutotune;
    Tuner* tuner = autotune ? TunerFor(*context) : nullptr;
    const size_t capacity = tuner != nullptr ? kMaxAutotunePrefetch
                            : autotune       ? kInitialAutotunePrefetch
                                             : static_cast<size_t>(buffer_size_);
    ThreadPool* pool = context->pool;
    std::shared_ptr<AsyncScope> teardowns = context->teardowns;
    std::atomic<int64_t>* busy_tasks = context->busy_tasks.get();
    return detail_teardown::MakeAsyncStream<PrefetchStream>(std::move(teardowns), input_->MakeStream(std::move(context)),
                                                            pool, capacity, tuner, busy_tasks);
  }

 private:
  class PrefetchStream final : public Stream<T>, public Tunable {
   public:
    PrefetchStream(std::unique_ptr<Stream<T>> input, ThreadPool* pool, size_t capacity, Tuner* tuner,
                   std::atomic<int64_t>* busy_tasks)
        : input_(std::move(input)), pool_(pool), buffer_(capacity), tuned_(tuner != nullptr), busy_tasks_(busy_tasks) {
      if (tuned_) {
        buffer_.SetLimit(kInitialAutotunePrefetch);
        registration_.emplace(tuner, this);
      }
    }
    // Joined here only when nothing runs any more: made under an AsyncStreamOwner, which joins (or, on
    // a pool worker, hands off) first.
    ~PrefetchStream() override {
      BeginShutdown();
      scope_.JoinBlocking();
    }
    void BeginShutdown() {
      registration_.reset();  // the tuner no longer calls in
      scope_.RequestStop();
      buffer_.Close();
    }
    AsyncScope& scope() { return scope_; }
    PollState Poll(absl::StatusOr<T>* out) override {
      if (!started_) {
        started_ = true;
        std::atomic<int64_t>* element_bytes = tuned_ ? &element_bytes_ : nullptr;
        scope_.Spawn(detail_prefetch::Produce<T>(pool_, input_.get(), &buffer_, element_bytes, busy_tasks_));
      }
      if (waited_) {
        PollState state = *waited_ ? PollState::kReady : PollState::kEnd;
        if (*waited_) *out = std::move(**waited_);
        if (state == PollState::kReady) waited_.reset();
        return state;
      }
      if (std::optional<absl::StatusOr<T>> element = buffer_.TryPop()) {
        *out = std::move(*element);
        return PollState::kReady;
      }
      if (buffer_.closed() && buffer_.size() == 0) return PollState::kEnd;
      return PollState::kPending;
    }
    Task<void> WaitReady() override { return Wait(this); }

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
    static Task<void> Wait(PrefetchStream* self) {
      const auto start = std::chrono::steady_clock::now();
      // Resume through the pool, never inline inside the producer's Push: a consumer that then
      // destroyed this stream would join a producer suspended beneath it on the same stack.
      absl::StatusOr<std::optional<absl::StatusOr<T>>> popped = co_await self->buffer_.Pop(self->pool_);
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
    Channel<absl::StatusOr<T>> buffer_;
    // Set by WaitReady: the popped element, or an empty optional at the end of the stream.
    std::optional<std::optional<absl::StatusOr<T>>> waited_;
    bool started_ = false;
    const bool tuned_;
    std::atomic<int64_t>* busy_tasks_;  // the iterator's
    std::atomic<int64_t> element_bytes_{0};  // average, written by the producer
    AsyncScope scope_;
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
