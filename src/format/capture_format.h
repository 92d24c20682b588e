// The capture file (.gpuleak): gpuleak's one crash-safe artifact.
//
// Layout, version 1 (little endian, no padding between records; docs/capture-format.md is the
// reader's guide to this header):
//
//   FileHeader                       written once, before any record
//   { RecordHeader, payload }*       appended by the recorder's writer thread
//
// Every prefix that ends on a record boundary is a valid capture: the file is only ever appended
// to, so a process killed mid-run leaves a readable file, and a record cut short by the kill is
// detected (its header announces more bytes than are left) and reported as truncation.
//
// Fixed-size payloads are plain structs copied with memcpy. Variable-size payloads (strings,
// stacks, modules) start with a fixed struct followed by their bytes. A reader skips record types
// it does not know (minor versions add types or append fields to a payload); a different major
// version is refused.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpuleak::format {

inline constexpr char kMagic[8] = {'G', 'P', 'U', 'L', 'E', 'A', 'K', '\0'};
inline constexpr uint16_t kMajorVersion = 1;
// 1.1 added kGpuActivity and kDeviceUsage; 1.2 kFlagUntimed; 1.3 Kind::kPoolBlock and kPoolTracker;
// 1.4 kAggregateSite and kAggregateWindow (the aggregated form past the capture budget);
// 1.5 kLoop, kLoopPass and kObserver (the observed Python loops); 1.6 the OomRecord's pool fields
// and the CuPy and JAX pool objects (Api cupyMemoryPool, jaxLiveArrays, jaxRuntimeError);
// 1.7 kRetention (who keeps a leak alive); 1.8 kPoolMissing (why a framework's objects were not
// seen: the PyTorch adapter's compiler or headers missing); 1.9 raw frees: MemoryRecord::space, and a
// free carries what its hook knew (no size, device -1), paired with its allocation by the reader
// (free_pairing.h)
inline constexpr uint16_t kMinorVersion = 9;
// A record larger than this is corruption, not data (the largest real one is a module record).
inline constexpr uint32_t kMaxRecordSize = 1u << 20;

struct FileHeader {
  char magic[8];
  uint16_t major;
  uint16_t minor;
  uint32_t header_size;   // sizeof(FileHeader) for v1.0; readers skip anything past what they know
  uint64_t realtime_ns;   // CLOCK_REALTIME at start: the anchor that puts processes on one clock
  uint64_t monotonic_ns;  // CLOCK_MONOTONIC at the same moment; every record timestamp uses it
  uint32_t pid;
  uint32_t reserved;
};
static_assert(sizeof(FileHeader) == 40);

enum class RecordType : uint16_t {
  kRunInfo = 1,    // RunInfoRecord + strings
  kModule = 2,     // ModuleRecord + path + build id + segments
  kStack = 3,      // StackRecord + frames
  kString = 4,     // StringRecord + bytes (NVTX messages, loop names, marks)
  kMemory = 5,     // MemoryRecord
  kNvtx = 6,       // NvtxRecord
  kMarker = 7,     // MarkerRecord (gpuleak_* C API)
  kOom = 8,        // OomRecord
  kDevice = 9,     // DeviceRecord + name
  kStats = 10,     // StatsRecord; several may appear, the last one wins
  kDisabled = 11,  // DisabledRecord + reason: tracking was turned off here
  // GpuActivityRecord (format 1.1): a kernel, copy or memset CUPTI saw run on the GPU.
  kGpuActivity = 12,
  kDeviceUsage = 13,      // DeviceUsageRecord (since 1.1)
  kPoolTracker = 14,      // PoolTrackerRecord + description (since 1.3): a framework allocator's tracker attached
  kAggregateSite = 15,    // AggregateSiteRecord (since 1.4): one site's allocations and frees in a window
  kAggregateWindow = 16,  // AggregateWindowRecord (since 1.4): closes a window of aggregated iterations
  kLoop = 17,             // LoopRecord (since 1.5): a loop or callback of the user's Python code, defined once
  kLoopPass = 18,         // LoopPassRecord (since 1.5): one back edge of a loop, one call or return of a callback
  kObserver = 19,         // ObserverRecord + note (since 1.5): how the Python loops were observed, or why not
  kRetention = 20,        // RetentionRecord + path text (since 1.7): who keeps a GPU-memory-owning object alive
  kPoolMissing = 21,      // PoolTrackerRecord + reason (since 1.8): a framework allocator's tracker could not attach
};

