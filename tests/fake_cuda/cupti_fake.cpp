// Fake libcupti.so.13 (test fixture): enough of CUPTI's callback and Activity APIs for gpuleak's
// cupti_bridge.cpp / cupti_activity.cpp to run against the fake driver with no GPU.
//
// * One subscriber at a time (a second cuptiSubscribe fails with
//   CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, like CUDA <= 13.2); FAKE_CUPTI_TAKEN=1 makes
//   every subscription fail so, as if another tool held the slot.
// * The fake driver's kernels, copies and memsets (driver_launch.cpp) call the subscriber's enabled
//   callbacks at entry and exit with a correlation id, and, for each enabled activity kind, add a
//   CUpti_ActivityKernel10 / Memcpy6 / Memset4 record to the current buffer.
// * A buffer is complete after FAKE_CUPTI_RECORDS_PER_BUFFER records (default: when full); complete
//   buffers are returned from a thread of the fake's own, like CUPTI's worker thread;
//   cuptiActivityFlushAll returns the rest on the calling thread.
// * Timestamps are CLOCK_MONOTONIC + 1000 s, so a client that forgets to convert them is caught.
#include <cupti.h>
#include <time.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "fake_profiler.h"

static_assert(fake_cupti::kKernel == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
static_assert(fake_cupti::kMemcpy == CUPTI_ACTIVITY_KIND_MEMCPY);
static_assert(fake_cupti::kMemset == CUPTI_ACTIVITY_KIND_MEMSET);
static_assert(fake_cupti::kHtoD == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
static_assert(fake_cupti::kDtoH == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH);

namespace {

constexpr uint64_t kClockOffsetNs = 1000ull * 1000000000ull;

struct Buffer {
    uint8_t* data = nullptr;
    size_t size = 0;
    size_t used = 0;
    size_t records = 0;
};

// Never destroyed: the worker thread and late callbacks may run during exit.
struct State {
    std::mutex lock;
    CUpti_CallbackFunc callback = nullptr;
    void* userdata = nullptr;
    bool subscribed = false;
    std::set<std::pair<int, unsigned>> enabled;  // (domain, cbid)
    std::set<int> kinds;
    CUpti_BuffersCallbackRequestFunc requested = nullptr;
    CUpti_BuffersCallbackCompleteFunc completed = nullptr;
    Buffer current;
    std::deque<Buffer> done;
    std::condition_variable wake;
    bool worker = false;
    std::mutex deliver;  // one delivery at a time, in order
    uint32_t next_correlation = 1;
    size_t per_buffer = 0;
};
State& st() {
    static State* s = new State;
    return *s;
}

uint64_t mono_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void deliver_queued() {
    State& s = st();
    std::lock_guard<std::mutex> order(s.deliver);
    for (;;) {
        Buffer b;
        CUpti_BuffersCallbackCompleteFunc completed;
        {
            std::lock_guard<std::mutex> g(s.lock);
            if (s.done.empty()) return;
            b = s.done.front();
            s.done.pop_front();
            completed = s.completed;
        }
        if (completed) completed(nullptr, 0, b.data, b.size, b.used);
    }
}

void worker_main() {
    State& s = st();
    for (;;) {
        {
            std::unique_lock<std::mutex> g(s.lock);
            s.wake.wait(g, [&] { return !s.done.empty(); });
        }
        deliver_queued();
    }
}

size_t record_size(int kind) {
    switch (kind) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        case CUPTI_ACTIVITY_KIND_KERNEL:
            return sizeof(CUpti_ActivityKernel10);
        case CUPTI_ACTIVITY_KIND_MEMCPY:
            return sizeof(CUpti_ActivityMemcpy6);
        case CUPTI_ACTIVITY_KIND_MEMSET:
            return sizeof(CUpti_ActivityMemset4);
        default:
            return 0;
    }
}

void fill(const FakeActivity& a, uint8_t* out) {
    const uint64_t start = a.start_ns + kClockOffsetNs, end = a.end_ns + kClockOffsetNs;
    switch (a.kind) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
            CUpti_ActivityKernel10 k{};
            k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
            k.start = start;
            k.end = end;
            k.deviceId = static_cast<uint32_t>(a.device);
            k.contextId = a.context;
            k.streamId = a.stream;
            k.correlationId = a.correlation;
            k.name = a.name;  // valid until the buffer is returned: the fake keeps functions forever
            std::memcpy(out, &k, sizeof k);
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
            CUpti_ActivityMemcpy6 m{};
            m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
            m.copyKind = a.copy_kind;
            m.bytes = a.bytes;
            m.start = start;
            m.end = end;
            m.deviceId = static_cast<uint32_t>(a.device);
            m.contextId = a.context;
            m.streamId = a.stream;
            m.correlationId = a.correlation;
            std::memcpy(out, &m, sizeof m);
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
            CUpti_ActivityMemset4 m{};
            m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
            m.bytes = a.bytes;
            m.start = start;
            m.end = end;
            m.deviceId = static_cast<uint32_t>(a.device);
            m.contextId = a.context;
            m.streamId = a.stream;
            m.correlationId = a.correlation;
            std::memcpy(out, &m, sizeof m);
            break;
        }
    }
}

