// Shared state of the fake driver: environment, contexts, capacity and the
// registry of pointer allocations. Everything is guarded by one mutex; the
// fake favours simple and obviously thread-safe over fast.
#include "driver_internal.h"

#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

namespace fake {
namespace {

constexpr size_t kDefaultCapacity = size_t{1} << 30;
constexpr size_t kAlign = 256;               // cudaMalloc alignment guarantee
constexpr size_t kMmapThreshold = 64u << 10;  // bigger blocks: lazy mmap

// "1073741824", "512M", "64k", "1G", "2GiB", "3gb" -> bytes; false if invalid.
bool parse_size(const char* s, size_t* out) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(s, &end, 10);
    if (end == s) return false;
    unsigned shift = 0;
    switch (std::toupper(static_cast<unsigned char>(*end))) {
        case '\0': break;
        case 'K': shift = 10; ++end; break;
        case 'M': shift = 20; ++end; break;
        case 'G': shift = 30; ++end; break;
        case 'T': shift = 40; ++end; break;
        default: return false;
    }
    if (shift && (*end == 'i' || *end == 'I')) ++end;
    if (shift && (*end == 'b' || *end == 'B')) ++end;
    if (*end != '\0') return false;
    if (shift && v > (~0ull >> shift)) return false;
    *out = static_cast<size_t>(v << shift);
    return true;
}

struct Config {
    int devices = 1;
    size_t capacity = kDefaultCapacity;
    long long fail_after = -1;  // -1: never inject
    bool pool_keep = false;     // FAKE_CUDA_POOL_KEEP=1
    bool reuse = false;         // FAKE_CUDA_REUSE=1 (backing_alloc)
};

const Config& config() {
    static const Config cfg = [] {
        Config c;
        if (const char* d = std::getenv("FAKE_CUDA_DEVICES")) {
            int n = std::atoi(d);
            c.devices = n < 0 ? 0 : (n > kMaxDevices ? kMaxDevices : n);
        }
        if (const char* cap = std::getenv("FAKE_CUDA_CAPACITY")) {
            if (!parse_size(cap, &c.capacity)) {
                std::fprintf(stderr, "fake libcuda: bad FAKE_CUDA_CAPACITY '%s', using 1G\n", cap);
                c.capacity = kDefaultCapacity;
            }
        }
        if (const char* f = std::getenv("FAKE_CUDA_FAIL_AFTER")) c.fail_after = std::atoll(f);
        if (const char* k = std::getenv("FAKE_CUDA_POOL_KEEP")) c.pool_keep = std::strcmp(k, "1") == 0;
        if (const char* r = std::getenv("FAKE_CUDA_REUSE")) c.reuse = std::strcmp(r, "1") == 0;
        return c;
    }();
    return cfg;
}

struct Block {
    size_t bytes;     // bytes charged (0 when not charged)
    size_t map_len;   // mmap length, 0 if from aligned_alloc
    int device;
    BlockKind kind;
    CUgraph_st* graph;
    bool pooled;
};

struct Registry {
    std::map<uintptr_t, Block> blocks;
    size_t used[kMaxDevices] = {};
    size_t pool_live[kMaxDevices] = {};  // pooled blocks' bytes
    size_t pool_held[kMaxDevices] = {};  // what the pools hold (>= pool_live)
    unsigned long long alloc_calls = 0;
};

Registry& reg() {
    static Registry* r = new Registry;  // leaked: usable from atexit handlers
    return *r;
}

thread_local CUcontext t_ctx = nullptr;

// FAKE_CUDA_REUSE=1: blocks under kMmapThreshold come from one process-wide last-in-first-out
// list of 64 KiB slabs, so that an address freed by one thread is the next one handed to any
// thread (a real driver re-uses addresses at once too). Called under the state mutex.
constexpr size_t kSlab = 1;  // map_len of a slab (never a real mmap length)
std::vector<void*>& free_slabs() {
    static auto* v = new std::vector<void*>;  // leaked: usable from atexit handlers
    return *v;
}

void* backing_alloc(size_t bytes, bool low32, size_t* map_len) {
    if (bytes > (SIZE_MAX >> 1)) return nullptr;
    if (config().reuse && !low32 && bytes < kMmapThreshold) {
        *map_len = kSlab;
        if (free_slabs().empty()) return std::aligned_alloc(kAlign, kMmapThreshold);
        void* p = free_slabs().back();
        free_slabs().pop_back();
        return p;
    }
    if (low32 || bytes >= kMmapThreshold) {
        size_t len = (bytes + 4095) & ~size_t{4095};
        int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (low32 ? MAP_32BIT : 0);
        void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, flags, -1, 0);
        if (p == MAP_FAILED) return nullptr;
        *map_len = len;
        return p;
    }
    *map_len = 0;
    return std::aligned_alloc(kAlign, (bytes + kAlign - 1) & ~(kAlign - 1));
}

void backing_free(void* p, size_t map_len) {
    if (map_len == kSlab) free_slabs().push_back(p);
    else if (map_len) munmap(p, map_len);
    else std::free(p);
}

}  // namespace

// A fork child of a threaded program may allocate (the soak suite's fork storm): the mutex is held
// across fork so that no other thread owns it in the child's copy.
std::mutex& state_mutex() {
    static std::mutex* m = [] {
        auto* created = new std::mutex;
        pthread_atfork([] { state_mutex().lock(); }, [] { state_mutex().unlock(); },
                       [] { state_mutex().unlock(); });
        return created;
    }();
    return *m;
}