struct RecordHeader {
  uint32_t size;  // payload bytes that follow this header
  uint16_t type;  // RecordType
  uint16_t reserved;
};
static_assert(sizeof(RecordHeader) == 8);

// What the program asked for, and from where. Order fixed: new values only at the end.
enum class Op : uint8_t {
  kAlloc = 1,      // memory became the program's (device, pool, managed, pinned, array, VMM physical)
  kFree = 2,       // memory released; size, kind and device the allocation's (the reader pairs them)
  kMap = 3,        // VMM: physical handle `aux` mapped at `address` (size bytes)
  kUnmap = 4,      // VMM: range at `address` unmapped
  kReserve = 5,    // VMM: virtual address range reserved (no memory)
  kReleaseVa = 6,  // VMM: virtual address range given back
  kPoolTrim = 7,   // stream-ordered pool trimmed (aux = pool, size = minBytesToKeep)
  kPoolCreate = 8,
  kPoolDestroy = 9,
  kContextReset = 10  // every allocation of the device is gone (cudaDeviceReset, cuCtxDestroy)
};

enum class Kind : uint8_t {
  kUnknown = 0,
  kDevice = 1,  // cuMemAlloc
  kAsync = 2,   // cuMemAllocAsync / FromPoolAsync (stream-ordered pool)
  kVmm = 3,     // cuMemCreate physical memory (counted until cuMemRelease)
  kManaged = 4,
  kPitched = 5,
  kHostPinned = 6,  // cuMemHostAlloc / cuMemAllocHost: never in device live bytes
  kHostRegistered = 7,
  kArray = 8,
  kMipmappedArray = 9,
  kImported = 10,  // IPC / shareable handles: tagged, not owned
  kVirtual = 11,   // VMM address range (cuMemAddressReserve)
  // (1.3) A block a framework's own allocator handed out inside memory it already got from CUDA
  // (a caching allocator's segment): a tensor's storage. Not device memory of its own, so never in
  // device live bytes; its own address space, since a block at a segment's start has its address.
  kPoolBlock = 12,
};

enum MemoryFlags : uint16_t {
  kFlagGraphReservation = 1u << 0,  // made while the stream was capturing: not live memory
  kFlagUnknownPointer = 1u << 1,    // a free of no live allocation (allocated before us?); set by the reader
  kFlagRuntimeLabel = 1u << 2,      // runtime_api names the cudart function the program called
  kFlagUntimed = 1u << 3,           // (1.2) one clock reading, no duration: duration_ns is 0, not measured
};

