// Streams, stream capture and graphs of the fake runtime (plain and _ptsz
// exports, as in the real libcudart.so.13).
#include "runtime_internal.h"

using namespace fake_cudart;

extern "C" {

cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t* pStream) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    return record(d->cuStreamCreate(pStream, CU_STREAM_DEFAULT));
}

cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    return record(d->cuStreamDestroy(stream));
}

cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t stream) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    return record(d->cuStreamSynchronize(stream));
}
cudaError_t CUDARTAPI cudaStreamSynchronize_ptsz(cudaStream_t stream) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    return record(d->cuStreamSynchronize_ptsz(stream));
}

// cudaStreamCaptureMode / cudaStreamCaptureStatus values equal the CU ones.
cudaError_t CUDARTAPI cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    return record(d->cuStreamBeginCapture(stream, static_cast<CUstreamCaptureMode>(mode)));
}
cudaError_t CUDARTAPI cudaStreamBeginCapture_ptsz(cudaStream_t stream,
                                                  enum cudaStreamCaptureMode mode) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    return record(d->cuStreamBeginCapture_ptsz(stream, static_cast<CUstreamCaptureMode>(mode)));
}

cudaError_t CUDARTAPI cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    return record(d->cuStreamEndCapture(stream, pGraph));
}
cudaError_t CUDARTAPI cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t* pGraph) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    return record(d->cuStreamEndCapture_ptsz(stream, pGraph));
}

cudaError_t CUDARTAPI cudaStreamIsCapturing(cudaStream_t stream,
                                            enum cudaStreamCaptureStatus* pCaptureStatus) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    return record(d->cuStreamIsCapturing(stream, reinterpret_cast<CUstreamCaptureStatus*>(pCaptureStatus)));
}
cudaError_t CUDARTAPI cudaStreamIsCapturing_ptsz(cudaStream_t stream,
                                                 enum cudaStreamCaptureStatus* pCaptureStatus) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    return record(
        d->cuStreamIsCapturing_ptsz(stream, reinterpret_cast<CUstreamCaptureStatus*>(pCaptureStatus)));
}

cudaError_t CUDARTAPI cudaGraphDestroy(cudaGraph_t graph) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    return record(d->cuGraphDestroy(graph));
}

cudaError_t CUDARTAPI cudaDeviceSynchronize(void) {
    const Driver* d;
    if (cudaError_t e = enter(&d)) return e;
    return record(d->cuCtxSynchronize(nullptr));  // _v2 ABI: NULL = current context
}

}  // extern "C"
