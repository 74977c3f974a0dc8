// Stateful(f): declares that a user function keeps state of its own (a counter in a capture, an RNG it
// owns). sluice cannot detect such state, so a checkpoint would silently restore the function fresh;
// declaring it makes checkpoints honest (docs/checkpoint.md):
//
//   ds.Map(Stateful(f))                  // Save fails with FailedPrecondition naming the op
//   ds.Map(Stateful(f, save, restore))   // the function's state is saved and restored with the op's
//
// - save(const F& f) -> std::string or absl::StatusOr<std::string>: the state of the op's copy of f.
// - restore(F& f, std::string_view state) -> void or absl::Status: puts it back into a fresh copy.
// Exceptions from either become an error naming the op and its path. Map and Filter save a stateful
// function; in any other op a declared-stateful function makes Save fail, as does compact mode
// (Options::compact_checkpoints refuses the pipeline at MakeIterator). Calling the wrapper calls f;
// each stream holds its own copy, as for any function.
#ifndef SLUICE_OPS_STATEFUL_FUNCTION_H_
#define SLUICE_OPS_STATEFUL_FUNCTION_H_

#include <concepts>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/engine/detail/status_traits.h"
#include "sluice/ops/checkpoint_state.h"
#include "sluice/ops/op_node.h"

namespace sluice::ops {

// Stateful(f) without hooks.
struct NoStateHooks {};

template <class F, class SaveFn = NoStateHooks, class RestoreFn = NoStateHooks>
class StatefulFunction {
 public:
  static constexpr bool kHasHooks = !std::is_same_v<SaveFn, NoStateHooks>;

  StatefulFunction(F f, SaveFn save, RestoreFn restore)
      : f_(std::move(f)), save_(std::move(save)), restore_(std::move(restore)) {}

  template <class... Args>
  requires std::invocable<F&, Args...>
  decltype(auto) operator()(Args&&... args) { return std::invoke(f_, std::forward<Args>(args)...); }
  template <class... Args>
  requires std::invocable<const F&, Args...>
  decltype(auto) operator()(Args&&... args) const { return std::invoke(f_, std::forward<Args>(args)...); }

  absl::StatusOr<std::string> SaveState() const {
    if constexpr (!kHasHooks) {
      return absl::FailedPreconditionError(
          "its function is declared Stateful without save hooks (use Stateful(f, save, restore))");
    } else {
      try {
        if constexpr (sluice::detail::IsStatusOr<
                          std::remove_cvref_t<std::invoke_result_t<SaveFn&, const F&>>>::value) {
          return save_(std::as_const(f_));
        } else {
          return std::string(save_(std::as_const(f_)));
        }
      } catch (...) {
        return sluice::detail::StatusFromCurrentException();
      }
    }
  }
  absl::Status RestoreState(std::string_view state) {
    if constexpr (!kHasHooks) {
      return absl::FailedPreconditionError(
          "its function is declared Stateful without save hooks (use Stateful(f, save, restore))");
    } else {
      try {
        if constexpr (std::is_void_v<std::invoke_result_t<RestoreFn&, F&, std::string_view>>) {
          restore_(f_, state);
          return absl::OkStatus();
        } else {
          return restore_(f_, state);
        }
      } catch (...) {
        return sluice::detail::StatusFromCurrentException();
      }
    }
  }

 private:
  F f_;
  SaveFn save_;
  RestoreFn restore_;
};

template <class F>
auto Stateful(F f) {
  return StatefulFunction<F>(std::move(f), NoStateHooks{}, NoStateHooks{});
}

template <class F, class SaveFn, class RestoreFn>
requires std::invocable<SaveFn&, const F&> && std::invocable<RestoreFn&, F&, std::string_view>
auto Stateful(F f, SaveFn save, RestoreFn restore) {
  return StatefulFunction<F, SaveFn, RestoreFn>(std::move(f), std::move(save), std::move(restore));
}

template <class F>
inline constexpr bool kIsDeclaredStateful = false;
template <class F, class SaveFn, class RestoreFn>
inline constexpr bool kIsDeclaredStateful<StatefulFunction<F, SaveFn, RestoreFn>> = true;

// The FunctionParam of a function of type F: its label, and whether it was declared stateful (the
// iterator's Save and compact mode check that).
template <class F>
FunctionParam FunctionLabelFor(std::string label) {
  FunctionParam param = FunctionLabel(std::move(label));
  if constexpr (kIsDeclaredStateful<F>) {
    param.state = F::kHasHooks ? FunctionState::kSaved : FunctionState::kDeclared;
  }
  return param;
}

// For ops that save a stateful function (Map, Filter): appends its state after the op's values at `path`.
// Nothing for any other function.
template <class F>
absl::Status AppendFunctionState(const F& f, CheckpointWriter& writer, std::string_view path) {
  if constexpr (kIsDeclaredStateful<F>) {
    absl::StatusOr<std::string> state = f.SaveState();
    if (!state.ok()) return writer.FunctionStateError(path, "saving", state.status());
    writer.AppendState(path, *state);
  }
  return absl::OkStatus();
}

// Reads the op's values at `path` and, for a declared-stateful function, its state into `f`.
template <class F, class... Ts>
absl::Status ReadStateWithFunction(const CheckpointReader& reader, std::string_view path, F& f,
                                   Ts*... values) {
  if constexpr (kIsDeclaredStateful<F>) {
    std::string state;
    if (absl::Status s = reader.ReadState(path, values..., &state); !s.ok()) return s;
    if (absl::Status s = f.RestoreState(state); !s.ok())
      return reader.FunctionStateError(path, "restoring", s);
    return absl::OkStatus();
  } else {
    return reader.ReadState(path, values...);
  }
}

}  // namespace sluice::ops

#endif  // SLUICE_OPS_STATEFUL_FUNCTION_H_