// The API actually called. Driver entries first; runtime names are labels for what the program
// wrote. Order fixed: new values only at the end (docs/capture-format.md lists them).
// clang-format off
#define GPULEAK_API_LIST(X)                                                                        \
  X(kNone, "none")                                                                                 \
  X(cuMemAlloc_v2, "cuMemAlloc_v2")                                                                \
  X(cuMemAllocPitch_v2, "cuMemAllocPitch_v2")                                                      \
  X(cuMemFree_v2, "cuMemFree_v2")                                                                  \
  X(cuMemAllocManaged, "cuMemAllocManaged")                                                        \
  X(cuMemAllocAsync, "cuMemAllocAsync")                                                            \
  X(cuMemAllocAsync_ptsz, "cuMemAllocAsync_ptsz")                                                  \
  X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync")                                            \
  X(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync_ptsz")                                  \
  X(cuMemFreeAsync, "cuMemFreeAsync")                                                              \
  X(cuMemFreeAsync_ptsz, "cuMemFreeAsync_ptsz")                                                    \
  X(cuMemCreate, "cuMemCreate")                                                                    \
  X(cuMemRelease, "cuMemRelease")                                                                  \
  X(cuMemMap, "cuMemMap")                                                                          \
  X(cuMemUnmap, "cuMemUnmap")                                                                      \
  X(cuMemAddressReserve, "cuMemAddressReserve")                                                    \
  X(cuMemAddressFree, "cuMemAddressFree")                                                          \
  X(cuMemHostAlloc, "cuMemHostAlloc")                                                              \
  X(cuMemAllocHost_v2, "cuMemAllocHost_v2")                                                        \
  X(cuMemFreeHost, "cuMemFreeHost")                                                                \
  X(cuMemHostRegister_v2, "cuMemHostRegister_v2")                                                  \
  X(cuMemHostUnregister, "cuMemHostUnregister")                                                    \
  X(cuArrayCreate_v2, "cuArrayCreate_v2")                                                          \
  X(cuArray3DCreate_v2, "cuArray3DCreate_v2")                                                      \
  X(cuArrayDestroy, "cuArrayDestroy")                                                              \
  X(cuMipmappedArrayCreate, "cuMipmappedArrayCreate")                                              \
  X(cuMipmappedArrayDestroy, "cuMipmappedArrayDestroy")                                            \
  X(cuMemPoolCreate, "cuMemPoolCreate")                                                            \
  X(cuMemPoolDestroy, "cuMemPoolDestroy")                                                          \
  X(cuMemPoolTrimTo, "cuMemPoolTrimTo")                                                            \
  X(cuIpcOpenMemHandle_v2, "cuIpcOpenMemHandle_v2")                                                \
  X(cuIpcCloseMemHandle, "cuIpcCloseMemHandle")                                                    \
  X(cuMemImportFromShareableHandle, "cuMemImportFromShareableHandle")                              \
  X(cuMemPoolImportPointer, "cuMemPoolImportPointer")                                              \
  X(cuCtxDestroy_v2, "cuCtxDestroy_v2")                                                            \
  X(cuDevicePrimaryCtxReset_v2, "cuDevicePrimaryCtxReset_v2")                                      \
  X(cudaMalloc, "cudaMalloc")                                                                      \
  X(cudaFree, "cudaFree")                                                                          \
  X(cudaMallocAsync, "cudaMallocAsync")                                                            \
  X(cudaFreeAsync, "cudaFreeAsync")                                                                \
  X(cudaMallocFromPoolAsync, "cudaMallocFromPoolAsync")                                            \
  X(cudaMallocManaged, "cudaMallocManaged")                                                        \
  X(cudaMallocPitch, "cudaMallocPitch")                                                            \
  X(cudaMalloc3D, "cudaMalloc3D")                                                                  \
  X(cudaMallocArray, "cudaMallocArray")                                                            \
  X(cudaMalloc3DArray, "cudaMalloc3DArray")                                                        \
  X(cudaMallocMipmappedArray, "cudaMallocMipmappedArray")                                          \
  X(cudaFreeArray, "cudaFreeArray")                                                                \
  X(cudaFreeMipmappedArray, "cudaFreeMipmappedArray")                                              \
  X(cudaMallocHost, "cudaMallocHost")                                                              \
  X(cudaHostAlloc, "cudaHostAlloc")                                                                \
  X(cudaFreeHost, "cudaFreeHost")                                                                  \
  X(cudaHostRegister, "cudaHostRegister")                                                          \
  X(cudaHostUnregister, "cudaHostUnregister")                                                      \
  X(cudaDeviceReset, "cudaDeviceReset")                                                            \
  X(cuGetProcAddress, "cuGetProcAddress")                                                          \
  X(cuGetProcAddress_v2, "cuGetProcAddress_v2")                                                    \
  X(cuStreamBeginCapture, "cuStreamBeginCapture")                                                  \
  X(cuStreamBeginCapture_ptsz, "cuStreamBeginCapture_ptsz")                                        \
  X(cuStreamBeginCapture_v2, "cuStreamBeginCapture_v2")                                            \
  X(cuStreamBeginCapture_v2_ptsz, "cuStreamBeginCapture_v2_ptsz")                                  \
  X(cuStreamBeginCaptureToGraph, "cuStreamBeginCaptureToGraph")                                    \
  X(cuStreamBeginCaptureToGraph_ptsz, "cuStreamBeginCaptureToGraph_ptsz")                          \
  X(cuStreamEndCapture, "cuStreamEndCapture")                                                      \
  X(cuStreamEndCapture_ptsz, "cuStreamEndCapture_ptsz")                                          \
  X(torchCachingAllocator, "torch.CUDACachingAllocator")                                          \
  X(cupyMemoryPool, "cupy.MemoryPool")                                                            \
  X(jaxLiveArrays, "jax.live_arrays")                                                             \
  X(jaxRuntimeError, "jax.JaxRuntimeError")

