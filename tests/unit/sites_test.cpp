// Call sites resolved once (src/output/sites.h, user_code.h): whose code a frame is, the headline
// a finding gets, and a site_id that survives a renamed executable. Synthetic paths of the
// layouts people run Python from: venvs, conda, Debian's dist-packages, editable installs,
// `python -m pkg`, a script run from another folder, zipapps.
#include <gtest/gtest.h>

#include "analysis/internal.h"
#include "output/sites.h"
#include "output/user_code.h"

namespace gpuleak::output {
namespace {

Frame py(const std::string &function, const std::string &file, int line) {
  Frame f;
  f.kind = Frame::Kind::kPython;
  f.function = function;
  f.file = file;
  f.line = line;
  return f;
}

Frame native(const std::string &function, const std::string &module, const std::string &file = "", int line = 0) {
  Frame f;
  f.function = function;
  f.module = module;
  f.file = file;
  f.line = line;
  f.address = 0x401000;
  return f;
}

UserCode project(const std::string &dir = "/home/ana/proj") {
  UserCode u;
  u.program_dir = dir;
  return u;
}

TEST(UserCode, InstalledPackagesAreNotTheUsers) {
  const UserCode u = project();
  // a venv inside the project folder: site-packages wins over "the program's folder"
  EXPECT_FALSE(is_user_python_file("/home/ana/proj/.venv/lib/python3.12/site-packages/torch/nn/modules/linear.py", u));
  EXPECT_FALSE(is_user_python_file("/usr/lib/python3/dist-packages/numpy/core/numeric.py", u));  // Debian
  EXPECT_FALSE(is_user_python_file("/usr/local/lib/python3.11/dist-packages/jax/_src/api.py", u));
  EXPECT_FALSE(is_user_python_file("/opt/conda/lib/python3.12/site-packages/cupy/_creation/basic.py", u));  // conda
  EXPECT_FALSE(is_user_python_file("/home/ana/.local/lib/python3.12/site-packages/torch/_tensor.py", u));   // --user
}

TEST(UserCode, TheStandardLibraryIsNotTheUsers) {
  const UserCode u = project();
  EXPECT_FALSE(is_user_python_file("/usr/lib/python3.11/threading.py", u));
  EXPECT_FALSE(is_user_python_file("/opt/conda/lib/python3.12/contextlib.py", u));
  EXPECT_FALSE(is_user_python_file("/usr/lib64/python3.9/runpy.py", u));
  EXPECT_FALSE(is_user_python_file("<frozen runpy>", u));
  EXPECT_FALSE(is_user_python_file("/usr/lib/python312.zip/json/decoder.py", u));
}

TEST(UserCode, TheProgramsOwnCodeIs) {
  const UserCode u = project();
  EXPECT_TRUE(is_user_python_file("/home/ana/proj/train.py", u));
  EXPECT_TRUE(is_user_python_file("/home/ana/proj/models/net.py", u));
  // an editable install's source tree (pip install -e ../mylib) and code on PYTHONPATH
  EXPECT_TRUE(is_user_python_file("/home/ana/src/mylib/mylib/layers.py", u));
  // a zipapp: the archive's path is part of the file name
  EXPECT_TRUE(is_user_python_file("/home/ana/bin/tool.pyz/tool/main.py", u));
  // the program's folder counts even where its path looks like a standard library (Scalene's rule)
  EXPECT_TRUE(is_user_python_file("/srv/lib/python3-jobs/train.py", project("/srv/lib/python3-jobs")));
  EXPECT_FALSE(is_user_python_file("/srv/lib/python3-jobs/train.py", UserCode{}));
  EXPECT_FALSE(is_user_python_file("", u));
}

TEST(UserCode, RootsWidenTheUsersCode) {
  UserCode u = project();
  const std::string lib = "/home/ana/proj/.venv/lib/python3.12/site-packages/mylib/layers.py";
  EXPECT_FALSE(is_user_python_file(lib, u));
  u.roots = split_user_code("/nowhere::/home/ana/proj/.venv/lib/python3.12/site-packages/mylib/");
  ASSERT_EQ(u.roots.size(), 2u);  // the empty part is dropped
  EXPECT_TRUE(is_user_python_file(lib, u));
  // a root is a folder, not a prefix of a name
  u.roots = {"/home/ana/proj/.venv/lib/python3.12/site-packages/my"};
  EXPECT_FALSE(is_user_python_file(lib, u));
}

TEST(UserCode, ProgramFolderComesFromTheCommandLine) {
  format::Capture c;
  c.run.emplace();
  c.run->command = {"/usr/bin/python3", "-u", "-X", "dev", "/home/ana/proj/train.py", "--lr", "1"};
  EXPECT_EQ(user_code_for(c, {}).program_dir, "/home/ana/proj");  // a script run from another folder
  c.run->command = {"python3", "-m", "pkg.train"};                // python -m: no script, rule 5 decides
  EXPECT_EQ(user_code_for(c, {}).program_dir, "");
  c.run->command = {"python3.12", "/home/ana/bin/tool.pyz"};  // a zipapp
  EXPECT_EQ(user_code_for(c, {}).program_dir, "/home/ana/bin");
  c.run->command = {"./train_v2"};  // a native program: its executable's folder
  c.modules.push_back({0, "/home/ana/proj/build/train_v2", "", {}});
  EXPECT_EQ(user_code_for(c, {"/x"}).program_dir, "/home/ana/proj/build");
  EXPECT_EQ(user_code_for(c, {"/x"}).roots, std::vector<std::string>{"/x"});
}

TEST(UserCode, CudaFrameworksAndTheRuntimeAreNotTheUsers) {
  const UserCode u = project();
  for (const char *module :
       {"/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/local/cuda/lib64/libcudart.so.12",
        "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so", "/usr/lib/libc10_cuda.so",
        "/usr/lib/libcublasLt.so.12", "/usr/lib/libnccl.so.2", "/usr/lib/libxla_extension.so",
        "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "/usr/lib/x86_64-linux-gnu/libffi.so.8", "/usr/lib/libpython3.12.so.1.0", "/opt/gpuleak/lib/libgpuleak.so",
        "/usr/lib/python3.11/lib-dynload/_ctypes.cpython-311-x86_64-linux-gnu.so",
        "/opt/venv/lib/python3.12/site-packages/cupy/_core/core.cpython-312.so"})
    EXPECT_FALSE(is_user_native_frame(native("f", module), u)) << module;
  EXPECT_TRUE(is_user_native_frame(native("cache_activation", "/home/ana/proj/build/train"), u));
  EXPECT_TRUE(is_user_native_frame(native("gemm", "/home/ana/proj/build/libmodel.so"), u));
  // the CUDA runtime linked statically into the program (nvcc's default)
  EXPECT_FALSE(is_user_native_frame(native("cudart::cudaApiMalloc(void**, unsigned long)", "/home/ana/train"), u));
  EXPECT_FALSE(is_user_native_frame(native("cudaMalloc", "/home/ana/train"), u));
  EXPECT_FALSE(is_user_native_frame(native("cuMemAlloc_v2", "/home/ana/train"), u));
  EXPECT_TRUE(is_user_native_frame(native("cudnn_like_helper", "/home/ana/train"), u));
  EXPECT_TRUE(is_user_native_frame(native("cuda", "/home/ana/train"), u));
}

TEST(Headline, PythonLeakIsHeadedByTheUsersLineViaTheLibrary) {
  const std::string torch = "/home/ana/proj/.venv/lib/python3.12/site-packages/torch/nn/modules/";
  Stack frames = {native("ffi_call", "/usr/lib/x86_64-linux-gnu/libffi.so.8"),
                  py("Linear.forward", torch + "linear.py", 134), py("Module._call_impl", torch + "module.py", 1750),
                  py("train_step", "/home/ana/proj/train.py", 41), py("<module>", "/home/ana/proj/train.py", 60)};
  Headline h = headline_of(frames, project());
  EXPECT_TRUE(h.user);
  EXPECT_EQ(h.frame.function, "train_step");
  ASSERT_TRUE(h.via);
  EXPECT_EQ(h.via->function, "Linear.forward");
  EXPECT_EQ(h.text, "train.py:41 in train_step (via Linear.forward, torch/nn/modules/linear.py:134)");
}

// The viewer's "hide library frames" keeps these: the frames headline_of would pick from, so the
// headline is always one of them.
TEST(Headline, UserFramesAreTheOnesTheHeadlineIsPickedFrom) {
  const std::string torch = "/home/ana/proj/.venv/lib/python3.12/site-packages/torch/nn/modules/";
  Stack frames = {native("at::detail::empty_generic(c10::ArrayRef<long>)", "/v/torch/lib/libtorch_cpu.so"),
                  native("helper", "/home/ana/proj/build/libops.so"), py("Linear.forward", torch + "linear.py", 134),
                  py("train_step", "/home/ana/proj/train.py", 41), py("<module>", "/home/ana/proj/train.py", 60)};
  // In a Python program a native frame is the user's only in the program's folder (libops.so is).
  EXPECT_EQ(user_frames(frames, project()), (std::vector<bool>{false, true, false, true, true}));
  // Without Python frames every frame outside CUDA, the frameworks and the runtime is.
  Stack native_only = {native("cuMemAlloc_v2", "/usr/lib/libcuda.so.1"), native("gemm", "/opt/app/train")};
  EXPECT_EQ(user_frames(native_only, UserCode{}), (std::vector<bool>{false, true}));
}

TEST(Headline, SitesThatDifferOnlyBelowTheUsersLineShareAKey) {
  const std::string torch = "/v/lib/python3.12/site-packages/torch/nn/modules/";
  Stack linear = {py("Linear.forward", torch + "linear.py", 134), py("train_step", "/p/train.py", 41)};
  Stack gelu = {py("GELU.forward", torch + "activation.py", 816), py("train_step", "/p/train.py", 41)};
  Stack other = {py("GELU.forward", torch + "activation.py", 816), py("train_step", "/p/train.py", 42)};
  EXPECT_EQ(headline_of(linear, project("/p")).key, headline_of(gelu, project("/p")).key);
  EXPECT_NE(headline_of(linear, project("/p")).key, headline_of(other, project("/p")).key);
  EXPECT_NE(site_id(linear), site_id(gelu));  // still two sites
}

TEST(Headline, UsersOwnLineNeedsNoVia) {
  Stack frames = {py("cache", "/p/train.py", 12), py("main", "/p/train.py", 30)};
  Headline h = headline_of(frames, project("/p"));
  EXPECT_EQ(h.text, "train.py:12 in cache");
  EXPECT_FALSE(h.via);
}

TEST(Headline, WithoutUserCodeTheInnermostPythonLineIsShown) {
  const std::string sp = "/v/lib/python3.12/site-packages/";
  Stack frames = {native("ffi_call", "/usr/lib/libffi.so.8"), py("Thread.run", sp + "lib/worker.py", 7),
                  py("_bootstrap", "/usr/lib/python3.12/threading.py", 1010)};
  Headline h = headline_of(frames, project("/p"));
  EXPECT_FALSE(h.user);
  EXPECT_EQ(h.frame.function, "Thread.run");
  EXPECT_EQ(h.text, "lib/worker.py:7 in Thread.run");
}

TEST(Headline, NativeProgramIsHeadedByTheFirstFrameOutsideCudaAndFrameworks) {
  Stack frames = {native("cublasLtMatmul", "/usr/lib/libcublasLt.so.12"),
                  native("gemm", "/home/ana/proj/build/train", "/home/ana/proj/gemm.cpp", 20),
                  native("main", "/home/ana/proj/build/train", "/home/ana/proj/main.cpp", 9)};
  Headline h = headline_of(frames, project());
  EXPECT_TRUE(h.user);
  EXPECT_EQ(h.text, "gemm.cpp:20 in gemm (via cublasLtMatmul, libcublasLt.so.12)");
  EXPECT_EQ(headline_of({}, project()).text, "an unknown site");
}

// Issue #28: C++ frames read as users read them, without the parameter list and return type; the
// report's frame keeps the whole demangled name.
TEST(Headline, CppFramesAreShortenedInTheText) {
  EXPECT_EQ(short_function("at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, "
                           "c10::ScalarType, std::optional<c10::MemoryFormat>)"),
            "at::detail::empty_generic");
  EXPECT_EQ(short_function("void at::native::gpu_kernel<float>(at::TensorIteratorBase&, float const&) const"),
            "at::native::gpu_kernel<float>");
  EXPECT_EQ(short_function("Foo::operator()(int)"), "Foo::operator()");
  EXPECT_EQ(short_function("operator new(unsigned long)"), "operator new");
  EXPECT_EQ(short_function("(anonymous namespace)::alloc(unsigned long)"), "(anonymous namespace)::alloc");
  EXPECT_EQ(short_function("Linear.forward"), "Linear.forward");
  Stack frames = {native("at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*)",
                         "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cpu.so"),
                  native("grow(unsigned long)", "/home/ana/proj/build/train", "/home/ana/proj/grow.cpp", 7)};
  Headline h = headline_of(frames, project());
  EXPECT_EQ(h.text, "grow.cpp:7 in grow (via at::detail::empty_generic, libtorch_cpu.so)");
  EXPECT_EQ(h.frame.function, "grow(unsigned long)");
}

TEST(Headline, WithoutUserCodeATensorIsHeadedByWhatAskedTheAllocator) {
  const std::string c10 = "/venv/lib/python3.12/site-packages/torch/lib/libc10_cuda.so";
  const std::string cuda = "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so";
  Stack frames = {native("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::record_trace", c10),
                  native("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc", c10),
                  native("at::cuda::getCurrentCUDABlasHandle", cuda)};
  Headline h = headline_of(frames, project());
  EXPECT_FALSE(h.user);
  EXPECT_EQ(h.frame.function, "at::cuda::getCurrentCUDABlasHandle");
  EXPECT_FALSE(h.via) << h.text;  // never "via ...record_trace(...)": the allocator says nothing more
  EXPECT_EQ(h.text, "at::cuda::getCurrentCUDABlasHandle (libtorch_cuda.so)");
  // only the allocator's frames: the innermost of them
  EXPECT_EQ(headline_of({frames[0], frames[1]}, project()).frame.function, frames[0].function);
}

// A frame without a name says nothing: "cublasCreate_v2 (libcublas.so.13) (via 0x7f...,
// libcublas.so.13)" was read on the H200. The via is the innermost named frame below the headline,
// or none.
TEST(Headline, ViaSkipsFramesWithoutAName) {
  const std::string cublas = "/usr/local/cuda/lib64/libcublas.so.13";
  Stack frames = {native("", cublas), native("cublasCreate_v2", cublas),
                  native("main", "/home/ana/proj/build/train", "/home/ana/proj/main.cpp", 9)};
  frames[0].address = 0x7f12345678;
  Headline h = headline_of(frames, project());
  EXPECT_TRUE(h.user);
  ASSERT_TRUE(h.via);
  EXPECT_EQ(h.text, "main.cpp:9 in main (via cublasCreate_v2, libcublas.so.13)");
  // only unnamed frames below it: no via
  Stack bare = {native("", cublas), native("main", "/home/ana/proj/build/train", "/home/ana/proj/main.cpp", 9)};
  bare[0].address = 0x7f12345678;
  h = headline_of(bare, project());
  EXPECT_FALSE(h.via) << h.text;
  EXPECT_EQ(h.text, "main.cpp:9 in main");
}

TEST(Headline, TheUsersNativeLineIsShownViaTheOpNotTheAllocator) {
  const std::string c10 = "/venv/lib/python3.12/site-packages/torch/lib/libc10_cuda.so";
  const std::string cuda = "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so";
  Stack frames = {native("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc", c10),
                  native("at::native::empty_cuda", cuda),
                  native("step", "/home/ana/proj/build/train", "/home/ana/proj/step.cpp", 12)};
  Headline h = headline_of(frames, project());
  EXPECT_TRUE(h.user);
  EXPECT_EQ(h.text, "step.cpp:12 in step (via at::native::empty_cuda, libtorch_cuda.so)");
}

// One line between the user's code and the rest (src/text/code_owner.h): the analysis (loops from
// Python frames, advice filters) and the headline agree on every module and file, except the
// frameworks' own source trees, which the analysis keeps as the framework's wherever they are.
TEST(UserCode, TheAnalysisAndTheHeadlineDrawTheSameLine) {
  UserCode none;  // no program folder, no --user-code
  for (const std::string module :
       {"/home/ana/proj/build/train", "/home/ana/proj/build/libkernels.so", "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so", "/usr/lib/libcublasLt.so.13",
        "/usr/bin/python3.11", "/usr/lib/python3.12/lib-dynload/_ctypes.cpython-312-x86_64-linux-gnu.so",
        "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/opt/conda/lib/libgomp.so.1", "/work/gpuleak/lib/libgpuleak.so"}) {
    EXPECT_EQ(analysis::detail::library_native_module(module), !is_user_native_frame(native("f", module), none))
        << module;
  }
  for (const std::string file :
       {"/home/ana/proj/train.py", "/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py",
        "/usr/lib/python3.12/threading.py", "<frozen importlib._bootstrap>", "/opt/pypy/lib/pypy3.10/os.py",
        "/usr/lib/python312.zip/json/__init__.py", "/usr/lib/python3/dist-packages/numpy/core/numeric.py"}) {
    EXPECT_EQ(analysis::detail::library_python_file(file), !is_user_python_file(file, none)) << file;
  }
  // the documented difference: a framework's source tree outside site-packages (an editable install)
  EXPECT_TRUE(analysis::detail::library_python_file("/src/pytorch/torch/nn/modules/linear.py"));
  EXPECT_TRUE(is_user_python_file("/src/pytorch/torch/nn/modules/linear.py", none));
}

TEST(SiteId, RenamedExecutableKeepsItsIds) {
  auto stack_of = [](const std::string &exe) {
    return site_frames(
        {native("cache_activation", exe, "/src/leaky.cpp", 14), native("main", exe, "/src/leaky.cpp", 40),
         native("__libc_start_call_main", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
         native("__libc_start_main_impl", "/usr/lib/x86_64-linux-gnu/libc.so.6"), native("_start", exe)},
        {});
  };
  Stack v1 = stack_of("/build/train_v1"), v2 = stack_of("/opt/train_v2");
  ASSERT_EQ(v1.size(), 2u);  // process start dropped: nothing outward of main()
  EXPECT_EQ(v1.back().function, "main");
  EXPECT_EQ(site_id(v1, "/build/train_v1"), site_id(v2, "/opt/train_v2"));
  EXPECT_NE(site_id(v1), site_id(v2));  // the executable's name would have changed it
  // a library keeps its basename in the hash: another library is another site
  Stack lib1 = {native("f", "/a/libone.so")}, lib2 = {native("f", "/a/libtwo.so")};
  EXPECT_NE(site_id(lib1, "/build/train_v1"), site_id(lib2, "/build/train_v1"));
  EXPECT_EQ(site_id({native("f", "/a/libone.so")}), site_id({native("f", "/b/libone.so")}));
}

TEST(SiteId, StartFramesAreDroppedEvenWithoutMain) {
  Stack s = site_frames({native("worker", "/p/app"), native("_start", "/p/app")}, {});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].function, "worker");
}

TEST(Sites, ResolvesOnceWithTheCapturesExecutable) {
  int calls = 0;
  auto symbolize = [&](uint32_t id) {
    ++calls;
    return Stack{native(id == 1 ? "a" : "b", "/build/train_v1", "/src/x.cpp", static_cast<int>(id))};
  };
  SiteOptions options;
  options.executable = "/build/train_v1";
  Sites sites(symbolize, options);
  const ResolvedSite &r = sites.resolve(1, 0);
  EXPECT_EQ(&sites.resolve(analysis::Site{1, 0}), &r);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(r.id, site_id(r.frames, "/build/train_v1"));
  EXPECT_EQ(r.label, "a (x.cpp:1)");
  EXPECT_EQ(r.headline.text, "x.cpp:1 in a");
  EXPECT_EQ(sites.resolve(0, 0).label, "unknown site");
}

}  // namespace
}  // namespace gpuleak::output
