// Clang thread-safety annotations (no-ops on other compilers). They document,
// and under clang's -Wthread-safety check, which mutex guards which member
// and which methods need it held:
//
//   std::mutex mu_;
//   int n_ OUTPOST_GUARDED_BY(mu_);
//   void DrainLocked() OUTPOST_REQUIRES(mu_);
#pragma once

#if defined(__clang__)
#define OUTPOST_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define OUTPOST_THREAD_ANNOTATION_(x)
#endif

#define OUTPOST_GUARDED_BY(x) OUTPOST_THREAD_ANNOTATION_(guarded_by(x))
#define OUTPOST_PT_GUARDED_BY(x) OUTPOST_THREAD_ANNOTATION_(pt_guarded_by(x))
#define OUTPOST_REQUIRES(...) OUTPOST_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define OUTPOST_EXCLUDES(...) OUTPOST_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