// clang-format on
enum class Api : uint16_t {
#define GPULEAK_API_ENUM(id, name) id,
  GPULEAK_API_LIST(GPULEAK_API_ENUM)
#undef GPULEAK_API_ENUM
      kCount
};

const char *api_name(uint16_t api);  // "unknown" for values past the end
const char *kind_name(uint8_t kind);
const char *op_name(uint8_t op);

struct MemoryRecord {
  uint64_t ts_ns;        // monotonic; an allocation's when it returned, a free's when it was entered
  uint64_t address;      // device or host pointer; VMM: handle for Alloc/Free of kind kVmm
  uint64_t size;         // bytes (a free: 0 as written since 1.9; the reader fills in its allocation's)
  uint64_t stream;       // CUstream of stream-ordered calls, else 0
  uint64_t aux;          // pool (FromPool, pool ops), VMM handle (Map), pitch (pitched)
  uint32_t duration_ns;  // time spent in the real call (saturates at 4.29 s)
  uint32_t tid;          // kernel thread id
  uint32_t stack_id;     // native stack (StackRecord), 0 = none
  uint32_t py_stack_id;  // Python stack, 0 = none
  int32_t result;        // CUresult of the real call (2 = CUDA_ERROR_OUT_OF_MEMORY)
  uint16_t api;          // Api: the driver entry actually called
  uint16_t runtime_api;  // Api: the cudart function the program called, kNone if not known
  uint8_t op;            // Op
  uint8_t kind;          // Kind
  int16_t device;        // -1 when unknown
  uint16_t flags;        // MemoryFlags
  // (1.9) The address space the hook knew its address was in (format/address_space.h), plus one:
  // what a free is paired in (a VMM handle may equal a device pointer). 0: not said (records
  // before 1.9, whose frees came paired; events with no address of their own; the reader's
  // unfolded aggregates).
  uint8_t space;
  // 0 in a file. In a thread's ring, what the drain still has to do (core/recorder_state.h).
  uint8_t ring;
};
static_assert(sizeof(MemoryRecord) == 72);

// A stack of raw return addresses, innermost first, gpuleak's own frames removed. Interned: each
// distinct stack is written once, before the first record that refers to it.
struct StackRecord {
  uint32_t id;
  uint16_t depth;  // followed by depth uint64_t frames
  uint16_t kind;   // StackKind
};
// What a stack's frames are. A reader keeps a newer writer's kind as it is: neither of these.
enum class StackKind : uint16_t {
  kNative = 0,  // raw return addresses
  kPython = 1,  // pairs of string ids: (file << 32 | function), line (docs/capture-format.md)
};

struct StringRecord {
  uint32_t id;
  uint32_t length;  // followed by length bytes, not NUL-terminated; untrusted program text
};

