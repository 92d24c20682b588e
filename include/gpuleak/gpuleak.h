/* gpuleak.h: the C API a program may call to tell gpuleak what its loop is.
 *
 *   for (int step = 0; step < steps; ++step) {
 *     gpuleak_iteration_begin("train");
 *     ...
 *     gpuleak_iteration_end();
 *   }
 *
 * Header-only: every call looks the shim up at run time (dlsym on the already loaded
 * libgpuleak.so), so a program built with this header has no link-time dependency on gpuleak and
 * runs unchanged, at the cost of one failed lookup, when it is not profiled. Thread-safe.
 * Iterations are per process; loops with different names (train, eval) are kept apart.
 * On glibc older than 2.34 link with -ldl. */
#ifndef GPULEAK_GPULEAK_H
#define GPULEAK_GPULEAK_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <dlfcn.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The shim's entry points (exported by libgpuleak.so). */
typedef void (*gpuleak_label_fn)(const char *);
typedef void (*gpuleak_void_fn)(void);
typedef int (*gpuleak_int_fn)(void);

static inline void *gpuleak_detail_lookup_(const char *name) { return dlsym(RTLD_DEFAULT, name); }

/* Starts iteration of loop `loop` (NULL or "" = the default loop). An iteration still open for the
 * same loop is closed first. */
static inline void gpuleak_iteration_begin(const char *loop) {
  static gpuleak_label_fn fn;
  static int looked;
  if (!looked) { fn = (gpuleak_label_fn)gpuleak_detail_lookup_("gpuleak_api_iteration_begin"); looked = 1; }
  if (fn) fn(loop);
}

/* Ends the iteration opened last on this process (any loop). Without an open iteration: ignored. */
static inline void gpuleak_iteration_end(void) {
  static gpuleak_void_fn fn;
  static int looked;
  if (!looked) { fn = (gpuleak_void_fn)gpuleak_detail_lookup_("gpuleak_api_iteration_end"); looked = 1; }
  if (fn) fn();
}

/* A labelled instant on the timeline ("checkpoint saved"). */
static inline void gpuleak_mark(const char *label) {
  static gpuleak_label_fn fn;
  static int looked;
  if (!looked) { fn = (gpuleak_label_fn)gpuleak_detail_lookup_("gpuleak_api_mark"); looked = 1; }
  if (fn) fn(label);
}

/* 1 when the shim is loaded and tracking, else 0. */
static inline int gpuleak_active(void) {
  static gpuleak_int_fn fn;
  static int looked;
  if (!looked) { fn = (gpuleak_int_fn)gpuleak_detail_lookup_("gpuleak_api_active"); looked = 1; }
  return fn ? fn() : 0;
}

#ifdef __cplusplus
}
#endif

#endif /* GPULEAK_GPULEAK_H */
