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
  if (!looked) {
    fn = (gpuleak_label_fn)gpuleak_detail_lookup_("gpuleak_api_iteration_begin");
    looked = 1;
  }
  if (fn) fn(loop);
}

/* Ends the iteration opened last on this process (any loop). Without an open iteration: ignored. */
static inline void gpuleak_iteration_end(void) {
  static gpuleak_void_fn fn;
  static int looked;
  if (!looked) {
    fn = (gpuleak_void_fn)gpuleak_detail_lookup_("gpuleak_api_iteration_end");
    looked = 1;
  }
  if (fn) fn();
}

/* A labelled instant on the timeline ("checkpoint saved"). */
static inline void gpuleak_mark(const char *label) {
  static gpuleak_label_fn fn;
  static int looked;
  if (!looked) {
    fn = (gpuleak_label_fn)gpuleak_detail_lookup_("gpuleak_api_mark");
    looked = 1;
  }
  if (fn) fn(label);
}

/* 1 when the shim is loaded and tracking, else 0. */
static inline int gpuleak_active(void) {
  static gpuleak_int_fn fn;
  static int looked;
  if (!looked) {
    fn = (gpuleak_int_fn)gpuleak_detail_lookup_("gpuleak_api_active");
    looked = 1;
  }
  return fn ? fn() : 0;
}

/* Advanced API: for gpuleak's own framework adapters (src/torch_adapter), not for programs.
 *
 * A block that a framework's own allocator handed out (op 1) or took back (op 2) inside memory it
 * already got from CUDA (a caching allocator's segment): a tensor's storage. framework: 1 =
 * PyTorch's CUDACachingAllocator, 2 = CuPy's MemoryPool, 3 = JAX's arena (no other value is
 * accepted). `size` is read for op 1 only (a
 * free takes the size recorded at op 1); `stream` is the block's stream, 0 if none. Records the
 * calling thread's native and Python stacks for op 1, like a CUDA allocation hook, and one clock
 * reading. Returns 1 when recorded, 0 when tracking is off (or not started: no CUDA allocation
 * yet, for op 2), for a call made inside one of gpuleak's own hooks, and for bad arguments (op,
 * framework, a device outside 0..32767, address 0). Safe to call under the framework's lock: it
 * takes no Python GIL and no lock of the program's.
 *
 * A block is never device memory of its own: the report counts the segments (the CUDA
 * allocations) in the device's bytes, and gives the leaks per block site (capture format 1.3,
 * kind pool_block; docs/capture-format.md). */
typedef int (*gpuleak_pool_block_fn)(int op, int device, unsigned long long address, unsigned long long size,
                                     unsigned long long stream, int framework);
/* The framework's tracker is attached (call once): `description`, e.g. "torch 2.11.0+cu130
 * CUDACachingAllocator trace tracker", goes into the capture (at most 4096 bytes are kept) and the
 * report (run.pool_tracker). */
typedef void (*gpuleak_pool_attached_fn)(int framework, const char *description);

static inline int gpuleak_pool_block(int op, int device, unsigned long long address, unsigned long long size,
                                     unsigned long long stream, int framework) {
  static gpuleak_pool_block_fn fn;
  static int looked;
  if (!looked) {
    fn = (gpuleak_pool_block_fn)gpuleak_detail_lookup_("gpuleak_api_pool_block");
    looked = 1;
  }
  return fn ? fn(op, device, address, size, stream, framework) : 0;
}

static inline void gpuleak_pool_attached(int framework, const char *description) {
  static gpuleak_pool_attached_fn fn;
  static int looked;
  if (!looked) {
    fn = (gpuleak_pool_attached_fn)gpuleak_detail_lookup_("gpuleak_api_pool_attached");
    looked = 1;
  }
  if (fn) fn(framework, description);
}

#ifdef __cplusplus
}
#endif

#endif /* GPULEAK_GPULEAK_H */