// One loaded ELF object, written at start and whenever the set of loaded objects changes.
struct ModuleRecord {
  uint64_t load_bias;        // dlpi_addr
  uint32_t path_length;      // followed by the path bytes
  uint16_t build_id_length;  // then the GNU build id bytes
  uint16_t segment_count;    // then segment_count {uint64_t vaddr, uint64_t memsz} of PT_LOAD
};

enum class NvtxOp : uint8_t { kPush = 1, kPop = 2, kStart = 3, kEnd = 4, kMark = 5 };

struct NvtxRecord {
  uint64_t ts_ns;
  uint64_t range_id;  // start/end ranges: the id NVTX handed out
  uint32_t tid;
  uint32_t message_id;  // StringRecord id, 0 = no message
  uint32_t domain_id;   // StringRecord id of the domain name, 0 = default domain
  uint8_t op;           // NvtxOp
  uint8_t reserved[3];
};
static_assert(sizeof(NvtxRecord) == 32);

enum class MarkerOp : uint8_t { kIterationBegin = 1, kIterationEnd = 2, kMark = 3 };

struct MarkerRecord {
  uint64_t ts_ns;
  uint32_t tid;
  uint32_t label_id;  // loop name or mark label (StringRecord id), 0 = none
  uint8_t op;         // MarkerOp
  uint8_t reserved[7];
};
static_assert(sizeof(MarkerRecord) == 24);

// Written synchronously when an allocation returns out-of-memory: the process may die next.
// (1.6) A framework's allocator can fail with no CUDA call failing (JAX's arena raising
// RESOURCE_EXHAUSTED): then `api` names the framework (jaxRuntimeError), `result` is 0, and the
// pool_* fields hold the arena's own figures. A 1.3 record is 56 bytes (no pool_* fields): readers
// take the fields the payload holds and zero the rest.
struct OomRecord {
  uint64_t ts_ns;
  uint64_t requested;
  uint64_t free_bytes;  // cuMemGetInfo at the failure; 0 when it could not be read
  uint64_t total_bytes;
  uint32_t tid;
  uint32_t stack_id;
  uint32_t py_stack_id;
  int32_t result;
  uint16_t api;
  int16_t device;
  uint32_t reserved;
  // (1.6) A framework pool's failure (api jaxRuntimeError): the arena's bytes in use, its largest
  // free block and its limit (jax Device.memory_stats()), 0 when not known.
  uint64_t pool_in_use_bytes;
  uint64_t pool_largest_free_bytes;
  uint64_t pool_limit_bytes;
  int32_t pool_framework;  // PoolFramework, 0 for a CUDA call's failure
  uint32_t reserved2;
};
inline constexpr size_t kOomRecordSize13 = 56;  // an OomRecord of format 1.3
static_assert(sizeof(OomRecord) == 88);

struct DeviceRecord {
  int32_t index;
  uint32_t name_length;  // followed by the name
  uint64_t total_bytes;
};

struct StatsRecord {
  uint64_t events;          // memory records written
  uint64_t events_dropped;  // records lost because a buffer stayed full (never silent)
  uint64_t stacks;          // distinct stacks interned
  uint64_t uncaptured;      // allocations CUPTI saw that no interposer did (GPULEAK_CUPTI=1)
  uint64_t live_bytes;      // device live bytes at the time of writing (recorder's own count)
  uint64_t peak_bytes;      // device peak live bytes so far
  uint32_t cupti_state;     // CuptiState (cupti_state.h): 0 off, 1 on, 2 unavailable, 3 taken, 4 yielded
  uint32_t final_record;    // 1 when written at a clean exit
};
static_assert(sizeof(StatsRecord) == 56);

