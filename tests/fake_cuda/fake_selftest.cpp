// Smoke test of the fake CUDA fixture itself: capacity/OOM accounting,
// cuGetProcAddress version and _ptsz selection, capture and VMM accounting,
// the environment knobs, and that the programs built on the fake runtime
// reach the driver only through dlopen + dlsym("cuGetProcAddress_v2").
//
// The in-process tests run with FAKE_CUDA_CAPACITY=64M and FAKE_CUDA_DEVICES=2
// (set in main before the first driver call). Programs are found through
// FAKE_SELFTEST_PROGRAMS_DIR / FAKE_SELFTEST_CUDA_DIR (set by CTest).
#define __CUDA_API_VERSION_INTERNAL 1  // legacy names: cuMemAlloc(CUdeviceptr_v1*, ...)
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

constexpr size_t MiB = size_t{1} << 20;
constexpr size_t kCapacity = 64 * MiB;  // see main()

size_t free_mem() {
    size_t free = 0, total = 0;
    EXPECT_EQ(cuMemGetInfo_v2(&free, &total), CUDA_SUCCESS);
    return free;
}

// ---- driver ---------------------------------------------------------------

TEST(FakeDriver, InitAndDevices) {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    int v = 0, n = 0;
    ASSERT_EQ(cuDriverGetVersion(&v), CUDA_SUCCESS);
    EXPECT_EQ(v, 13000);
    ASSERT_EQ(cuDeviceGetCount(&n), CUDA_SUCCESS);
    EXPECT_EQ(n, 2);
    char name[64];
    ASSERT_EQ(cuDeviceGetName(name, sizeof name, 1), CUDA_SUCCESS);
    EXPECT_STREQ(name, "Fake CUDA Device");
    size_t total = 0;
    ASSERT_EQ(cuDeviceTotalMem_v2(&total, 0), CUDA_SUCCESS);
    EXPECT_EQ(total, kCapacity);
    CUdevice dev = -1;
    EXPECT_EQ(cuDeviceGet(&dev, 2), CUDA_ERROR_INVALID_DEVICE);
    const char* s = nullptr;
    ASSERT_EQ(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS);
    EXPECT_STREQ(s, "CUDA_ERROR_OUT_OF_MEMORY");
}