int device_count() { return config().devices; }
size_t device_capacity() { return config().capacity; }
bool valid_device(int dev) { return dev >= 0 && dev < device_count(); }

CUcontext primary_ctx(int dev) {
    static CUctx_st* ctxs = [] {
        auto* a = new CUctx_st[kMaxDevices];
        for (int i = 0; i < kMaxDevices; ++i) a[i].device = i;
        return a;
    }();
    return valid_device(dev) ? &ctxs[dev] : nullptr;
}

CUcontext current_ctx() { return t_ctx; }
void set_current_ctx(CUcontext ctx) { t_ctx = ctx; }
int current_device() { return t_ctx ? t_ctx->device : 0; }

CUresult charge_locked(int dev, size_t bytes, bool charge) {
    Registry& r = reg();
    unsigned long long call = ++r.alloc_calls;
    long long fail_after = config().fail_after;
    if (fail_after >= 0 && call == static_cast<unsigned long long>(fail_after) + 1)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!charge) return CUDA_SUCCESS;
    if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    if (bytes > device_capacity() - r.used[dev]) return CUDA_ERROR_OUT_OF_MEMORY;
    r.used[dev] += bytes;
    return CUDA_SUCCESS;
}

void uncharge_locked(int dev, size_t bytes) {
    if (dev >= 0 && dev < kMaxDevices) reg().used[dev] -= bytes;
}

size_t used_locked(int dev) { return valid_device(dev) ? reg().used[dev] : 0; }

namespace {
void pool_change_locked(const Block& b, bool alloc) {
    if (!b.pooled || !valid_device(b.device)) return;
    Registry& r = reg();
    if (alloc) r.pool_live[b.device] += b.bytes;
    else r.pool_live[b.device] -= b.bytes;
    size_t& held = r.pool_held[b.device];
    held = config().pool_keep ? std::max(held, r.pool_live[b.device]) : r.pool_live[b.device];
}
}  // namespace

void pool_trim_locked(int dev, size_t keep_bytes) {
    if (!valid_device(dev)) return;
    Registry& r = reg();
    r.pool_held[dev] = std::max(r.pool_live[dev], std::min(r.pool_held[dev], keep_bytes));
}

size_t pool_cached_locked(int dev) {
    return valid_device(dev) ? reg().pool_held[dev] - reg().pool_live[dev] : 0;
}

CUresult alloc_block(const AllocRequest& req, void** out) {
    if (!out || req.bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(state_mutex());
    const bool device = req.kind == BlockKind::Device;
    if (device) {
        CUresult rc = charge_locked(req.device, req.bytes, req.charge);
        if (rc != CUDA_SUCCESS) return rc;
    }
    size_t map_len = 0;
    void* p = backing_alloc(req.bytes, req.low32, &map_len);
    if (!p) {
        if (device && req.charge) uncharge_locked(req.device, req.bytes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    size_t charged = device && req.charge ? req.bytes : 0;
    const Block block{charged, map_len, req.device, req.kind, req.graph, req.pooled && charged > 0};
    reg().blocks[reinterpret_cast<uintptr_t>(p)] = block;
    pool_change_locked(block, true);
    *out = p;
    return CUDA_SUCCESS;
}

CUresult free_block(void* p, BlockKind kind) {
    std::lock_guard<std::mutex> lock(state_mutex());
    auto& blocks = reg().blocks;
    auto it = blocks.find(reinterpret_cast<uintptr_t>(p));
    if (it == blocks.end() || it->second.kind != kind) return CUDA_ERROR_INVALID_VALUE;
    uncharge_locked(it->second.device, it->second.bytes);
    pool_change_locked(it->second, false);
    backing_free(p, it->second.map_len);
    blocks.erase(it);
    return CUDA_SUCCESS;
}

namespace {
template <class Pred>
void free_blocks_if(Pred pred) {
    std::lock_guard<std::mutex> lock(state_mutex());
    auto& blocks = reg().blocks;
    for (auto it = blocks.begin(); it != blocks.end();) {
        if (pred(it->second)) {
            uncharge_locked(it->second.device, it->second.bytes);
            pool_change_locked(it->second, false);
            backing_free(reinterpret_cast<void*>(it->first), it->second.map_len);
            it = blocks.erase(it);
        } else {
            ++it;
        }
    }
}
}  // namespace

void free_device_blocks(int dev) {
    free_blocks_if([dev](const Block& b) {
        return b.kind == BlockKind::Device && b.device == dev && !b.graph;
    });
}

void free_graph_blocks(CUgraph_st* g) {
    free_blocks_if([g](const Block& b) { return b.graph == g; });
}

}  // namespace fake

// For the fake libnvidia-ml.so.1 (fake_nvml.cpp, FAKE_NVML_FOLLOW_DRIVER=1): the device bytes the
// process holds, as the real NVML's usedGpuMemory counts them: every charged allocation, and what
// the pools keep beyond their live blocks.
extern "C" size_t fake_cuda_process_bytes(int dev) {
    std::lock_guard<std::mutex> lock(fake::state_mutex());
    return fake::used_locked(dev) + fake::pool_cached_locked(dev);
}