// NVML's view of one device, read by gpuleak's own code (never in a hook) from libnvidia-ml.so.1
// loaded with dlopen: at exit, and every GPULEAK_NVML_INTERVAL_MS while the capture runs (samples,
// added within 1.1: a reader wanting the exit view takes the record flagged kUsageAtExit, not the
// last one of the device, since the writer thread's samples may be drained after it). Written
// only when NVML answered; any NVML failure means no record. Compare process_used_bytes with
// tracked_live_bytes: the difference is memory the program holds that no tracked call allocated
// (the CUDA context, module globals, other allocators, a pool's reserve).
struct DeviceUsageRecord {
  uint64_t ts_ns;
  uint64_t process_used_bytes;  // this pid's usedGpuMemory (nvmlDeviceGetComputeRunningProcesses)
  uint64_t device_used_bytes;   // nvmlDeviceGetMemoryInfo: used by everyone on the device
  uint64_t device_total_bytes;
  uint64_t tracked_live_bytes;  // the recorder's device live bytes at the same moment
  int32_t device;               // CUDA device ordinal
  uint32_t flags;               // DeviceUsageFlags
};
static_assert(sizeof(DeviceUsageRecord) == 48);

enum DeviceUsageFlags : uint32_t {
  kUsageProcessKnown = 1u << 0,  // the pid was listed with a value (else process_used_bytes is 0):
                                 // NVML in a container often lists host pids only
  kUsageAtExit = 1u << 1,        // read at the end of the capture
  kUsageSample = 1u << 2,        // read by the writer thread while the capture ran (periodic)
};

// (1.3) A framework's allocator told gpuleak about its blocks (Kind::kPoolBlock records follow).
// (1.6) CuPy: every array its default MemoryPool hands out and takes back (api cupyMemoryPool);
// JAX: the live arrays sampled at iteration boundaries, exit and OOM (api jaxLiveArrays; an
// allocation record is when an array was first seen live, a free when it was first seen gone).
enum class PoolFramework : int32_t { kPyTorch = 1, kCuPy = 2, kJax = 3 };
struct PoolTrackerRecord {
  uint64_t ts_ns;     // when it attached
  int32_t framework;  // PoolFramework
  uint32_t length;    // followed by the description (untrusted text, at most 4096 bytes)
};
static_assert(sizeof(PoolTrackerRecord) == 16);

// (1.5) The Python loop observer (tools/python/gpuleak/_observe.py, docs/python.md "Iterations"):
// the loops and callbacks of the user's own code as the interpreter runs them. A loop is defined
// once (LoopRecord) before its first pass; each back edge (a jump to an earlier instruction of the
// loop, the end of one pass) and each call and return of a callback (a user function that library
// code called) is a LoopPassRecord. Strings are StringRecords (untrusted program text).
enum class LoopKind : uint8_t { kLoop = 1, kCallback = 2 };
struct LoopRecord {
  uint32_t id;           // the observer's id, > 0, unique in the process
  uint32_t parent_id;    // the loop this one runs in when first seen (same code object or an outer frame's), 0 none
  uint32_t file_id;      // StringRecord: the code object's file (co_filename)
  uint32_t function_id;  // StringRecord: its qualified name (co_qualname)
  uint32_t first_line;   // the loop's head line (callback: the function's first line)
  uint32_t last_line;    // the last line of the loop's body (callback: of the function)
  uint16_t depth;        // nesting depth: 0 when it has no parent
  uint8_t kind;          // LoopKind
  uint8_t reserved[5];
};
static_assert(sizeof(LoopRecord) == 32);

enum class LoopPassOp : uint8_t {
  kBackEdge = 1,   // a loop's pass ended: the jump back to its head
  kCallStart = 2,  // a callback was called (its pass starts)
  kCallEnd = 3,    // ... and returned (or raised, or yielded)
};
struct LoopPassRecord {
  uint64_t ts_ns;    // monotonic, capture clock
  uint64_t task_id;  // the running asyncio task (its id()), 0 when none
  uint32_t tid;      // kernel thread id
  uint32_t loop_id;  // LoopRecord id
  uint8_t op;        // LoopPassOp
  uint8_t reserved[7];
};
static_assert(sizeof(LoopPassRecord) == 32);

