// Symbolizer against the running test process: module records are built from dl_iterate_phdr
// exactly as the recorder writes them, addresses are real return addresses taken at run time, and
// names, files and lines are checked exactly.
#include "output/symbolizer.h"

#include <gtest/gtest.h>

#include <link.h>
#include <sys/stat.h>
#include <unistd.h>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "symbolizer_fixture.h"

namespace gpuleak::output {
namespace {

volatile int g_sink;

// Same shape as the fixture's leaky_site, but compiled into the test executable.
__attribute__((noinline)) uint64_t exe_site(int *line) {
  *line = __LINE__ + 1;
  uint64_t ra = symbolizer_fixture::caller_return_address();
  g_sink = g_sink + 1;
  return ra;
}

std::string basename_of(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string self_exe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, n) : "";
}

std::string build_id_of(const dl_phdr_info *info) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    auto *p = reinterpret_cast<const char *>(info->dlpi_addr + ph.p_vaddr);
    const char *end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      auto *note = reinterpret_cast<const ElfW(Nhdr) *>(p);
      const char *name = p + sizeof(ElfW(Nhdr));
      const char *desc = name + ((note->n_namesz + 3) & ~3u);
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        std::string s;
        for (uint32_t j = 0; j < note->n_descsz; ++j) {
          s += digits[static_cast<unsigned char>(desc[j]) >> 4];
          s += digits[static_cast<unsigned char>(desc[j]) & 15];
        }
        return s;
      }
      p = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
  return "";
}

// Every loaded object, as the recorder's module records describe it.
std::vector<format::Module> loaded_modules() {
  std::vector<format::Module> out;
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) {
        format::Module m;
        m.load_bias = info->dlpi_addr;
        m.path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : self_exe();
        m.build_id = build_id_of(info);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr) &ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD)
            m.segments.emplace_back(info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        static_cast<std::vector<format::Module> *>(data)->push_back(m);
        return 0;
      },
      &out);
  return out;
}

format::Module module_containing(uint64_t address) {
  for (const format::Module &m : loaded_modules())
    for (const auto &[start, end] : m.segments)
      if (address >= start && address < end) return m;
  ADD_FAILURE() << "no module holds " << std::hex << address;
  return {};
}

struct Sites {
  uint64_t lib = 0, exe = 0;
  int lib_line = 0, exe_line = 0;
};

Sites take_sites() {
  Sites s;
  s.lib = symbolizer_fixture::leaky_site(&s.lib_line);
  s.exe = exe_site(&s.exe_line);
  return s;
}

TEST(Symbolizer, ResolvesFunctionFileAndLineInLibraryAndExecutable) {
  Sites s = take_sites();
  format::Capture capture;
  capture.modules = loaded_modules();
  capture.stacks[7] = format::Stack{format::StackKind::kNative, {s.lib, s.exe}};
  format::Module lib = module_containing(s.lib);
  ASSERT_EQ(basename_of(lib.path), "libsymbolizer_fixture.so");
  ASSERT_FALSE(lib.build_id.empty());

  Symbolizer symbolizer(capture);
  Stack stack = symbolizer.symbolize(7);
  ASSERT_EQ(stack.size(), 2u);

  EXPECT_EQ(stack[0].function, "symbolizer_fixture::leaky_site(int*)");
  EXPECT_EQ(basename_of(stack[0].file), "symbolizer_fixture.cpp");
  EXPECT_EQ(stack[0].line, s.lib_line);
  EXPECT_EQ(stack[0].module, lib.path);
  EXPECT_EQ(stack[0].build_id, lib.build_id);
  EXPECT_EQ(stack[0].address, s.lib);
  EXPECT_EQ(stack[0].kind, Frame::Kind::kNative);
  EXPECT_EQ(stack[0].code_offset, 0u);  // it has a line: the line identifies it

  EXPECT_EQ(stack[1].function, "gpuleak::output::(anonymous namespace)::exe_site(int*)");
  EXPECT_EQ(basename_of(stack[1].file), "symbolizer_test.cpp");
  EXPECT_EQ(stack[1].line, s.exe_line);
  EXPECT_EQ(stack[1].module, self_exe());
  EXPECT_EQ(stack[1].address, s.exe);
  EXPECT_TRUE(symbolizer.problems().empty());

  // Cached and uncached paths agree.
  Stack again = symbolizer.symbolize(7);
  EXPECT_EQ(again[0].line, s.lib_line);
  EXPECT_EQ(symbolizer.frame(s.exe).function, stack[1].function);
}

