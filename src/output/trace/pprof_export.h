// `gpuleak export --format pprof`: the device memory live at one moment (or added for good by a
// span of iterations), by call stack, as a gzipped pprof profile (github.com/google/pprof,
// proto/profile.proto), written by hand with ProtoEncoder like the Perfetto trace.
//
// Sample types are those of Go's heap profiles, so `pprof -sample_index` and the web UI treat
// it as one: inuse_space (bytes), inuse_objects (count). Each sample is one call site on one
// device: its locations leaf first (the frame that called CUDA) and "cuda:N" last (the root,
// as in the folded stacks), plus a "device" label so `-tagfocus device=cuda:1` selects a GPU.
// Functions are named by the function alone (file and line go in Function/Line), so pprof's
// -functions and -lines granularities both work; unknown functions take the headline-aware
// label (sites.h frame_label). One mapping (named `program`) holds every location and says it
// is already symbolized, so pprof has nothing to look up. Untrusted strings are repaired to valid UTF-8 (Go's decoder
// keeps them as bytes, but its text and web outputs need valid text).
#pragma once

#include <string>
#include <vector>

#include "output/trace/collapsed_stacks.h"

namespace gpuleak::output::trace {

// The gzipped profile.proto bytes of `live`; `time_ns` (ns since the epoch, 0 = unknown) is the
// profile's time_nanos; `program` names its one mapping.
std::string pprof_profile(const std::vector<LiveStack> &live, int64_t time_ns, const std::string &program);

// profile.proto's bytes before gzip (the tests decode these).
std::string pprof_profile_uncompressed(const std::vector<LiveStack> &live, int64_t time_ns, const std::string &program);

}  // namespace gpuleak::output::trace