enum class ObserverMethod : uint32_t {
  kMonitoring = 1,   // sys.monitoring (Python 3.12+): loops and callbacks observed
  kUnavailable = 2,  // not observed (the note says why: Python 3.11, no free tool id, ...)
};
struct ObserverRecord {
  uint64_t ts_ns;
  uint32_t method;  // ObserverMethod
  uint32_t length;  // followed by the note: the interpreter's version and anything said (at most 4096 bytes)
};
static_assert(sizeof(ObserverRecord) == 16);

// (1.7) The Python reference path that keeps an object owning GPU memory alive, found by the start-up
// hook's walk (gpuleak._retention) at exit or at an out-of-memory, through gpuleak_api_retention.
// address 0 is the walk's summary: size is how long it took (ns), the text
// "objects=N paths=M stopped=none|budget|nodes|depth".
// kReturn: when a function the main script's body called (main()) returned after running most of the
// program, its locals still live (Python 3.12+).
enum class RetentionEvent : uint8_t { kExit = 1, kOom = 2, kReturn = 3 };
inline constexpr uint32_t kMaxRetentionText = 4096;
struct RetentionRecord {
  uint64_t ts_ns;    // when the walk sent it (the live allocations of that moment hold `address`)
  uint64_t address;  // the object's data pointer (a tensor's storage, an array's buffer); 0: summary
  uint64_t size;     // the object's bytes; summary: the walk's duration in ns
  uint32_t tid;
  uint32_t length;  // followed by the path text (untrusted, at most kMaxRetentionText bytes)
  uint8_t event;    // RetentionEvent
  uint8_t reserved[7];
};
static_assert(sizeof(RetentionRecord) == 40);

struct RunInfoRecord {
  uint32_t pid;
  uint32_t ppid;
  int32_t rank;            // -1 when not launched as a rank
  int32_t driver_version;  // cuDriverGetVersion, 0 unknown
  uint16_t stack_depth;    // GPULEAK_STACK_DEPTH in force
  uint16_t string_count;   // followed by string_count {uint32_t length, bytes} in RunInfoField order
};

// The strings that follow a RunInfoRecord, in this order (readers tolerate fewer or more).
enum class RunInfoField : uint16_t {
  kProgram = 0,  // executable basename, or the script for Python
  kCommand = 1,  // argv joined with NUL bytes
  kHost = 2,
  kVersion = 3,       // gpuleak version
  kAllocatorEnv = 4,  // PYTORCH_CUDA_ALLOC_CONF as seen at start ("" when unset)
  kUnwinder = 5,      // "libunwind", "libgcc" or "none"
  kRunToken = 6,      // GPULEAK_RUN_TOKEN ("" when unset): which `gpuleak run` started the process
  kCount
};

// GPU work seen by CUPTI's Activity API (GPULEAK_CUPTI=1, capture format 1.1). Written from
// CUPTI's buffer-completion thread, so records are not in time order. Times are on the capture's
// clock: CUPTI's timestamps plus an offset sampled as monotonic_ns() - cuptiGetTimestamp() (see
// docs/capture-format.md "GPU activity").
enum class GpuActivityKind : uint8_t {
  kKernel = 1,
  kMemcpy = 2,
  kMemset = 3,
  kDropped = 4,  // no work: `bytes` records were lost (CUPTI dropped them, or GPULEAK_ACTIVITY_MB was reached)
};

