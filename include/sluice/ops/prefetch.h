// Prefetch(buffer_size): runs the input ahead of the consumer on the iterator's thread pool, holding up
// to buffer_size elements; same elements, same order. buffer_size 0 is the input itself; kAutotune (-1)
// currently means 2 (the tuner will own it); any other negative size is InvalidArgument.
// Destroying the stream stops the producer and waits for it. Cardinality: the input's.
#ifndef SLUICE_OPS_PREFETCH_H_
#define SLUICE_OPS_PREFETCH_H_

#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sluice/async_scope.h"
#include "sluice/channel.h"
#include "sluice/op_node.h"
#include "sluice/ops/error_source.h"
#include "sluice/thread_pool.h"

namespace sluice::ops {

inline constexpr int64_t kAutotune = -1;

namespace detail_prefetch {

// Pulls `input` on the pool and pushes into `buffer` until the input ends or the scope stops it. The
// stream that owns all three joins this task before destroying them.
template <class T>
Task<void> Produce(ThreadPool* pool, Stream<T>* input, Channel<absl::StatusOr<T>>* buffer) {
  co_await pool->Schedule();
  std::stop_token stop = co_await CurrentStopToken();
  absl::StatusOr<T> element;
  while (!stop.stop_requested()) {
    PollState state = input->Poll(&element);
    if (state == PollState::kEnd) break;
    if (state == PollState::kPending) {
      co_await input->WaitReady();
      continue;
    }
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
    size_t capacity = buffer_size_ == kAutotune ? 2 : static_cast<size_t>(buffer_size_);
    ThreadPool* pool = context->pool;
    return std::make_unique<PrefetchStream>(input_->MakeStream(std::move(context)), pool, capacity);
  }

 private:
  class PrefetchStream final : public Stream<T> {
   public:
    PrefetchStream(std::unique_ptr<Stream<T>> input, ThreadPool* pool, size_t capacity)
        : input_(std::move(input)), pool_(pool), buffer_(capacity) {}
    ~PrefetchStream() override {
      scope_.RequestStop();
      buffer_.Close();
      scope_.JoinBlocking();
    }
    PollState Poll(absl::StatusOr<T>* out) override {
      if (!started_) {
        started_ = true;
        scope_.Spawn(detail_prefetch::Produce<T>(pool_, input_.get(), &buffer_));
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

   private:
    static Task<void> Wait(PrefetchStream* self) {
      // Resume through the pool, never inline inside the producer's Push: a consumer that then
      // destroyed this stream would join a producer suspended beneath it on the same stack.
      absl::StatusOr<std::optional<absl::StatusOr<T>>> popped = co_await self->buffer_.Pop(self->pool_);
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
    AsyncScope scope_;
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
