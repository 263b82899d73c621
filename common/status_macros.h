// RETURN_IF_ERROR / ASSIGN_OR_RETURN: Debian's Abseil 20220623 has no status_macros.h.
#ifndef REIN_COMMON_STATUS_MACROS_H_
#define REIN_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define REIN_CONCAT_INNER_(a, b) a##b
#define REIN_CONCAT_(a, b) REIN_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define RETURN_IF_ERROR(expr)                    \
  do {                                           \
    ::absl::Status rein_status_ = (expr);        \
    if (!rein_status_.ok()) return rein_status_; \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, F());` assigns the value of a StatusOr or returns its status.
#define ASSIGN_OR_RETURN(lhs, expr) \
  REIN_ASSIGN_OR_RETURN_IMPL_(REIN_CONCAT_(rein_statusor_, __LINE__), lhs, expr)

#define REIN_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                \
  if (!statusor.ok()) return statusor.status();          \
  lhs = std::move(statusor).value()

#endif  // REIN_COMMON_STATUS_MACROS_H_
