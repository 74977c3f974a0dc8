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
// - Checkpoints (docs/checkpoint.md): the state of a generator is the user's, so Save fails naming the
//   op unless hooks are given, FromGenerator(factory, GeneratorHooks{save, restore}), with Source the
//   type the factory returns and `produced` the number of elements the source has produced so far:
//   * save(const Source&, int64_t produced) -> std::string or absl::StatusOr<std::string>;
//   * restore(std::string_view state, int64_t produced) -> Source or absl::StatusOr<Source>: a source
//     that goes on after those elements (a coroutine's count is usually all a restore needs).
//   An element a coroutine produced but the consumer did not take yet is saved with its ElementCodec.
//
//   auto ds = FromGenerator([] {
//     return [i = 0]() mutable { return i < 3 ? std::optional<int>(i++) : std::nullopt; };
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
#include "sluice/engine/detail/status_traits.h"
#include "sluice/ops/cardinality.h"
#include "sluice/ops/element_codec.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/stateful_function.h"
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

template <class Source, class SaveFn>
absl::StatusOr<std::string> CallSave(SaveFn& save, const Source& source, int64_t produced) {
  try {
    if constexpr (sluice::detail::IsStatusOr<
                      std::remove_cvref_t<std::invoke_result_t<SaveFn&, const Source&, int64_t>>>::value) {
      return save(source, produced);
    } else {
      return std::string(save(source, produced));
    }
  } catch (...) {
    return sluice::detail::StatusFromCurrentException();
  }
}

template <class Source, class RestoreFn>
absl::StatusOr<Source> CallRestore(RestoreFn& restore, std::string_view state, int64_t produced) {
  try {
    return restore(state, produced);
  } catch (...) {
    return sluice::detail::StatusFromCurrentException();
  }
}

inline absl::Status GeneratorException(int64_t index) {
  return AnnotateError(sluice::detail::StatusFromCurrentException(), "FromGenerator", index);
}

}  // namespace detail_from_generator

// FromGenerator's save hooks (see above).
template <class SaveFn, class RestoreFn>
struct GeneratorHooks {
  SaveFn save;
  RestoreFn restore;
};
template <class SaveFn, class RestoreFn>
GeneratorHooks(SaveFn, RestoreFn) -> GeneratorHooks<SaveFn, RestoreFn>;

// FromGenerator without hooks.
using NoGeneratorHooks = GeneratorHooks<NoStateHooks, NoStateHooks>;

