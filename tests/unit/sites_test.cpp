// Call sites resolved once (src/output/sites.h, analysis/user_code.h): whose code a frame is, the headline
// a finding gets, and a site_id that survives a renamed executable. Synthetic paths of the
// layouts people run Python from: venvs, conda, Debian's dist-packages, editable installs,
// `python -m pkg`, a script run from another folder, zipapps.
#include <gtest/gtest.h>

#include "analysis/user_code.h"
#include "output/sites.h"

namespace gpuleak::output {
namespace {

using analysis::is_user_python_file;
using analysis::split_user_code;
using analysis::user_code_for;
using analysis::UserCode;

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

bool is_user_native_frame(const Frame &f, const UserCode &u) { return is_user_frame(f, false, u); }

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

// One classifier (analysis/user_code.h): the analysis's CodeOwner, which judges raw addresses and
// file ids, and the headline, which judges symbolized frames, give every module and file the same
// answer under the same setting, --user-code roots included.
TEST(UserCode, TheAnalysisAndTheHeadlineDrawTheSameLine) {
  format::Capture c;
  c.run.emplace();
  c.run->command = {"/usr/bin/python3", "/home/ana/proj/train.py"};
  const std::vector<std::string> modules = {"/home/ana/proj/build/train",
                                            "/home/ana/proj/ext/_kernels.cpython-312-x86_64-linux-gnu.so",
                                            "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                                            "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so",
                                            "/usr/lib/libcublasLt.so.13",
                                            "/usr/bin/python3.11",
                                            "/usr/lib/python3.12/lib-dynload/_ctypes.cpython-312.so",
                                            "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
                                            "/usr/lib/x86_64-linux-gnu/libopenblas.so.0",
                                            "/opt/mine/libmine.so",
                                            "/work/gpuleak/lib/libgpuleak.so"};
  for (size_t i = 0; i < modules.size(); ++i) {
    const uint64_t lo = 0x10000000ull * (i + 1);
    c.modules.push_back({lo, modules[i], "", {{lo, lo + 0x1000}}});
  }
  const std::vector<std::string> files = {"/home/ana/proj/train.py",
                                          "/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py",
                                          "/usr/lib/python3.12/threading.py",
                                          "<frozen importlib._bootstrap>",
                                          "/opt/pypy/lib/pypy3.10/os.py",
                                          "/usr/lib/python312.zip/json/__init__.py",
                                          "/src/pytorch/torch/nn/modules/linear.py",
                                          "/home/ana/proj/torch/nn/patched.py",
                                          "/opt/mine/helpers.py",
                                          "<string>"};
  for (size_t i = 0; i < files.size(); ++i) c.strings[static_cast<uint32_t>(i + 1)] = files[i];
  for (const std::vector<std::string> &roots : {std::vector<std::string>{}, std::vector<std::string>{"/opt/mine"}}) {
    const UserCode user = user_code_for(c, roots);
    const analysis::CodeOwner owner(c, user);
    for (size_t i = 0; i < modules.size(); ++i)
      for (bool in_python : {false, true}) {
        Frame f = native("f", modules[i]);
        EXPECT_EQ(owner.native_address(c.modules[i].segments[0].first + 8, in_python),
                  is_user_frame(f, in_python, user))
            << modules[i] << " in_python " << in_python << " roots " << roots.size();
      }
    for (size_t i = 0; i < files.size(); ++i)
      EXPECT_EQ(owner.python_file(static_cast<uint32_t>(i + 1)), is_user_frame(py("f", files[i], 1), true, user))
          << files[i];
  }
  const UserCode user = user_code_for(c, {});
  // a framework's source tree outside site-packages (an editable install) is the framework's ...
  EXPECT_FALSE(is_user_python_file("/src/pytorch/torch/nn/modules/linear.py", user));
  // ... and so is one inside the project; the project's own files in a folder named like one are not
  EXPECT_FALSE(is_user_python_file("/home/ana/proj/torch/nn/patched.py", user));
  EXPECT_TRUE(is_user_python_file("/home/ana/torch/train.py", project("/home/ana/torch")));
  // in a Python program a native library outside the program's folder is a library it called
  EXPECT_FALSE(is_user_frame(native("cblas_sgemm", "/usr/lib/x86_64-linux-gnu/libopenblas.so.0"), true, user));
  EXPECT_TRUE(
      is_user_frame(native("launch", "/home/ana/proj/ext/_kernels.cpython-312-x86_64-linux-gnu.so"), true, user));
  // a frame outside every module is nobody's code
  EXPECT_FALSE(is_user_frame(native("", ""), false, user));
  // exec'd code (a dataclass's generated __init__, python -c) and the frozen modules are nobody's
  EXPECT_FALSE(is_user_python_file("<string>", user));
  EXPECT_FALSE(is_user_python_file("<frozen runpy>", user));
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

// Two leaks through one library function without line tables (a stripped cuBLAS), from two call
// paths inside it: the frames differ only by where their return addresses sit, so the site ids
// must too (two different cuBLAS leaks shared one id on the H200). A frame with a line hashes as
// before; the same path in another run (another load address, same build) keeps its id.
TEST(SiteId, DistinctCallPathsThroughOneLibraryFunctionGetDistinctIds) {
  const std::string cublas = "/usr/local/cuda/lib64/libcublas.so.13";
  auto path = [&](uint64_t inner, uint64_t outer, uint64_t base) {
    Frame a = native("", cublas), b = native("cublasCreate_v2", cublas);
    a.address = base + inner, a.code_offset = inner;  // no symbol: the offset into the module
    b.address = base + outer, b.code_offset = 0x40;   // the offset into cublasCreate_v2
    return Stack{a, b, native("main", "/home/ana/proj/build/train", "/home/ana/proj/main.cpp", 9)};
  };
  const Stack one = path(0x12345, 0x40, 0x7f0000000000), two = path(0x54321, 0x40, 0x7f0000000000);
  EXPECT_NE(site_id(one), site_id(two));
  EXPECT_EQ(site_id(one), site_id(path(0x12345, 0x40, 0x7e0000000000)));  // another load address
  // the same function called from two places in it, no line tables either
  Stack here = one, there = one;
  there[1].code_offset = 0x80;
  EXPECT_NE(site_id(here), site_id(there));
  // a frame with a line: the line decides, as it always did (ids in older baselines hold)
  Stack lined = {native("cache_activation", "/p/app", "/p/leaky.cpp", 17)}, moved = lined;
  moved[0].address += 0x100;
  EXPECT_EQ(site_id(lined), site_id(moved));
}

// A thin helper's line ("train.py:6 in alloc") does not say which call keeps the memory: the
// headline carries the user's line that called it, and sites that differ only in that caller
// are different findings.
TEST(Headline, AThinHelperIsShownWithItsCaller) {
  Stack from40 = {py("alloc", "/p/train.py", 6), py("main", "/p/train.py", 40), py("<module>", "/p/train.py", 60)};
  Stack from45 = {py("alloc", "/p/train.py", 6), py("main", "/p/train.py", 45), py("<module>", "/p/train.py", 60)};
  Headline h = headline_of(from40, project("/p"));
  EXPECT_EQ(h.text, "train.py:6 in alloc");
  ASSERT_TRUE(h.caller);
  EXPECT_EQ(h.caller->line, 40);
  EXPECT_EQ(h.caller_where, "train.py:40 in main");
  EXPECT_NE(h.key, headline_of(from45, project("/p")).key);
  // recursion is one function: the caller is the first frame of another one
  Stack recursive = {py("walk", "/p/tree.py", 3), py("walk", "/p/tree.py", 5), py("main", "/p/tree.py", 9)};
  EXPECT_EQ(headline_of(recursive, project("/p")).caller_where, "tree.py:9 in main");
  // library frames between them are skipped; no user frame outward: no caller
  const std::string torch = "/v/lib/python3.12/site-packages/torch/nn/modules/";
  Stack hook = {py("alloc", "/p/train.py", 6), py("Module._call_impl", torch + "module.py", 1750),
                py("main", "/p/train.py", 40)};
  EXPECT_EQ(headline_of(hook, project("/p")).caller_where, "train.py:40 in main");
  EXPECT_FALSE(headline_of({py("<module>", "/p/train.py", 3)}, project("/p")).caller);
  // a headline that is not the user's has no caller
  EXPECT_FALSE(headline_of({py("Thread.run", "/v/lib/python3.12/site-packages/w.py", 7)}, project("/p")).caller);
  // native: the helper's caller in the program
  Stack native_stack = {native("cache_activation", "/p/app", "/p/leaky.cpp", 17),
                        native("main", "/p/app", "/p/leaky.cpp", 40)};
  EXPECT_EQ(headline_of(native_stack, project("/p")).caller_where, "leaky.cpp:40 in main");
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