// The return address of a call to a noreturn function is one past the caller's last
// instruction: looking it up as is would name whatever follows.
TEST(Symbolizer, LooksUpTheCallNotTheReturnAddress) {
  int line = 0;
  uint64_t ra = 0;
  try {
    symbolizer_fixture::ends_in_noreturn_call(&line);
  } catch (uint64_t thrown) {
    ra = thrown;
  }
  ASSERT_NE(ra, 0u);
  format::Capture capture;
  capture.modules = loaded_modules();
  Symbolizer symbolizer(capture);
  Frame f = symbolizer.frame(ra);
  EXPECT_EQ(f.function, "symbolizer_fixture::ends_in_noreturn_call(int*)");
  EXPECT_EQ(basename_of(f.file), "symbolizer_fixture.cpp");
  EXPECT_EQ(f.line, line);
  EXPECT_EQ(f.address, ra);
}

TEST(Symbolizer, OnlyTheFixtureModuleIsNeeded) {
  Sites s = take_sites();
  format::Capture capture;
  capture.modules = {module_containing(s.lib)};
  Symbolizer symbolizer(capture);
  Frame f = symbolizer.frame(s.lib);
  EXPECT_EQ(f.function, "symbolizer_fixture::leaky_site(int*)");
  EXPECT_EQ(f.line, s.lib_line);
  // The executable is not in this capture's map: its address belongs to no module.
  Frame none = symbolizer.frame(s.exe);
  EXPECT_EQ(none.module, "");
  EXPECT_EQ(none.function, "");
  EXPECT_EQ(none.address, s.exe);
}

TEST(Symbolizer, AddressOutsideEveryModule) {
  format::Capture capture;
  capture.modules = loaded_modules();
  capture.stacks[1] = format::Stack{format::StackKind::kNative, {0, 1, 0x10, ~0ull, ~0ull - 1}};
  Symbolizer symbolizer(capture);
  Stack stack = symbolizer.symbolize(1);
  ASSERT_EQ(stack.size(), 5u);
  for (const Frame &f : stack) {
    EXPECT_EQ(f.module, "");
    EXPECT_EQ(f.function, "");
    EXPECT_EQ(f.file, "");
    EXPECT_EQ(f.line, 0);
    EXPECT_EQ(f.build_id, "");
  }
  EXPECT_EQ(stack[3].address, ~0ull);
}

TEST(Symbolizer, UnknownStacksAreEmptyAndPythonStacksDecode) {
  format::Capture capture;
  capture.strings = {{1, "train.py"}, {2, "step"}};
  capture.stacks[3] = format::Stack{format::StackKind::kPython, {(uint64_t{1} << 32) | 2, 42}};
  Symbolizer symbolizer(capture);
  Stack s = symbolizer.symbolize(3);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].kind, Frame::Kind::kPython);
  EXPECT_EQ(s[0].function, "step");
  EXPECT_EQ(s[0].file, "train.py");
  EXPECT_EQ(s[0].line, 42);
  EXPECT_TRUE(symbolizer.symbolize(12345).empty());
}