void call_back(unsigned cbid, const char* name, uint32_t corr, CUpti_ApiCallbackSite site) {
    State& s = st();
    CUpti_CallbackFunc cb;
    void* user;
    {
        std::lock_guard<std::mutex> g(s.lock);
        if (!s.subscribed || !s.enabled.count({CUPTI_CB_DOMAIN_DRIVER_API, cbid})) return;
        cb = s.callback;
        user = s.userdata;
    }
    CUresult result = CUDA_SUCCESS;
    CUpti_CallbackData data{};
    data.callbackSite = site;
    data.functionName = name;
    data.functionReturnValue = site == CUPTI_API_EXIT ? &result : nullptr;
    data.correlationId = corr;
    cb(user, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &data);
}

uint32_t on_api_enter(unsigned cbid, const char* name) {
    uint32_t corr;
    {
        std::lock_guard<std::mutex> g(st().lock);
        corr = st().next_correlation++;
    }
    call_back(cbid, name, corr, CUPTI_API_ENTER);
    return corr;
}

void on_api_exit(unsigned cbid, const char* name, uint32_t corr) { call_back(cbid, name, corr, CUPTI_API_EXIT); }

void on_activity(const FakeActivity& a) {
    State& s = st();
    const size_t n = record_size(a.kind);
    CUpti_BuffersCallbackRequestFunc requested;
    {
        std::lock_guard<std::mutex> g(s.lock);
        if (!n || !s.kinds.count(a.kind) || !s.requested) return;
        requested = s.current.data ? nullptr : s.requested;
    }
    Buffer fresh;
    if (requested) {
        size_t max_records = 0;
        requested(&fresh.data, &fresh.size, &max_records);
        if (!fresh.data) return;
    }
    bool complete = false;
    {
        std::lock_guard<std::mutex> g(s.lock);
        if (fresh.data) {
            if (s.current.data) s.done.push_back(s.current);  // raced: keep both, in order
            s.current = fresh;
        }
        Buffer& b = s.current;
        if (b.size - b.used < n) return;  // a record that does not fit is dropped, as CUPTI would
        fill(a, b.data + b.used);
        b.used += n;
        ++b.records;
        if (b.size - b.used < sizeof(CUpti_ActivityKernel10) || (s.per_buffer && b.records >= s.per_buffer)) {
            s.done.push_back(b);
            b = Buffer{};
            complete = true;
            if (!s.worker) {
                s.worker = true;
                std::thread(worker_main).detach();
            }
        }
    }
    if (complete) s.wake.notify_one();
}

const FakeProfiler kProfiler{on_api_enter, on_api_exit, on_activity};

