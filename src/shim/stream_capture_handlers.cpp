// Stream capture, counted: a stream-ordered allocation made while its stream captures a graph is
// a graph reservation, not live memory, and only the driver can say whether a stream captures.
// Asking it on every cudaMallocAsync costs a driver call per allocation; while no capture is open
// anywhere in the process (the common case) the answer is known to be no.
//
// The count only errs upwards (a capture ended through an entry point that failed strangely, a
// stream destroyed while capturing): then the driver is asked, as before. It never errs
// downwards, because every entry point that begins a capture is wrapped here.
#include <atomic>

#include "shim/driver_handlers.h"
#include "shim/driver_probe.h"

namespace gpuleak::shim {

namespace detail {
std::atomic<int> g_open_captures{0};
}  // namespace detail

namespace {
using detail::g_open_captures;

CUresult began(CUresult r) {
  if (r == CUDA_SUCCESS) g_open_captures.fetch_add(1, std::memory_order_acq_rel);
  return r;
}
}  // namespace

CUresult on_begin_capture_v1(PFN_gpuleak_cuStreamBeginCapture_v10000 real, ApiId, CUstream stream) {
  return began(real(stream));
}

CUresult on_begin_capture(PFN_cuStreamBeginCapture_v10010 real, ApiId, CUstream stream, CUstreamCaptureMode mode) {
  return began(real(stream, mode));
}

CUresult on_begin_capture_to_graph(PFN_cuStreamBeginCaptureToGraph_v12030 real, ApiId, CUstream stream, CUgraph graph,
                                   const CUgraphNode *dependencies, const CUgraphEdgeData *edge_data,
                                   size_t dependency_count, CUstreamCaptureMode mode) {
  return began(real(stream, graph, dependencies, edge_data, dependency_count, mode));
}

CUresult on_end_capture(PFN_cuStreamEndCapture_v10000 real, ApiId, CUstream stream, CUgraph *graph) {
  CUresult r = real(stream, graph);
  // Success, or a capture the driver invalidated: either way that stream captures no more.
  if (r == CUDA_SUCCESS || r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
    int open = g_open_captures.load(std::memory_order_relaxed);
    while (open > 0 && !g_open_captures.compare_exchange_weak(open, open - 1, std::memory_order_acq_rel)) {
    }
  }
  return r;
}

}  // namespace gpuleak::shim