TEST(Symbolizer, MissingFileKeepsModuleAndAddress) {
  Sites s = take_sites();
  format::Module m = module_containing(s.lib);
  m.path = "/nonexistent/dir/libsymbolizer_fixture.so";
  format::Capture capture;
  capture.modules = {m};
  Symbolizer symbolizer(capture);
  Frame f = symbolizer.frame(s.lib);
  EXPECT_EQ(f.module, "/nonexistent/dir/libsymbolizer_fixture.so");
  EXPECT_EQ(f.build_id, m.build_id);
  EXPECT_EQ(f.address, s.lib);
  EXPECT_EQ(f.function, "");
  EXPECT_EQ(f.file, "");
  EXPECT_EQ(f.line, 0);
  // No line: where the address sits in the module, the same wherever the module was loaded
  // (site_id hashes it: two call paths through one unsymbolized library are two sites).
  EXPECT_EQ(f.code_offset, s.lib - m.load_bias);
  ASSERT_EQ(symbolizer.problems().size(), 1u);
  EXPECT_NE(symbolizer.problems()[0].find("file not found"), std::string::npos);
}

TEST(Symbolizer, BuildIdMismatchMeansNoSymbols) {
  Sites s = take_sites();
  format::Module m = module_containing(s.lib);
  const std::string real_id = m.build_id;
  for (std::string recorded : {std::string(real_id.size(), '0'), std::string("")}) {
    m.build_id = recorded;
    format::Capture capture;
    capture.modules = {m};
    Symbolizer symbolizer(capture);
    Frame f = symbolizer.frame(s.lib);
    EXPECT_EQ(f.module, m.path);
    EXPECT_EQ(f.build_id, recorded);
    EXPECT_EQ(f.function, "");
    EXPECT_EQ(f.file, "");
    EXPECT_EQ(f.line, 0);
    ASSERT_EQ(symbolizer.problems().size(), 1u);
    EXPECT_NE(symbolizer.problems()[0].find(real_id), std::string::npos);
  }
}

TEST(Symbolizer, LatestModuleRecordCoveringAnAddressWins) {
  Sites s = take_sites();
  format::Module real = module_containing(s.lib);
  format::Module gone = real;
  gone.path = "/gone/libold.so";
  gone.build_id = "abcd";
  // Covers the real module's range and more, on both sides.
  gone.segments = {{real.segments.front().first - 0x10000, real.segments.back().second + 0x10000}};

  format::Capture unloaded_then_loaded;
  unloaded_then_loaded.modules = {gone, real};
  Frame f = Symbolizer(unloaded_then_loaded).frame(s.lib);
  EXPECT_EQ(f.module, real.path);
  EXPECT_EQ(f.function, "symbolizer_fixture::leaky_site(int*)");
  EXPECT_EQ(f.line, s.lib_line);
  // Outside the real module's segments, the older record still describes the memory.
  EXPECT_EQ(Symbolizer(unloaded_then_loaded).frame(real.segments.front().first - 0x100).module, "/gone/libold.so");

  format::Capture loaded_then_replaced;
  loaded_then_replaced.modules = {real, gone};
  Frame g = Symbolizer(loaded_then_replaced).frame(s.lib);
  EXPECT_EQ(g.module, "/gone/libold.so");
  EXPECT_EQ(g.build_id, "abcd");
  EXPECT_EQ(g.function, "");
}

TEST(Symbolizer, PartlyOverlappingRecordsLayerInCaptureOrder) {
  auto module = [](std::string path, std::vector<std::pair<uint64_t, uint64_t>> segments) {
    format::Module m;
    m.path = std::move(path);
    m.segments = std::move(segments);
    return m;
  };
  format::Capture capture;
  capture.modules = {module("/a", {{100, 200}, {300, 400}}), module("/b", {{150, 160}}),
                     module("/c", {{120, 170}, {390, 410}}), module("/d", {{50, 110}})};
  Symbolizer symbolizer(capture);
  // frame() looks up address - 1.
  auto at = [&](uint64_t pc) { return symbolizer.frame(pc + 1).module; };
  EXPECT_EQ(at(49), "");
  EXPECT_EQ(at(50), "/d");
  EXPECT_EQ(at(109), "/d");
  EXPECT_EQ(at(110), "/a");
  EXPECT_EQ(at(119), "/a");
  EXPECT_EQ(at(120), "/c");
  EXPECT_EQ(at(155), "/c");
  EXPECT_EQ(at(169), "/c");
  EXPECT_EQ(at(170), "/a");
  EXPECT_EQ(at(199), "/a");
  EXPECT_EQ(at(200), "");
  EXPECT_EQ(at(300), "/a");
  EXPECT_EQ(at(389), "/a");
  EXPECT_EQ(at(390), "/c");
  EXPECT_EQ(at(409), "/c");
  EXPECT_EQ(at(410), "");
  EXPECT_EQ(symbolizer.problems().size(), 3u);  // /a, /c and /d were needed; none exists
}

