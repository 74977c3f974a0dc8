// FromGenerator(factory): a source whose elements come from C++ code, as tf.data.Dataset.from_generator.
//
// Contract:
// - tf.data calls the Python generator function anew for every iteration, so every pass starts from the
//   beginning. sluice takes a *factory* for the same reason: each stream (each MakeIterator, each epoch
//   of a Repeat) calls `factory()` once, on the consumer's thread at its first pull, and pulls from what
//   it returned:
//   * a callable `g` with `g()` returning std::optional<T> or absl::StatusOr<std::optional<T>>: one
//     call per element, on the consumer's thread, inline (no coroutine, no thread hop); std::nullopt
//     ends the stream; an error Status is an error element and the stream goes on calling g;
//   * or an AsyncGenerator<T> / AsyncGenerator<absl::StatusOr<T>> (a coroutine source): pulled one
//     element per WaitReady, elements in yield order, error elements pass through, completion ends.
// - Exceptions (from the factory, from g, or escaping the coroutine) become one InternalError element
//   naming "FromGenerator" and the element index, and then the stream ends, as a Python generator that
//   raised is finished.
// - The factory is copied into each stream, so several iterators may run at once as long as the
//   factory's copies are independent (shared state behind them is the caller's to synchronise).
// - Cancellation: a coroutine source sees the consumer's stop token (CurrentStopToken()). Destroying the
//   stream destroys the callable or the generator frame (never with a pull in flight: the stream is used
//   by one consumer at a time).
// - Cardinality: unknown, as tf.data.
//
//   auto ds = FromGenerator([] {
//     return [i = 0]() mutable -> std::optional<int> { return i < 3 ? std::optional<int>(i++) : std::nullopt; };
//   });  // 0, 1, 2 on every iteration
//   AsyncGenerator<std::string> Lines();  // a coroutine
//   auto lines = FromGenerator(&Lines);
#ifndef SLUICE_OPS_FROM_GENERATOR_H_
#define SLUICE_OPS_FROM_GENERATOR_H_

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sluice/engine/async_generator.h"
#include "sluice/ops/cardinality.h"
#include "sluice/engine/detail/status_traits.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/user_function.h"

namespace sluice::ops {

namespace detail_from_generator {

template <class R>
struct IsOptional : std::false_type {};
template <class U>
struct IsOptional<std::optional<U>> : std::true_type {};

template <class R>
struct SourceTraits;

// A callable source: g() -> optional<T> or StatusOr<optional<T>>.
template <class R>
  requires std::is_invocable_v<R&>
struct SourceTraits<R> {
  static constexpr bool kCoroutine = false;
  using Result = UnwrapStatusOrT<std::invoke_result_t<R&>>;
  static_assert(IsOptional<Result>::value,
                "FromGenerator: the callable must return std::optional<T> or absl::StatusOr<std::optional<T>>");
  using T = typename Result::value_type;
};

template <class Y>
struct SourceTraits<AsyncGenerator<Y>> {
  static constexpr bool kCoroutine = true;
  using T = UnwrapStatusOrT<Y>;
};

inline absl::Status GeneratorException(int64_t index) {
  return AnnotateError(sluice::detail::StatusFromCurrentException(), "FromGenerator", index);
}

}  // namespace detail_from_generator

template <class Factory>
class FromGeneratorNode final
    : public Node<typename detail_from_generator::SourceTraits<std::invoke_result_t<Factory&>>::T> {
 public:
  using Source = std::invoke_result_t<Factory&>;
  using Traits = detail_from_generator::SourceTraits<Source>;
  using T = typename Traits::T;

  FromGeneratorNode(Factory factory, FunctionParam function)
      : factory_(std::move(factory)), function_(std::move(function)) {}
  std::string_view op_name() const override { return "FromGenerator"; }
  std::vector<Param> params() const override { return {{"generator", function_}}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {}; }
  int64_t cardinality() const override { return kUnknownCardinality; }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr) const override {
    if constexpr (Traits::kCoroutine) {
      return std::make_unique<CoroutineStream>(factory_);
    } else {
      return std::make_unique<CallableStream>(factory_);
    }
  }

 private:
  // Calls the factory at the first pull, so an exception it throws becomes an element.
  class CallableStream final : public Stream<T> {
   public:
    explicit CallableStream(Factory factory) : factory_(std::move(factory)) {}
    PollState Poll(absl::StatusOr<T>* out) override {
      if (ended_) return PollState::kEnd;
      try {
        if (!source_) source_.emplace(factory_());
        auto result = (*source_)();
        int64_t index = index_++;
        if constexpr (sluice::detail::IsStatusOr<decltype(result)>::value) {
          if (!result.ok()) {
            *out = AnnotateError(result.status(), "FromGenerator", index);
            return PollState::kReady;
          }
          if (!result->has_value()) return End();
          *out = std::move(**result);
        } else {
          if (!result.has_value()) return End();
          *out = std::move(*result);
        }
        return PollState::kReady;
      } catch (...) {
        *out = detail_from_generator::GeneratorException(index_);
        ended_ = true;
        source_.reset();
        return PollState::kReady;
      }
    }

   private:
    PollState End() {
      ended_ = true;
      source_.reset();  // release what the source holds (files, buffers) at once
      return PollState::kEnd;
    }
    Factory factory_;
    std::optional<Source> source_;
    int64_t index_ = 0;
    bool ended_ = false;
  };

  // Pulls the coroutine in WaitReady, as GeneratorStream does, and converts exceptions into elements.
  class CoroutineStream final : public Stream<T> {
   public:
    explicit CoroutineStream(Factory factory) : factory_(std::move(factory)) {}
    PollState Poll(absl::StatusOr<T>* out) override {
      if (stash_) {
        *out = std::move(*stash_);
        stash_.reset();
        ++index_;
        return PollState::kReady;
      }
      return ended_ ? PollState::kEnd : PollState::kPending;
    }
    Task<void> WaitReady() override { return Pull(this); }

   private:
    static Task<void> Pull(CoroutineStream* self) {
      if (self->stash_ || self->ended_) co_return;
      bool failed = false;
      try {
        if (!self->started_) {
          self->started_ = true;
          self->generator_ = self->factory_();
        }
        auto next = co_await self->generator_.Next();
        if (!next) {
          self->ended_ = true;
        } else if constexpr (sluice::detail::IsStatusOr<typename Source::value_type>::value) {
          if (next->ok()) {
            self->stash_.emplace(std::move(**next));
          } else {
            self->stash_.emplace(AnnotateError(next->status(), "FromGenerator", self->index_));
          }
        } else {
          self->stash_.emplace(std::move(*next));
        }
      } catch (...) {
        failed = true;
        self->stash_.emplace(detail_from_generator::GeneratorException(self->index_));
      }
      if (failed) {
        self->ended_ = true;
        self->generator_ = Source();
      }
    }

    Factory factory_;
    Source generator_;
    std::optional<absl::StatusOr<T>> stash_;
    int64_t index_ = 0;
    bool started_ = false;
    bool ended_ = false;
  };

  Factory factory_;
  FunctionParam function_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_FROM_GENERATOR_H_
