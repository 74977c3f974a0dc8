// Status propagation inside coroutines.
//
// Contract: SLUICE_CO_RETURN_IF_ERROR(expr) evaluates `expr` (an absl::Status) once and `co_return`s it
// when it is not OK. SLUICE_CO_ASSIGN_OR_RETURN(lhs, expr) evaluates `expr` (an absl::StatusOr<T>) once,
// `co_return`s its status on error and otherwise moves the value into `lhs` (a declaration or an lvalue).
// Both are plain if/else statements (no GNU statement expressions), usable in any coroutine whose
// return type accepts an absl::Status.
//
//   Task<absl::StatusOr<int>> Size(Reactor& io, int fd) {
//     SLUICE_CO_ASSIGN_OR_RETURN(FileStat st, co_await io.Stat(fd));
//     co_return static_cast<int>(st.size);
//   }
#ifndef SLUICE_ENGINE_STATUS_MACROS_H_
#define SLUICE_ENGINE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SLUICE_CONCAT_INNER_(a, b) a##b
#define SLUICE_CONCAT_(a, b) SLUICE_CONCAT_INNER_(a, b)

#define SLUICE_CO_RETURN_IF_ERROR(expr)                        \
  if (::absl::Status sluice_status_ = (expr); !sluice_status_.ok()) \
    co_return sluice_status_;                                  \
  else                                                         \
    (void)0

#define SLUICE_CO_ASSIGN_OR_RETURN(lhs, expr) \
  SLUICE_CO_ASSIGN_OR_RETURN_IMPL_(SLUICE_CONCAT_(sluice_statusor_, __LINE__), lhs, expr)

#define SLUICE_CO_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                     \
  if (!tmp.ok()) co_return std::move(tmp).status();      \
  lhs = std::move(tmp).value()

// Non-coroutine forms, for ordinary functions.
#define SLUICE_RETURN_IF_ERROR(expr)                                \
  if (::absl::Status sluice_status_ = (expr); !sluice_status_.ok()) \
    return sluice_status_;                                          \
  else                                                              \
    (void)0

#define SLUICE_ASSIGN_OR_RETURN(lhs, expr) \
  SLUICE_ASSIGN_OR_RETURN_IMPL_(SLUICE_CONCAT_(sluice_statusor_, __LINE__), lhs, expr)

#define SLUICE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).status();      \
  lhs = std::move(tmp).value()

#endif  // SLUICE_ENGINE_STATUS_MACROS_H_
