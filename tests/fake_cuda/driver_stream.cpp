// Streams, stream capture and graphs of the fake driver. Capture is tracked
// only as far as allocation profiling needs: a stream is capturing between
// cuStreamBeginCapture and cuStreamEndCapture, and stream-ordered allocations
// made meanwhile belong to the graph (see driver_async.cpp).
#include "driver_internal.h"

#include <map>
#include <set>

using namespace fake;

namespace {
struct Streams {
    std::set<CUstream> live;
    std::map<CUstream, CUgraph_st*> capturing;
    std::set<CUgraph_st*> graphs;
    unsigned long long next_capture_id = 0;
};
Streams& st() {
    static auto* s = new Streams;
    return *s;
}
bool is_special(CUstream s) {
    return s == nullptr || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}
// _ptsz entry points: the NULL stream means the per-thread default stream.
CUstream ptsz(CUstream s) { return s ? s : CU_STREAM_PER_THREAD; }
}  // namespace

namespace fake {
bool valid_stream_locked(CUstream s) { return is_special(s) || st().live.count(s); }

int stream_device_locked(CUstream s) {
    return is_special(s) ? current_device() : s->device;
}

CUgraph_st* capture_graph_locked(CUstream s) {
    auto it = st().capturing.find(s);
    return it == st().capturing.end() ? nullptr : it->second;
}
}  // namespace fake

namespace {
CUresult synchronize(CUstream s) {
    std::lock_guard<std::mutex> lock(state_mutex());
    if (!valid_stream_locked(s)) return CUDA_ERROR_INVALID_HANDLE;
    return capture_graph_locked(s) ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult begin_capture(CUstream s, CUstreamCaptureMode mode) {
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(state_mutex());
    if (s == nullptr || s == CU_STREAM_LEGACY) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (!valid_stream_locked(s)) return CUDA_ERROR_INVALID_HANDLE;
    if (capture_graph_locked(s)) return CUDA_ERROR_ILLEGAL_STATE;
    auto* g = new CUgraph_st{++st().next_capture_id};
    st().graphs.insert(g);
    st().capturing[s] = g;
    return CUDA_SUCCESS;
}

CUresult end_capture(CUstream s, CUgraph* phGraph) {
    if (!phGraph) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(state_mutex());
    if (!valid_stream_locked(s)) return CUDA_ERROR_INVALID_HANDLE;
    CUgraph_st* g = capture_graph_locked(s);
    if (!g) return CUDA_ERROR_ILLEGAL_STATE;
    st().capturing.erase(s);
    *phGraph = g;
    return CUDA_SUCCESS;
}

CUresult capture_info(CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                      const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* num) {
    if (!status) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(state_mutex());
    if (!valid_stream_locked(s)) return CUDA_ERROR_INVALID_HANDLE;
    CUgraph_st* g = capture_graph_locked(s);
    *status = g ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    if (g) {  // outputs are only written while capturing, like the driver
        if (id) *id = g->capture_id;
        if (graph) *graph = g;
        if (deps) *deps = nullptr;
        if (edges) *edges = nullptr;
        if (num) *num = 0;
    }
    return CUDA_SUCCESS;
}
}  // namespace

extern "C" {

CUresult CUDAAPI cuStreamCreate(CUstream* phStream, unsigned int Flags) {
    if (!phStream || (Flags & ~unsigned{CU_STREAM_NON_BLOCKING})) return CUDA_ERROR_INVALID_VALUE;
    auto* s = new CUstream_st{Flags, current_device()};
    std::lock_guard<std::mutex> lock(state_mutex());
    st().live.insert(s);
    *phStream = s;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream) {
    std::lock_guard<std::mutex> lock(state_mutex());
    if (!st().live.erase(hStream)) return CUDA_ERROR_INVALID_HANDLE;
    st().capturing.erase(hStream);  // an unfinished capture is abandoned
    delete hStream;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy(CUstream hStream) { return cuStreamDestroy_v2(hStream); }

CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) { return synchronize(hStream); }
CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream) { return synchronize(ptsz(hStream)); }

CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
    return begin_capture(hStream, mode);
}
CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
    return begin_capture(ptsz(hStream), mode);
}
// CUDA 10.0 ABI: no mode argument, global mode implied.
CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream) {
    return begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL);
}
CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream hStream) {
    return begin_capture(ptsz(hStream), CU_STREAM_CAPTURE_MODE_GLOBAL);
}

CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
    return end_capture(hStream, phGraph);
}
CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph) {
    return end_capture(ptsz(hStream), phGraph);
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
    return capture_info(hStream, captureStatus, nullptr, nullptr, nullptr, nullptr, nullptr);
}
CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
    return capture_info(ptsz(hStream), captureStatus, nullptr, nullptr, nullptr, nullptr, nullptr);
}

// All three cuStreamGetCaptureInfo ABIs (10.1, 11.3, 12.3) exist in 13.0.
CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus* status,
                                        cuuint64_t* id) {
    return capture_info(hStream, status, id, nullptr, nullptr, nullptr, nullptr);
}
CUresult CUDAAPI cuStreamGetCaptureInfo_ptsz(CUstream hStream, CUstreamCaptureStatus* status,
                                             cuuint64_t* id) {
    return capture_info(ptsz(hStream), status, id, nullptr, nullptr, nullptr, nullptr);
}
CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus* status,
                                           cuuint64_t* id, CUgraph* graph,
                                           const CUgraphNode** deps, size_t* num) {
    return capture_info(hStream, status, id, graph, deps, nullptr, num);
}
CUresult CUDAAPI cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream, CUstreamCaptureStatus* status,
                                                cuuint64_t* id, CUgraph* graph,
                                                const CUgraphNode** deps, size_t* num) {
    return capture_info(ptsz(hStream), status, id, graph, deps, nullptr, num);
}
CUresult CUDAAPI cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus* status,
                                           cuuint64_t* id, CUgraph* graph,
                                           const CUgraphNode** deps,
                                           const CUgraphEdgeData** edges, size_t* num) {
    return capture_info(hStream, status, id, graph, deps, edges, num);
}
CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, CUstreamCaptureStatus* status,
                                                cuuint64_t* id, CUgraph* graph,
                                                const CUgraphNode** deps,
                                                const CUgraphEdgeData** edges, size_t* num) {
    return capture_info(ptsz(hStream), status, id, graph, deps, edges, num);
}

// Destroying the graph releases the allocations reserved during its capture.
CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph) {
    {
        std::lock_guard<std::mutex> lock(state_mutex());
        if (!st().graphs.count(hGraph)) return CUDA_ERROR_INVALID_VALUE;
        for (const auto& c : st().capturing)
            if (c.second == hGraph) return CUDA_ERROR_ILLEGAL_STATE;  // still capturing
        st().graphs.erase(hGraph);
    }
    free_graph_blocks(hGraph);
    delete hGraph;
    return CUDA_SUCCESS;
}

}  // extern "C"