// Writes `bytes` to a fresh file under /tmp and returns its path.
std::string temp_file(const std::string &bytes) {
  char path[] = "/tmp/symbolizer_test_XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  close(fd);
  return path;
}

TEST(Symbolizer, GarbageModulesNeverCrash) {
  Sites s = take_sites();
  format::Module real = module_containing(s.lib);
  std::ifstream in(real.path, std::ios::binary);
  std::string elf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(elf.size(), 8192u);
  std::string corrupt = elf;  // header, program headers and build id intact, the rest noise
  std::mt19937_64 rng(42);
  for (size_t i = 4096; i < corrupt.size(); ++i) corrupt[i] = static_cast<char>(rng());

  std::string fifo = "/tmp/symbolizer_test_fifo_" + std::to_string(getpid());
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::vector<std::string> paths = {
      temp_file("not an ELF file at all"),
      temp_file(""),
      temp_file(elf.substr(0, 100)),
      temp_file(elf.substr(0, 5000)),
      temp_file(corrupt),
      "/dev/null",
      "/dev/zero",
      "/",
      fifo,
      std::string("\xff\xfe/\x01odd\n", 8),
      "",
  };
  uint64_t base = 0x100000000000ull;
  format::Capture capture;
  for (size_t i = 0; i < paths.size(); ++i) {
    format::Module m = real;
    m.path = paths[i];
    m.load_bias = base * (i + 1);
    m.segments = {{m.load_bias, m.load_bias + 0x100000}, {m.load_bias + 0x200000, m.load_bias + 0x200000}};
    capture.modules.push_back(m);
  }
  format::Module wraps;
  wraps.path = real.path;
  wraps.build_id = real.build_id;
  wraps.load_bias = ~0ull - 0x1000;
  wraps.segments = {{~0ull - 0x1000, 0x500}, {5, 5}, {9, 3}};
  capture.modules.push_back(wraps);
  std::vector<uint64_t> frames;
  for (size_t i = 0; i < paths.size(); ++i)
    for (uint64_t off : {0ull, 1ull, 0x1234ull, 0xfffffull, 0x100000ull, 0x200000ull, 0x200001ull})
      frames.push_back(base * (i + 1) + off);
  for (uint64_t a : {0ull, 2ull, 6ull, 4ull, ~0ull, ~0ull - 0x800, 0x200ull}) frames.push_back(a);
  capture.stacks[1] = format::Stack{format::StackKind::kNative, frames};

  Symbolizer symbolizer(capture);
  Stack stack = symbolizer.symbolize(1);
  ASSERT_EQ(stack.size(), frames.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    const Frame &inside = stack[i * 7 + 2];
    EXPECT_EQ(inside.module, paths[i]) << i;
    EXPECT_EQ(inside.address, base * (i + 1) + 0x1234);
    EXPECT_EQ(stack[i * 7 + 4].module, paths[i]) << i;  // last byte of the segment
    // A zero-size segment holds nothing.
    EXPECT_EQ(stack[i * 7 + 5].module, "") << i;
    EXPECT_EQ(stack[i * 7 + 6].module, "") << i;
  }
  // Empty, reversed and wrapping segments are ignored.
  for (size_t i = paths.size() * 7; i < frames.size(); ++i) EXPECT_EQ(stack[i].module, "") << i;
  // Only the corrupted copy has the right build id; every other path must have been refused.
  for (size_t i = 0; i < paths.size(); ++i) {
    if (i == 4) continue;
    EXPECT_EQ(stack[i * 7 + 2].function, "") << i;
  }
  EXPECT_GE(symbolizer.problems().size(), paths.size() - 1);
  for (size_t i = 0; i < 5; ++i) unlink(paths[i].c_str());
  unlink(fifo.c_str());
}

