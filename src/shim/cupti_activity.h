// GPU work on the timeline (GPULEAK_CUPTI=1, GPULEAK_ACTIVITY on by default): CUPTI's Activity API
// for kernels, copies and memsets, correlated with the host call that launched them.
//
// Only while gpuleak holds the CUPTI slot (cupti_bridge.cpp): start() after a successful
// subscription, stop() when the program's own profiler asks for CUPTI. Every CUPTI failure is a
// one-line note on stderr and no activity; the program is never affected.
#pragma once

#include "shim/cuda_headers.h"  // first: it undoes cuda.h's cuGetProcAddress rename

#include <cupti.h>

namespace gpuleak::shim::activity {

// Enables the activity kinds and the launch callbacks on `subscriber` (the caller's). `lib` is the
// dlopen handle of libcupti. Returns false (after printing why) when activity cannot be recorded.
bool start(void *lib, CUpti_SubscriberHandle subscriber);

// Flushes what CUPTI holds into the capture and disables the kinds: the slot goes to another
// CUPTI user. Safe to call when start() was never called or failed; idempotent.
void stop();

// From the callback API (the program's thread): true when (domain, cbid) is a launch, copy or
// memset call, whose entry and exit are then noted for correlation.
bool on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData *data);

}  // namespace gpuleak::shim::activity