template <class Factory, class Hooks = NoGeneratorHooks>
class FromGeneratorNode final
    : public Node<typename detail_from_generator::SourceTraits<std::invoke_result_t<Factory&>>::T> {
 public:
  using Source = std::invoke_result_t<Factory&>;
  using Traits = detail_from_generator::SourceTraits<Source>;
  using T = typename Traits::T;
  static constexpr bool kHasHooks = !std::is_same_v<Hooks, NoGeneratorHooks>;

  FromGeneratorNode(Factory factory, FunctionParam function, Hooks hooks = {})
      : factory_(std::move(factory)), function_(std::move(function)), hooks_(std::move(hooks)) {}
  std::string_view op_name() const override { return "FromGenerator"; }
  std::vector<Param> params() const override { return {{"generator", function_}}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {}; }
  int64_t cardinality() const override { return kUnknownCardinality; }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr) const override {
    return std::make_unique<SourceStream>(factory_, hooks_);
  }
  // State: elements produced, the phase (0 not started, 1 producing, 2 ended), the save hook's bytes,
  // and a coroutine's element produced but not yet taken.
  absl::StatusOr<std::unique_ptr<Stream<T>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    if constexpr (!kHasHooks) {
      return Node<T>::RestoreStream(std::move(context), reader, path);
    } else {
      int64_t produced = 0;
      int64_t phase = 0;
      std::string state;
      Stash stash;
      if (absl::Status s = reader.ReadState(path, &produced, &phase, &state, &stash); !s.ok()) return s;
      if (produced < 0 || phase < 0 || phase > 2) {
        return reader.Corrupt(path,
                              absl::DataLossError(absl::StrCat("produced ", produced, ", phase ", phase)));
      }
      auto stream = std::make_unique<SourceStream>(factory_, hooks_);
      if (absl::Status s = stream->Resume(produced, phase, state, std::move(stash)); !s.ok()) {
        return reader.FunctionStateError(path, "restoring", s);
      }
      return stream;
    }
  }

 private:
  // What a save keeps of a coroutine's element produced but not taken: the element when it has a codec.
  using Stash = std::conditional_t<HasElementCodec<T>, std::optional<absl::StatusOr<T>>, bool>;
  class CallableStream;
  class CoroutineStream;
  using SourceStream = std::conditional_t<Traits::kCoroutine, CoroutineStream, CallableStream>;

  static constexpr std::string_view kNoHooks =
      "it has no save hooks: FromGenerator(factory, GeneratorHooks{save, restore})";

  // Calls the factory at the first pull, so an exception it throws becomes an element.
  class CallableStream final : public Stream<T> {
   public:
    CallableStream(Factory factory, Hooks hooks) : factory_(std::move(factory)), hooks_(std::move(hooks)) {}
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

    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      if constexpr (!kHasHooks) {
        return Stream<T>::SaveResult(writer->Unsupported(path, kNoHooks));
      } else {
        std::string state;
        if (source_.has_value()) {
          absl::StatusOr<std::string> saved =
              detail_from_generator::CallSave<Source>(hooks_.save, *source_, index_);
          if (!saved.ok())
            return Stream<T>::SaveResult(writer->FunctionStateError(path, "saving", saved.status()));
          state = *std::move(saved);
        }
        const int64_t phase = ended_ ? 2 : source_.has_value() ? 1 : 0;
        writer->WriteState(path, index_, phase, state, Stash{});
        return Stream<T>::SaveResult(absl::OkStatus());
      }
    }
    absl::Status Resume(int64_t produced, int64_t phase, std::string_view state, Stash) {
      index_ = produced;
      ended_ = phase == 2;
      if (phase != 1) return absl::OkStatus();
      absl::StatusOr<Source> source =
          detail_from_generator::CallRestore<Source>(hooks_.restore, state, produced);
      if (!source.ok()) return source.status();
      source_.emplace(*std::move(source));
      return absl::OkStatus();
    }

   private:
    PollState End() {
      ended_ = true;
      source_.reset();  // release what the source holds (files, buffers) at once
      return PollState::kEnd;
    }
    Factory factory_;
    [[no_unique_address]] Hooks hooks_;
    std::optional<Source> source_;
    int64_t index_ = 0;
    bool ended_ = false;
  };

  // Pulls the coroutine in WaitReady, as GeneratorStream does, and converts exceptions into elements.
  class CoroutineStream final : public Stream<T> {
   public:
    CoroutineStream(Factory factory, Hooks hooks) : factory_(std::move(factory)), hooks_(std::move(hooks)) {}
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
    // A save comes between pulls, never with one in flight (the stream has one consumer).
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      if constexpr (!kHasHooks) {
        return Stream<T>::SaveResult(writer->Unsupported(path, kNoHooks));
      } else {
        Stash stash{};
        if (stash_) {
          if constexpr (HasElementCodec<T>) {
            stash = *stash_;
          } else {
            return Stream<T>::SaveResult(
                writer->Unsupported(path, "an element it produced ahead has no ElementCodec"));
          }
        }
        const int64_t produced = index_ + (stash_ ? 1 : 0);
        std::string state;
        if (started_ && !ended_) {
          absl::StatusOr<std::string> saved =
              detail_from_generator::CallSave<Source>(hooks_.save, generator_, produced);
          if (!saved.ok())
            return Stream<T>::SaveResult(writer->FunctionStateError(path, "saving", saved.status()));
          state = *std::move(saved);
        }
        const int64_t phase = ended_ ? 2 : started_ ? 1 : 0;
        writer->WriteState(path, produced, phase, state, stash);
        return Stream<T>::SaveResult(absl::OkStatus());
      }
    }
    absl::Status Resume(int64_t produced, int64_t phase, std::string_view state, Stash stash) {
      if constexpr (HasElementCodec<T>) {
        stash_ = std::move(stash);
        if (stash_ && produced == 0) return absl::DataLossError("an element ahead of none produced");
      }
      index_ = stash_ ? produced - 1 : produced;
      started_ = phase != 0;
      ended_ = phase == 2;
      if (phase != 1) return absl::OkStatus();
      absl::StatusOr<Source> source =
          detail_from_generator::CallRestore<Source>(hooks_.restore, state, produced);
      if (!source.ok()) return source.status();
      generator_ = *std::move(source);
      return absl::OkStatus();
    }

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
    [[no_unique_address]] Hooks hooks_;
    Source generator_;
    std::optional<absl::StatusOr<T>> stash_;
    int64_t index_ = 0;
    bool started_ = false;
    bool ended_ = false;
  };

  Factory factory_;
  FunctionParam function_;
  [[no_unique_address]] Hooks hooks_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_FROM_GENERATOR_H_