TEST(FakeDriver, CapacityAndOom) {
    const size_t start = free_mem();
    EXPECT_EQ(start, kCapacity);
    CUdeviceptr a = 0;
    ASSERT_EQ(cuMemAlloc_v2(&a, 48 * MiB), CUDA_SUCCESS);
    EXPECT_EQ(a % 256, 0u);
    EXPECT_EQ(free_mem(), start - 48 * MiB);
    CUdeviceptr untouched = 0xdead;
    EXPECT_EQ(cuMemAlloc_v2(&untouched, 32 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_EQ(untouched, 0xdeadu);
    EXPECT_EQ(cuMemFree_v2(a + 256), CUDA_ERROR_INVALID_VALUE);  // interior pointer
    ASSERT_EQ(cuMemFree_v2(a), CUDA_SUCCESS);
    EXPECT_EQ(cuMemFree_v2(a), CUDA_ERROR_INVALID_VALUE);  // double free
    EXPECT_EQ(cuMemFree_v2(0), CUDA_SUCCESS);
    EXPECT_EQ(cuMemAlloc_v2(&a, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(free_mem(), start);

    // Pinned host memory never counts against the device.
    void* h = nullptr;
    ASSERT_EQ(cuMemHostAlloc(&h, 100 * MiB, 0), CUDA_SUCCESS);
    EXPECT_EQ(free_mem(), start);
    EXPECT_EQ(cuMemFree_v2(reinterpret_cast<CUdeviceptr>(h)), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(cuMemFreeHost(h), CUDA_SUCCESS);
    EXPECT_EQ(cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE);
}

TEST(FakeDriver, CapacityIsPerDevice) {
    CUdeviceptr a = 0, b = 0;
    ASSERT_EQ(cuMemAlloc_v2(&a, 48 * MiB), CUDA_SUCCESS);  // device 0
    CUcontext ctx1 = nullptr;
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx1, 1), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(ctx1), CUDA_SUCCESS);
    CUdevice dev = -1;
    ASSERT_EQ(cuCtxGetDevice(&dev), CUDA_SUCCESS);
    EXPECT_EQ(dev, 1);
    EXPECT_EQ(cuMemAlloc_v2(&b, 48 * MiB), CUDA_SUCCESS);
    EXPECT_EQ(cuMemFree_v2(b), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
    EXPECT_EQ(cuMemFree_v2(a), CUDA_SUCCESS);
}

TEST(FakeDriver, PitchRoundsTo512) {
    const size_t start = free_mem();
    CUdeviceptr p = 0;
    size_t pitch = 0;
    ASSERT_EQ(cuMemAllocPitch_v2(&p, &pitch, 1000, 10, 4), CUDA_SUCCESS);
    EXPECT_EQ(pitch, 1024u);
    EXPECT_EQ(free_mem(), start - 10 * 1024);
    EXPECT_EQ(cuMemFree_v2(p), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAllocPitch_v2(&p, &pitch, 512, 1, 16), CUDA_SUCCESS);
    EXPECT_EQ(pitch, 512u);
    EXPECT_EQ(cuMemFree_v2(p), CUDA_SUCCESS);
    EXPECT_EQ(cuMemAllocPitch_v2(&p, &pitch, 512, 1, 3), CUDA_ERROR_INVALID_VALUE);
}

// The legacy ABI writes a 4-byte CUdeviceptr_v1: the canary after it survives.
TEST(FakeDriver, LegacyAllocUses32BitPointers) {
    struct {
        CUdeviceptr_v1 ptr;
        uint32_t canary;
    } slot{0, 0xC0FFEEu};
    ASSERT_EQ(cuMemAlloc(&slot.ptr, 4096u), CUDA_SUCCESS);
    EXPECT_NE(slot.ptr, 0u);
    EXPECT_EQ(slot.canary, 0xC0FFEEu);
    EXPECT_EQ(cuMemFree(slot.ptr), CUDA_SUCCESS);
}

std::string symbol_name(void* fn) {
    Dl_info info{};
    if (!fn || !dladdr(fn, &info) || !info.dli_sname) return "<none>";
    return info.dli_sname;
}

std::string lookup(const char* base, int version, cuuint64_t flags = CU_GET_PROC_ADDRESS_DEFAULT) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (cuGetProcAddress_v2(base, &fn, version, flags, &st) != CUDA_SUCCESS) return "<error>";
    EXPECT_EQ(st, CU_GET_PROC_ADDRESS_SUCCESS);
    return symbol_name(fn);
}

TEST(FakeDriver, ProcAddressPicksVersionedAbi) {
    const std::map<std::string, std::string> at13000 = {
        {"cuMemAlloc", "cuMemAlloc_v2"},
        {"cuMemFree", "cuMemFree_v2"},
        {"cuMemAllocPitch", "cuMemAllocPitch_v2"},
        {"cuMemAllocHost", "cuMemAllocHost_v2"},
        {"cuMemHostRegister", "cuMemHostRegister_v2"},
        {"cuArrayCreate", "cuArrayCreate_v2"},
        {"cuArray3DCreate", "cuArray3DCreate_v2"},
        {"cuDeviceTotalMem", "cuDeviceTotalMem_v2"},
        {"cuMemGetInfo", "cuMemGetInfo_v2"},
        {"cuStreamDestroy", "cuStreamDestroy_v2"},
        {"cuStreamBeginCapture", "cuStreamBeginCapture_v2"},
        {"cuStreamGetCaptureInfo", "cuStreamGetCaptureInfo_v3"},
        {"cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset_v2"},
        {"cuCtxSynchronize", "cuCtxSynchronize_v2"},  // new ABI in 13.0
        {"cuGetProcAddress", "cuGetProcAddress_v2"},
        {"cuMemAllocAsync", "cuMemAllocAsync"},
        {"cuMemCreate", "cuMemCreate"},
    };
    for (const auto& [base, name] : at13000) EXPECT_EQ(lookup(base.c_str(), 13000), name) << base;

    EXPECT_EQ(lookup("cuMemAlloc", 3010), "cuMemAlloc");
    EXPECT_EQ(lookup("cuMemFree", 2000), "cuMemFree");
    EXPECT_EQ(lookup("cuGetProcAddress", 11030), "cuGetProcAddress");
    EXPECT_EQ(lookup("cuCtxSynchronize", 12080), "cuCtxSynchronize");
    EXPECT_EQ(lookup("cuStreamGetCaptureInfo", 11080), "cuStreamGetCaptureInfo_v2");

    // The pointer is the library's own function.
    void* fn = nullptr;
    ASSERT_EQ(cuGetProcAddress_v2("cuMemAlloc", &fn, 12000, 0, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(fn, reinterpret_cast<void*>(&cuMemAlloc_v2));

    // The 11.3 ABI (no status argument) works the same.
    ASSERT_EQ(cuGetProcAddress("cuMemFree", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT), CUDA_SUCCESS);
    EXPECT_EQ(symbol_name(fn), "cuMemFree_v2");
}

TEST(FakeDriver, ProcAddressPerThreadFlavour) {
    const cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    void* legacy = nullptr;
    void* ptsz = nullptr;
    ASSERT_EQ(cuGetProcAddress_v2("cuMemAllocAsync", &legacy, 13000, 0, nullptr), CUDA_SUCCESS);
    ASSERT_EQ(cuGetProcAddress_v2("cuMemAllocAsync", &ptsz, 13000, pt, nullptr), CUDA_SUCCESS);
    EXPECT_NE(legacy, ptsz);
    EXPECT_EQ(symbol_name(ptsz), "cuMemAllocAsync_ptsz");
    EXPECT_EQ(lookup("cuMemFreeAsync", 13000, pt), "cuMemFreeAsync_ptsz");
    EXPECT_EQ(lookup("cuMemAllocFromPoolAsync", 13000, pt), "cuMemAllocFromPoolAsync_ptsz");
    EXPECT_EQ(lookup("cuStreamBeginCapture", 13000, pt), "cuStreamBeginCapture_v2_ptsz");
    EXPECT_EQ(lookup("cuMemAllocAsync", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM), "cuMemAllocAsync");
    // No per-thread flavour: the ordinary one.
    EXPECT_EQ(lookup("cuMemAlloc", 13000, pt), "cuMemAlloc_v2");
}

TEST(FakeDriver, ProcAddressFailures) {
    void* fn = reinterpret_cast<void*>(1);
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
    EXPECT_EQ(cuGetProcAddress_v2("cuNoSuchThing", &fn, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
    EXPECT_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    EXPECT_EQ(fn, nullptr);
    EXPECT_EQ(cuGetProcAddress_v2("cuMemAllocAsync", &fn, 11000, 0, &st), CUDA_ERROR_NOT_FOUND);
    EXPECT_EQ(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    EXPECT_EQ(cuGetProcAddress_v2("cuMemAlloc", &fn, 13010, 0, &st), CUDA_ERROR_INVALID_VALUE);
}

TEST(FakeDriver, CaptureAllocationsAreNotCharged) {
    CUstream s = nullptr;
    ASSERT_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
    EXPECT_EQ(cuStreamBeginCapture_v2(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL),
              CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    const size_t start = free_mem();
    ASSERT_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    ASSERT_EQ(cuStreamIsCapturing(s, &status), CUDA_SUCCESS);
    EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    cuuint64_t id = 0;
    ASSERT_EQ(cuStreamGetCaptureInfo_v3(s, &status, &id, nullptr, nullptr, nullptr, nullptr),
              CUDA_SUCCESS);
    EXPECT_NE(id, 0u);
    CUdeviceptr freed = 0, kept = 0;
    ASSERT_EQ(cuMemAllocAsync(&freed, 8 * MiB, s), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAllocAsync(&kept, 200 * MiB, s), CUDA_SUCCESS);  // > capacity: fine
    EXPECT_EQ(free_mem(), start);
    EXPECT_EQ(cuMemFreeAsync(freed, s), CUDA_SUCCESS);
    EXPECT_EQ(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph g = nullptr;
    ASSERT_EQ(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
    ASSERT_NE(g, nullptr);
    ASSERT_EQ(cuStreamIsCapturing(s, &status), CUDA_SUCCESS);
    EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
    EXPECT_EQ(cuGraphDestroy(g), CUDA_SUCCESS);  // releases `kept`
    EXPECT_EQ(cuMemFree_v2(kept), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(free_mem(), start);
    EXPECT_EQ(cuStreamDestroy_v2(s), CUDA_SUCCESS);
}

TEST(FakeDriver, VmmReleaseWaitsForUnmap) {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    size_t gran = 0;
    ASSERT_EQ(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
              CUDA_SUCCESS);
    EXPECT_EQ(gran, 2 * MiB);
    const size_t start = free_mem();
    CUmemGenericAllocationHandle h = 0;
    EXPECT_EQ(cuMemCreate(&h, gran + 1, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(cuMemCreate(&h, 128 * MiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
    ASSERT_EQ(cuMemCreate(&h, 2 * gran, &prop, 0), CUDA_SUCCESS);
    EXPECT_EQ(free_mem(), start - 2 * gran);
    CUdeviceptr va = 0;
    ASSERT_EQ(cuMemAddressReserve(&va, 8 * gran, 0, 0, 0), CUDA_SUCCESS);
    EXPECT_EQ(va % gran, 0u);
    ASSERT_EQ(cuMemMap(va, 2 * gran, 0, h, 0), CUDA_SUCCESS);
    EXPECT_EQ(cuMemMap(va + gran, gran, 0, h, 0), CUDA_ERROR_INVALID_VALUE);  // overlap
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    ASSERT_EQ(cuMemSetAccess(va, 2 * gran, &access, 1), CUDA_SUCCESS);
    static_cast<volatile char*>(reinterpret_cast<void*>(va))[gran] = 1;  // writable
    ASSERT_EQ(cuMemRelease(h), CUDA_SUCCESS);
    EXPECT_EQ(free_mem(), start - 2 * gran);  // still mapped
    EXPECT_EQ(cuMemUnmap(va, gran), CUDA_ERROR_INVALID_VALUE);  // half a mapping
    ASSERT_EQ(cuMemUnmap(va, 2 * gran), CUDA_SUCCESS);
    EXPECT_EQ(free_mem(), start);
    EXPECT_EQ(cuMemAddressFree(va, 8 * gran), CUDA_SUCCESS);
    EXPECT_EQ(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
}

TEST(FakeDriver, PoolsArraysAndManaged) {
    const size_t start = free_mem();
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 1;
    CUmemoryPool pool = nullptr;
    ASSERT_EQ(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
    CUdeviceptr p = 0;
    ASSERT_EQ(cuMemAllocFromPoolAsync_ptsz(&p, 60 * MiB, pool, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(free_mem(), start);  // charged to device 1, the pool's device
    EXPECT_EQ(cuMemFreeAsync_ptsz(p, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(cuMemPoolTrimTo(pool, 0), CUDA_SUCCESS);
    EXPECT_EQ(cuMemPoolDestroy(pool), CUDA_SUCCESS);

    CUDA_ARRAY3D_DESCRIPTOR d{};
    d.Width = 256;
    d.Height = 128;
    d.Format = CU_AD_FORMAT_FLOAT;
    d.NumChannels = 4;
    CUarray a = nullptr;
    ASSERT_EQ(cuArray3DCreate_v2(&a, &d), CUDA_SUCCESS);
    EXPECT_EQ(free_mem(), start - 256 * 128 * 16);
    EXPECT_EQ(cuArrayDestroy(a), CUDA_SUCCESS);
    EXPECT_EQ(free_mem(), start);

    ASSERT_EQ(cuMemAllocManaged(&p, MiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    EXPECT_EQ(free_mem(), start - MiB);
    ASSERT_EQ(cuDevicePrimaryCtxReset_v2(0), CUDA_SUCCESS);  // frees it
    EXPECT_EQ(free_mem(), start);
    EXPECT_EQ(cuMemFree_v2(p), CUDA_ERROR_INVALID_VALUE);
}

TEST(FakeDriver, ThreadSafeAccounting) {
    const size_t start = free_mem();
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
        threads.emplace_back([] {
            for (int i = 0; i < 2000; ++i) {
                CUdeviceptr p = 0;
                if (cuMemAlloc_v2(&p, 4096 + i) == CUDA_SUCCESS) cuMemFree_v2(p);
            }
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(free_mem(), start);
}

// ---- programs ---------------------------------------------------------------

std::string env_or_empty(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

std::string program(const std::string& name) {
    return env_or_empty("FAKE_SELFTEST_PROGRAMS_DIR") + "/" + name;
}

struct RunResult {
    int status = -1;  // raw wait status
    std::string out, err;
    int exit_code() const { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }
};

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// Runs path with a clean FAKE_CUDA_* / LD_* environment plus `env`.
RunResult run(const std::string& path, const std::vector<std::string>& args,
              const std::vector<std::string>& env = {}) {
    RunResult r;
    char out_path[] = "/tmp/fake_selftest_out.XXXXXX";
    char err_path[] = "/tmp/fake_selftest_err.XXXXXX";
    int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
    std::vector<std::string> envs;
    for (char** e = environ; *e; ++e) {
        std::string kv = *e;
        if (kv.rfind("FAKE_CUDA_", 0) == 0 || kv.rfind("LD_", 0) == 0) continue;
        envs.push_back(kv);
    }
    envs.insert(envs.end(), env.begin(), env.end());
    std::vector<char*> argv{const_cast<char*>(path.c_str())}, envp;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (auto& e : envs) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(out_fd, 1);
        dup2(err_fd, 2);
        execve(path.c_str(), argv.data(), envp.data());
        _exit(127);
    }
    waitpid(pid, &r.status, 0);
    close(out_fd);
    close(err_fd);
    r.out = slurp(out_path);
    r.err = slurp(err_path);
    unlink(out_path);
    unlink(err_path);
    return r;
}

// DT_NEEDED entries of an ELF64 file (via the section headers).
std::vector<std::string> needed(const std::string& path) {
    std::string img = slurp(path);
    std::vector<std::string> libs;
    if (img.size() < sizeof(Elf64_Ehdr)) return libs;
    auto* eh = reinterpret_cast<const Elf64_Ehdr*>(img.data());
    auto* sh = reinterpret_cast<const Elf64_Shdr*>(img.data() + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; ++i) {
        if (sh[i].sh_type != SHT_DYNAMIC) continue;
        const char* strtab = img.data() + sh[sh[i].sh_link].sh_offset;
        auto* dyn = reinterpret_cast<const Elf64_Dyn*>(img.data() + sh[i].sh_offset);
        for (; dyn->d_tag != DT_NULL; ++dyn)
            if (dyn->d_tag == DT_NEEDED) libs.push_back(strtab + dyn->d_un.d_val);
    }
    return libs;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

// cu* symbols that anything bound in libcuda.so.1, per LD_DEBUG=bindings.
// A dlsym(handle, ...) binding is reported as "binding file libcuda.so.1 to
// libcuda.so.1"; the driver itself binds no cu* symbol (-Bsymbolic-functions).
std::set<std::string> driver_bindings(const std::string& ld_debug) {
    std::set<std::string> syms;
    std::istringstream in(ld_debug);
    for (std::string line; std::getline(in, line);) {
        auto to = line.find(" to ");
        auto sym = line.find("symbol `cu");
        if (line.find("binding file ") == std::string::npos || to == std::string::npos ||
            sym == std::string::npos)
            continue;
        auto target_end = line.find(" [", to);
        std::string target = line.substr(to + 4, target_end - (to + 4));
        if (target.size() < 13 || target.compare(target.size() - 13, 13, "/libcuda.so.1")) continue;
        syms.insert(line.substr(sym + 8, line.find('\'', sym) - (sym + 8)));
    }
    return syms;
}

TEST(FakeRuntime, StaticRuntimeDlopensTheDriver) {
    const std::string prog = program("prog_all_paths_static");
    ASSERT_EQ(access(prog.c_str(), X_OK), 0) << prog << " missing (build tests/programs)";
    auto libs = needed(prog);
    EXPECT_FALSE(contains(libs, "libcuda.so.1"));
    EXPECT_FALSE(contains(libs, "libcudart.so.13"));

    RunResult r = run(prog, {}, {"LD_LIBRARY_PATH=" + env_or_empty("FAKE_SELFTEST_CUDA_DIR")});
    EXPECT_EQ(r.exit_code(), 0) << r.err;
    EXPECT_EQ(r.out, "EXPECT allocs=11 frees=11\n");

    // The only driver symbol ever bound is the dlsym'd cuGetProcAddress_v2.
    r = run(prog, {}, {"LD_DEBUG=bindings"});
    EXPECT_EQ(r.exit_code(), 0);
    EXPECT_EQ(driver_bindings(r.err), std::set<std::string>{"cuGetProcAddress_v2"});
}

TEST(FakeRuntime, SharedRuntimeDlopensTheDriver) {
    const std::string prog = program("prog_all_paths_shared");
    ASSERT_EQ(access(prog.c_str(), X_OK), 0) << prog << " missing (build tests/programs)";
    auto libs = needed(prog);
    EXPECT_TRUE(contains(libs, "libcudart.so.13"));
    EXPECT_FALSE(contains(libs, "libcuda.so.1"));
    auto rt_libs = needed(env_or_empty("FAKE_SELFTEST_CUDA_DIR") + "/libcudart.so.13");
    EXPECT_FALSE(contains(rt_libs, "libcuda.so.1"));

    RunResult r = run(prog, {}, {"LD_DEBUG=bindings"});
    EXPECT_EQ(r.exit_code(), 0) << r.err;
    EXPECT_EQ(r.out, "EXPECT allocs=11 frees=11\n");
    EXPECT_EQ(driver_bindings(r.err), std::set<std::string>{"cuGetProcAddress_v2"});
}

TEST(FakeEnv, FailAfterInjectsOneOom) {
    RunResult r = run(program("prog_leaky_static"), {"10"}, {"FAKE_CUDA_FAIL_AFTER=3"});
    EXPECT_EQ(r.exit_code(), 2);
    EXPECT_NE(r.err.find("out of memory"), std::string::npos) << r.err;
    r = run(program("prog_leaky_static"), {"10"}, {"FAKE_CUDA_FAIL_AFTER=20"});
    EXPECT_EQ(r.exit_code(), 0) << r.err;  // 20 calls in total: the 21st would fail
    // Exactly one call fails: oom sees one OOM, recovers, and succeeds.
    r = run(program("prog_oom"), {}, {"FAKE_CUDA_FAIL_AFTER=5", "FAKE_CUDA_CAPACITY=1G"});
    EXPECT_EQ(r.exit_code(), 0) << r.err;
    EXPECT_EQ(r.out, "EXPECT oom=1\n");
}

TEST(FakeEnv, CapacityAndDevices) {
    const std::string prog = program("prog_driver_api");  // peak 6 MiB live
    EXPECT_EQ(run(prog, {}, {"FAKE_CUDA_CAPACITY=4K"}).exit_code(), 2);
    EXPECT_EQ(run(prog, {}, {"FAKE_CUDA_CAPACITY=5M"}).exit_code(), 2);
    EXPECT_EQ(run(prog, {}, {"FAKE_CUDA_CAPACITY=6MiB"}).exit_code(), 0);
    EXPECT_EQ(run(prog, {}, {"FAKE_CUDA_CAPACITY=1g"}).exit_code(), 0);
    EXPECT_EQ(run(prog, {}, {"FAKE_CUDA_CAPACITY=6291456"}).exit_code(), 0);
    EXPECT_EQ(run(prog, {}, {"FAKE_CUDA_DEVICES=0"}).exit_code(), 2);  // cuInit: no device
}

TEST(FakePrograms, RunAndPrintExpectations) {
    struct Case {
        const char* name;
        std::vector<std::string> args;
        int exit_code;
        const char* out;
    };
    const Case cases[] = {
        {"prog_leaky_static", {}, 0, ""},
        {"prog_leaky_shared", {"5"}, 0, ""},
        {"prog_driver_api", {}, 0, "EXPECT allocs=5 frees=4\n"},
        {"prog_threads_static", {}, 0, "EXPECT allocs=8024 frees=8000\n"},
        {"prog_threads_static", {"2", "10"}, 0, "EXPECT allocs=26 frees=20\n"},
        {"prog_fork_child", {}, 0, "EXPECT allocs=3 frees=0\n"},
        {"prog_oom", {}, 0, "EXPECT oom=1\n"},
        {"prog_no_cuda", {}, 0, "hello\n"},
        {"prog_exit_status", {}, 7, ""},
    };
    for (const Case& c : cases) {
        RunResult r = run(program(c.name), c.args);
        EXPECT_EQ(r.exit_code(), c.exit_code) << c.name << ": " << r.err;
        EXPECT_EQ(r.out, c.out) << c.name;
    }
    RunResult r = run(program("prog_abort_midway"), {});
    EXPECT_TRUE(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT);
    EXPECT_EQ(r.out, "EXPECT allocs=5 frees=0\n");
}

}  // namespace

int main(int argc, char** argv) {
    // Before the first driver call: the fake reads its environment once.
    setenv("FAKE_CUDA_CAPACITY", "64M", 1);
    setenv("FAKE_CUDA_DEVICES", "2", 1);
    unsetenv("FAKE_CUDA_FAIL_AFTER");
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
