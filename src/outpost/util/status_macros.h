// Early-return and invariant macros for Status-returning code (LevelDB/Abseil
// style).
//
//   OUTPOST_RETURN_IF_ERROR(expr)        returns expr's Status when it is not OK
//   OUTPOST_ASSIGN_OR_RETURN(lhs, expr)  lhs = *expr (an existing lvalue), or
//                                        returns expr's Status
//   OUTPOST_CHECK(cond)                  aborts with file:line when cond is false
//                                        (a bug: never for bad input)
//   OUTPOST_DCHECK(cond)                 the same in debug builds only
#pragma once

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "outpost/util/status.h"

#define OUTPOST_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::outpost::Status outpost_status_ = (expr);        \
    if (!outpost_status_.ok()) return outpost_status_; \
  } while (0)

// One statement (safe in an unbraced if/else).
#define OUTPOST_ASSIGN_OR_RETURN(lhs, expr)                         \
  do {                                                              \
    auto outpost_statusor_ = (expr);                                \
    if (!outpost_statusor_.ok()) return outpost_statusor_.status(); \
    lhs = std::move(outpost_statusor_).value();                     \
  } while (0)

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
