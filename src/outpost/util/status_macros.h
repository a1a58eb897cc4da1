// Early-return and invariant macros for Status-returning code (LevelDB/Abseil
// style).
//
//   OUTPOST_RETURN_IF_ERROR(expr)        returns expr's Status when it is not OK
//   OUTPOST_ASSIGN_OR_RETURN(lhs, expr)  lhs = *expr, or returns its Status
//   OUTPOST_CHECK(cond)                  aborts with file:line when cond is false
//                                        (a bug: never for bad input)
//   OUTPOST_DCHECK(cond)                 the same in debug builds only
#pragma once

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "outpost/util/status.h"

#define OUTPOST_CONCAT_INNER_(a, b) a##b
#define OUTPOST_CONCAT_(a, b) OUTPOST_CONCAT_INNER_(a, b)

#define OUTPOST_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::outpost::Status outpost_status_ = (expr);        \
    if (!outpost_status_.ok()) return outpost_status_; \
  } while (0)

#define OUTPOST_ASSIGN_OR_RETURN(lhs, expr) \
  OUTPOST_ASSIGN_OR_RETURN_IMPL_(OUTPOST_CONCAT_(outpost_statusor_, __LINE__), lhs, expr)
#define OUTPOST_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).value()

#define OUTPOST_CHECK(cond)                                                                \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "BUG: check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

#ifdef NDEBUG
#define OUTPOST_DCHECK(cond) \
  do {                       \
  } while (0)
#else
#define OUTPOST_DCHECK(cond) OUTPOST_CHECK(cond)
#endif