__attribute__((constructor)) void attach_to_driver() {
    if (const char* v = std::getenv("FAKE_CUPTI_RECORDS_PER_BUFFER")) st().per_buffer = std::strtoul(v, nullptr, 10);
    cuFakeSetProfiler(&kProfiler);
}

// The names the fake driver reports (cuptiGetCallbackName), enough for gpuleak's launch filter.
const char* driver_name(uint32_t cbid) {
    switch (cbid) {
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
            return "cuLaunchKernel";
        case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2:
            return "cuMemcpyHtoD_v2";
        case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
            return "cuMemcpyDtoH_v2";
        case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2:
            return "cuMemsetD8_v2";
        case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
            return "cuMemAlloc_v2";
        case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
            return "cuMemFree_v2";
        default:
            return nullptr;
    }
}

}  // namespace

extern "C" {

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                    void* userdata) {
    if (!subscriber || !callback) return CUPTI_ERROR_INVALID_PARAMETER;
    std::lock_guard<std::mutex> g(st().lock);
    // FAKE_CUPTI_TAKEN=1: another tool (Nsight, a sanitizer) holds the slot from the start.
    const char* taken = std::getenv("FAKE_CUPTI_TAKEN");
    if (st().subscribed || (taken && std::strcmp(taken, "1") == 0)) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    st().subscribed = true;
    st().callback = callback;
    st().userdata = userdata;
    *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&st());
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
    std::lock_guard<std::mutex> g(st().lock);
    if (!st().subscribed || subscriber != reinterpret_cast<CUpti_SubscriberHandle>(&st()))
        return CUPTI_ERROR_INVALID_PARAMETER;
    st().subscribed = false;
    st().enabled.clear();
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    std::lock_guard<std::mutex> g(st().lock);
    if (!st().subscribed || subscriber != reinterpret_cast<CUpti_SubscriberHandle>(&st()))
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (enable)
        st().enabled.insert({domain, cbid});
    else
        st().enabled.erase({domain, cbid});
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
    if (!name) return CUPTI_ERROR_INVALID_PARAMETER;
    const char* n = domain == CUPTI_CB_DOMAIN_DRIVER_API ? driver_name(cbid) : nullptr;
    if (!n) return CUPTI_ERROR_INVALID_PARAMETER;
    *name = n;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t* timestamp) {
    if (!timestamp) return CUPTI_ERROR_INVALID_PARAMETER;
    *timestamp = mono_ns() + kClockOffsetNs;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
    if (!record_size(kind)) return CUPTI_ERROR_NOT_COMPATIBLE;
    std::lock_guard<std::mutex> g(st().lock);
    st().kinds.insert(kind);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
    std::lock_guard<std::mutex> g(st().lock);
    st().kinds.erase(kind);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                    CUpti_BuffersCallbackCompleteFunc completed) {
    if (!requested || !completed) return CUPTI_ERROR_INVALID_PARAMETER;
    std::lock_guard<std::mutex> g(st().lock);
    st().requested = requested;
    st().completed = completed;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
    {
        std::lock_guard<std::mutex> g(st().lock);
        if ((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) && st().current.data) {
            st().done.push_back(st().current);
            st().current = Buffer{};
        }
    }
    deliver_queued();
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t) { return CUPTI_SUCCESS; }

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
    if (!buffer || !record) return CUPTI_ERROR_INVALID_PARAMETER;
    size_t pos = 0;
    if (*record) {
        auto* r = reinterpret_cast<uint8_t*>(*record);
        pos = static_cast<size_t>(r - buffer) + record_size((*record)->kind);
    }
    if (pos + sizeof(CUpti_Activity) > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    auto* next = reinterpret_cast<CUpti_Activity*>(buffer + pos);
    if (!record_size(next->kind) || pos + record_size(next->kind) > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = next;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
    if (!dropped) return CUPTI_ERROR_INVALID_PARAMETER;
    *dropped = 0;
    return CUPTI_SUCCESS;
}

}  // extern "C"
