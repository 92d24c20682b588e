// Internal header of the fake libcuda.so.1 (test fixture, no GPU needed).
//
// __CUDA_API_VERSION_INTERNAL makes cuda.h declare every ABI name as-is: the
// _v2 names (through its #define cuMemAlloc cuMemAlloc_v2 block), the _ptsz
// names (it also turns on the per-thread block), and, at the end of the header,
// the legacy 32-bit/un-suffixed names after #undef-ing all the macros. So in
// the fake's .cpp files `cuMemAlloc` is the legacy v2000 function and every
// definition is checked by the compiler against the real 13.0 prototype.
#pragma once

#ifndef __CUDA_API_VERSION_INTERNAL
#define __CUDA_API_VERSION_INTERNAL 1
#endif
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstddef>
#include <cstdint>
#include <mutex>

// Bodies for the opaque handle types. cuda.h only forward-declares them, the
// real driver owns their layout, and so does the fake.
struct CUctx_st {
    int device;
};
struct CUstream_st {
    unsigned int flags;
    int device;  // current device when the stream was created
};
struct CUgraph_st {
    unsigned long long capture_id;  // stream capture that produced this graph
};
struct CUmemPoolHandle_st {
    int device;
};
struct CUarray_st {
    size_t bytes;
    int device;
};
struct CUmipmappedArray_st {
    size_t bytes;
    int device;
};

namespace fake {

// Largest FAKE_CUDA_DEVICES value honoured (primary contexts are static).
constexpr int kMaxDevices = 16;
constexpr size_t kVmmGranularity = 2u << 20;  // 2 MiB, like current GPUs

// One lock for all driver state; helpers named *_locked expect it held.
std::mutex& state_mutex();

// Environment (read once, on first use).
int device_count();           // FAKE_CUDA_DEVICES, default 1
size_t device_capacity();     // FAKE_CUDA_CAPACITY, default 1 GiB
bool valid_device(int dev);

// Per-thread current context; the device defaults to 0 without one.
CUcontext current_ctx();
void set_current_ctx(CUcontext ctx);
int current_device();
CUcontext primary_ctx(int dev);  // static storage, never freed

// Capacity accounting. charge_locked() is called once per device allocation
// call: it applies FAKE_CUDA_FAIL_AFTER, then the capacity limit. Graph
// (capture) reservations pass charge=false and only consume a call number.
CUresult charge_locked(int dev, size_t bytes, bool charge = true);
void uncharge_locked(int dev, size_t bytes);
size_t used_locked(int dev);

// Registry of pointer-style allocations (device ptr -> block).
enum class BlockKind { Device, Pinned };
struct AllocRequest {
    size_t bytes = 0;             // bytes counted against capacity
    int device = 0;
    BlockKind kind = BlockKind::Device;
    bool charge = true;           // false: graph reservation / pinned host
    bool low32 = false;           // legacy v1 API: address must fit 32 bits
    CUgraph_st* graph = nullptr;  // capture-owned allocation
    bool pooled = false;          // stream-ordered, from a pool (see pool_held_locked)
};
CUresult alloc_block(const AllocRequest& req, void** out);
// Frees the block starting exactly at p. INVALID_VALUE for unknown/interior
// pointers or a kind mismatch (device free of a pinned block and vice versa).
CUresult free_block(void* p, BlockKind kind);
// cuDevicePrimaryCtxReset: drop every non-graph device block of dev.
void free_device_blocks(int dev);
// cuGraphDestroy: drop the blocks reserved while capturing graph g.
void free_graph_blocks(CUgraph_st* g);

// Streams (stream.cpp). Special handles: NULL, CU_STREAM_LEGACY,
// CU_STREAM_PER_THREAD. Returns the graph being captured, or nullptr.
CUgraph_st* capture_graph_locked(CUstream s);
bool valid_stream_locked(CUstream s);
int stream_device_locked(CUstream s);  // creator's device, else current

// What the pools hold. With FAKE_CUDA_POOL_KEEP=1 the pools of a device keep the highest bytes
// their allocations reached (as with a release threshold of UINT64_MAX) until cuMemPoolTrimTo;
// otherwise they hold only what is live. Not charged against the capacity beyond what is live.
void pool_trim_locked(int dev, size_t keep_bytes);
size_t pool_cached_locked(int dev);  // held beyond the live pooled blocks

// Stream-ordered allocation shared by the legacy and _ptsz entry points.
// pool == nullptr means the device's default pool (the stream's device).
CUresult alloc_async(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool, CUstream s);
CUresult free_async(CUdeviceptr dptr, CUstream s);

}  // namespace fake