TEST(TrimToCaller, DropsLeadingGpuleakAndCudaFrames) {
  auto frame = [](std::string module, std::string function) {
    Frame f;
    f.module = std::move(module);
    f.function = std::move(function);
    return f;
  };
  EXPECT_TRUE(is_gpuleak_or_cuda_frame(frame("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "")));
  EXPECT_TRUE(is_gpuleak_or_cuda_frame(frame("libcuda.so.580.95.05", "")));
  EXPECT_TRUE(is_gpuleak_or_cuda_frame(frame("/opt/x/libcudart.so.13", "")));
  EXPECT_TRUE(is_gpuleak_or_cuda_frame(frame("/opt/x/libcupti.so.2025.1", "")));
  EXPECT_TRUE(is_gpuleak_or_cuda_frame(frame("/build/libgpuleak.so", "")));
  EXPECT_FALSE(is_gpuleak_or_cuda_frame(frame("/opt/x/libcudnn.so.9", "")));
  EXPECT_FALSE(is_gpuleak_or_cuda_frame(frame("/opt/x/libcuda_helper.so", "")));
  EXPECT_FALSE(is_gpuleak_or_cuda_frame(frame("/opt/libcuda.so/libtorch_cuda.so", "")));
  EXPECT_FALSE(is_gpuleak_or_cuda_frame(frame("", "")));
  EXPECT_FALSE(is_gpuleak_or_cuda_frame(frame("/home/u/a.out", "main")));
  // The static runtime lives in the program: recognized by name.
  EXPECT_TRUE(is_gpuleak_or_cuda_frame(frame("/home/u/a.out", "cudaMalloc")));
  EXPECT_TRUE(is_gpuleak_or_cuda_frame(frame("/home/u/a.out", "cudart::cudaApiMalloc(void**, unsigned long)")));
  EXPECT_TRUE(is_gpuleak_or_cuda_frame(frame("/home/u/a.out", "__cudart1234")));
  EXPECT_TRUE(is_gpuleak_or_cuda_frame(frame("/home/u/a.out", "cuMemAlloc_v2")));
  EXPECT_TRUE(
      is_gpuleak_or_cuda_frame(frame("/home/u/a.out", "libcudart_static_4d8b33a106dceb3c07a1c5a1ee1a3e5b5a2b5b80")));
  EXPECT_FALSE(is_gpuleak_or_cuda_frame(frame("/home/u/a.out", "cuda_helper")));
  EXPECT_FALSE(is_gpuleak_or_cuda_frame(frame("/home/u/a.out", "curl_easy_init")));

  Stack stack = {frame("/build/libgpuleak.so", "hook"),       frame("/lib/libcuda.so.1", "cuMemAlloc_v2"),
                 frame("/lib/libcudart.so.13", "cudaMalloc"), frame("/home/u/train", "step()"),
                 frame("/lib/libcudart.so.13", "callback"),   frame("/home/u/train", "main")};
  Stack trimmed = trim_to_caller(stack);
  ASSERT_EQ(trimmed.size(), 3u);
  EXPECT_EQ(trimmed[0].function, "step()");
  EXPECT_EQ(trimmed[1].function, "callback");
  EXPECT_EQ(trimmed[2].function, "main");
  EXPECT_TRUE(trim_to_caller({frame("/lib/libcuda.so.1", "x")}).empty());
  EXPECT_TRUE(trim_to_caller({}).empty());
  EXPECT_EQ(trim_to_caller({frame("/a.out", "f")}).size(), 1u);
}

// CuPy's pool calls gpuleak._cupy's allocator wrapper, which calls the pool: the wrapper's frame
// sits between CuPy's frames, and is never one of the program's (docs/python.md).
TEST(TrimToCaller, DropsGpuleaksOwnPythonFramesWhereverTheySit) {
  auto py = [](std::string file, std::string function, uint32_t line) {
    Frame f;
    f.kind = Frame::Kind::kPython;
    f.file = std::move(file);
    f.function = std::move(function);
    f.line = line;
    return f;
  };
  const std::string pkg = "/opt/gpuleak/lib/python3.12/site-packages/gpuleak/";
  const std::string cupy = "/venv/lib/python3.12/site-packages/cupy/_creation/basic.py";
  Frame ffi;
  ffi.module = "/usr/lib/x86_64-linux-gnu/libffi.so.8";
  ffi.function = "ffi_call";
  Stack stack = {ffi,
                 py(pkg + "_cupy.py", "wrap_pool.<locals>.malloc", 56),
                 py(cupy, "ones", 220),
                 py("/home/u/train.py", "step", 135),
                 py(pkg + "_startup/sitecustomize.py", "_gpuleak_start", 12),
                 py(pkg + "__init__.py", "iterate", 140)};
  Stack trimmed = trim_to_caller(stack);
  ASSERT_EQ(trimmed.size(), 4u);
  EXPECT_EQ(trimmed[0].function, "ffi_call");
  EXPECT_EQ(trimmed[1].function, "ones");
  EXPECT_EQ(trimmed[2].function, "step");
  EXPECT_EQ(trimmed[3].function, "iterate");  // gpuleak.iterate is the user's call, kept
  // A user's own module that happens to be named like one of gpuleak's, outside a gpuleak folder.
  EXPECT_EQ(trim_to_caller({py("/home/u/_cupy.py", "malloc", 3)}).size(), 1u);
}

// 10,000 distinct stacks of depth 32 over real code addresses of every loaded object (the test
// executable and the fixture carry DWARF; system libraries have symbol tables only).
TEST(Symbolizer, TenThousandStacksOfDepth32InSeconds) {
  format::Capture capture;
  capture.modules = loaded_modules();
  std::vector<std::pair<uint64_t, uint64_t>> code;
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) {
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr) &ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
            static_cast<std::vector<std::pair<uint64_t, uint64_t>> *>(data)->emplace_back(info->dlpi_addr + ph.p_vaddr,
                                                                                          ph.p_memsz);
        }
        return 0;
      },
      &code);
  ASSERT_FALSE(code.empty());
  std::mt19937_64 rng(7);
  constexpr int kStacks = 10000, kDepth = 32;
  for (uint32_t id = 1; id <= kStacks; ++id) {
    format::Stack st;
    for (int d = 0; d < kDepth; ++d) {
      const auto &[start, size] = code[rng() % code.size()];
      st.frames.push_back(start + 1 + rng() % size);
    }
    capture.stacks[id] = std::move(st);
  }
  auto t0 = std::chrono::steady_clock::now();
  Symbolizer symbolizer(capture);
  size_t named = 0, lines = 0;
  for (uint32_t id = 1; id <= kStacks; ++id)
    for (const Frame &f : symbolizer.symbolize(id)) {
      named += !f.function.empty();
      lines += f.line > 0;
    }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("symbolized %d stacks x %d frames (%zu modules): %.2f s, %zu named, %zu with line\n", kStacks, kDepth,
              capture.modules.size(), seconds, named, lines);
  EXPECT_GT(named, kStacks * kDepth / 2u);
  EXPECT_GT(lines, 0u);
  EXPECT_LT(seconds, 30.0);
}

}  // namespace
}  // namespace gpuleak::output