struct GpuActivityRecord {
  uint64_t start_ns;  // monotonic, capture clock
  uint64_t end_ns;
  uint64_t bytes;        // memcpy/memset bytes; kDropped: records lost; 0 for kernels
  uint64_t stream;       // CUPTI stream id (not a CUstream handle)
  uint64_t host_ts_ns;   // when the launching API call was entered (monotonic), 0 = unknown
  uint32_t host_dur_ns;  // how long that call took (saturates), 0 = unknown
  uint32_t host_tid;     // kernel thread id of the launching thread, 0 = unknown
  uint32_t correlation_id;
  uint32_t context_id;
  uint32_t name_id;      // StringRecord id: kernel name (untrusted program text), 0 = none
  uint32_t api_name_id;  // StringRecord id: the launching API ("cuLaunchKernel"), 0 = unknown
  int16_t device;        // -1 when unknown
  uint8_t kind;          // GpuActivityKind
  uint8_t copy_kind;     // memcpy: CUpti_ActivityMemcpyKind (1 HtoD, 2 DtoH, 8 DtoD, ...); else 0
  uint32_t reserved;
};
static_assert(sizeof(GpuActivityRecord) == 72);

// The aggregated form (1.4). Past the capture budget (GPULEAK_MAX_CAPTURE) the writer thread stops
// writing allocations and frees one by one and folds them, per window of iterations of one loop,
// into one AggregateSiteRecord per (site, device, kind, birth window), followed by the window's
// AggregateWindowRecord; the rows before a window record belong to it (rows with no window record
// after them, at the end of a cut file, are incomplete and ignored). Windows are numbered from 1 in
// file order. Allocations made before the switch keep their raw records, and so do their frees; a
// raw free never refers to an aggregated allocation. docs/capture-format.md "Aggregated form" says
// how a reader turns these into one ledger with the raw records.
struct AggregateSiteRecord {
  uint64_t alloc_bytes;   // allocations born in this window (0 when birth_window is an earlier one)
  uint64_t freed_bytes;   // of the allocations born in birth_window, the bytes freed in this window
  uint32_t allocs;        // count of those allocations
  uint32_t frees;         // count of those frees
  uint32_t stack_id;      // the allocations' native stack (StackRecord), 0 = none
  uint32_t py_stack_id;   // their Python stack, 0 = none
  uint32_t birth_window;  // the window the freed allocations were born in (this one's number: born here)
  int16_t device;
  uint8_t kind;  // Kind
  uint8_t reserved;
};
static_assert(sizeof(AggregateSiteRecord) == 40);

enum AggregateWindowFlags : uint32_t {
  kWindowOpenAtStart = 1u << 0,  // its first iteration began before the window (its begin marker is raw)
  kWindowOpenAtEnd = 1u << 1,    // it ends inside an iteration begun at last_begin_ns (the capture ended)
  kWindowFinal = 1u << 2,        // written at the end of the capture
  kWindowLowDisk = 1u << 3,  // (on the first window) the switch came from the file system running low, not the budget
};

// A window's times: [start_ns, end_ns] is all of it; its whole iterations lie between
// first_begin_ns and iterations_end_ns (a reader spaces them evenly there: their own boundaries
// are not kept); an iteration still open at its end began at last_begin_ns.
struct AggregateWindowRecord {
  uint64_t start_ns;           // the switch, or the previous window's end
  uint64_t first_begin_ns;     // its first iteration's begin (start_ns with kWindowOpenAtStart)
  uint64_t iterations_end_ns;  // its last whole iteration's end (iterations > 0)
  uint64_t last_begin_ns;      // kWindowOpenAtEnd: when the open iteration began
  uint64_t end_ns;             // its last record or boundary
  uint64_t events;             // raw memory records folded into it
  uint64_t dropped;            // marker and NVTX records dropped in it (other loops, ranges)
  uint32_t number;             // 1, 2, ... in file order
  uint32_t iterations;         // whole iterations of the loop that ended in it (0: none)
  uint32_t loop_id;            // StringRecord id of the loop's name, 0 = none
  uint32_t tid;                // the thread that marked the loop's iterations
  uint32_t flags;              // AggregateWindowFlags
  uint32_t reserved;
};
static_assert(sizeof(AggregateWindowRecord) == 80);

}  // namespace gpuleak::format
