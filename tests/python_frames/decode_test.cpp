// The offline half of Python call sites: a Python StackRecord (kind 1) decoded into frames by the
// symbolizer, trim_to_caller leaving Python frames alone, and the report's stack merge (native
// frames down to the code that called CUDA, then the Python frames, interpreter frames dropped;
// the [autograd backward] marker on an autograd worker thread without Python frames).
#include <gtest/gtest.h>

#include "analysis/analysis.h"
#include "output/report_json.h"
#include "output/symbolizer.h"

namespace gpuleak::output {
namespace {

uint64_t pair(uint32_t file, uint32_t function) { return uint64_t{file} << 32 | function; }

TEST(PythonDecode, SymbolizerTurnsPairsIntoPythonFrames) {
  format::Capture capture;
  capture.strings = {{1, "train.py"}, {2, "train_step"}, {3, "model.py"}, {4, "Model.forward"}};
  capture.stacks[7] = format::Stack{format::StackKind::kPython, {pair(3, 4), 17, pair(1, 2), 42}};
  Symbolizer symbolizer(capture);
  Stack s = symbolizer.symbolize(7);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].kind, Frame::Kind::kPython);
  EXPECT_EQ(s[0].function, "Model.forward");
  EXPECT_EQ(s[0].file, "model.py");
  EXPECT_EQ(s[0].line, 17);
  EXPECT_EQ(s[0].module, "");
  EXPECT_EQ(s[0].address, 0u);
  EXPECT_EQ(s[1].function, "train_step");
  EXPECT_EQ(s[1].file, "train.py");
  EXPECT_EQ(s[1].line, 42);
}

TEST(PythonDecode, MissingStringsAndOddWordsAreHarmless) {
  format::Capture capture;
  capture.strings = {{1, "a.py"}};
  // String 9 was never written (capture cut short); a huge line is junk; a lone last word is
  // half a pair.
  capture.stacks[3] = format::Stack{format::StackKind::kPython, {pair(1, 9), 0, pair(9, 9), ~0ull, 5}};
  Symbolizer symbolizer(capture);
  Stack s = symbolizer.symbolize(3);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].file, "a.py");
  EXPECT_EQ(s[0].function, "");
  EXPECT_EQ(s[0].line, 0);
  EXPECT_EQ(s[1].file, "");
  EXPECT_EQ(s[1].line, 0);
  EXPECT_TRUE(symbolizer.symbolize(12345).empty());
}

TEST(PythonDecode, TrimToCallerKeepsPythonFrames) {
  Frame py;
  py.kind = Frame::Kind::kPython;
  py.function = "cudaMallocWrapper";  // named like CUDA, but Python code the user wrote
  py.file = "alloc.py";
  Stack s = trim_to_caller({py});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].function, "cudaMallocWrapper");
}

Frame native(const char *function, const char *module) {
  Frame f;
  f.function = function;
  f.module = module;
  f.address = 0x1000;
  return f;
}

Frame python(const char *function, const char *file, int line) {
  Frame f;
  f.kind = Frame::Kind::kPython;
  f.function = function;
  f.file = file;
  f.line = line;
  return f;
}

std::vector<std::string> leak_frames(const Stack &native_stack, const Stack &python_stack) {
  format::Capture capture;
  analysis::Analysis a;
  analysis::Leak leak;
  leak.site = analysis::Site{1, python_stack.empty() ? 0u : 2u};
  a.leaks.push_back(leak);
  auto symbolize = [&](uint32_t id) { return id == 1 ? native_stack : id == 2 ? python_stack : Stack{}; };
  nlohmann::json r = make_report(capture, a, symbolize, ReportContext{});
  std::vector<std::string> out;
  for (const auto &f : r["leaks"][0]["stack"]) {
    std::string s = f["kind"].get<std::string>() + " " + f["function"].get<std::string>();
    if (f["line"].is_number()) s += ":" + std::to_string(f["line"].get<int>());
    out.push_back(s);
  }
  return out;
}

TEST(PythonDecode, ReportPutsPythonFramesRightAfterTheCudaCallingFrames) {
  Stack n = {native("at::native::empty_cuda", "/site-packages/torch/lib/libtorch_cuda.so"),
             native("torch::autograd::THPVariable_zeros", "/site-packages/torch/lib/libtorch_python.so"),
             native("cfunction_call", "/usr/lib/libpython3.12.so.1.0"),
             native("_PyEval_EvalFrameDefault", "/usr/lib/libpython3.12.so.1.0"),
             native("main", "/usr/bin/python3.12")};
  Stack p = {python("train_step", "train.py", 42), python("<module>", "train.py", 50)};
  EXPECT_EQ(leak_frames(n, p),
            (std::vector<std::string>{"native at::native::empty_cuda", "native torch::autograd::THPVariable_zeros",
                                      "python train_step:42", "python <module>:50"}));
}

TEST(PythonDecode, StaticInterpreterAndStdlibExtensionsCountAsInterpreter) {
  Stack n = {native("ffi_call", "/usr/lib/x86_64-linux-gnu/libffi.so.8"),
             native("_ctypes_callproc", "/usr/lib/python3.12/lib-dynload/_ctypes.cpython-312-x86_64-linux-gnu.so"),
             native("_PyObject_MakeTpCall", "/usr/bin/python3.12")};
  Stack p = {python("forward", "model.py", 17)};
  EXPECT_EQ(leak_frames(n, p), (std::vector<std::string>{"native ffi_call", "python forward:17"}));
}

TEST(PythonDecode, AutogradWorkerWithoutPythonFramesGetsTheMarker) {
  Stack n = {native("at::native::empty_cuda", "libtorch_cuda.so"),
             native("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)",
                    "libtorch_cpu.so"),
             native("execute_native_thread_routine", "libstdc++.so.6")};
  EXPECT_EQ(leak_frames(n, {}),
            (std::vector<std::string>{
                "native at::native::empty_cuda",
                "native torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)",
                "python [autograd backward]", "native execute_native_thread_routine"}));
}

TEST(PythonDecode, OtherThreadsWithoutPythonFramesStayNative) {
  Stack n = {native("worker", "libapp.so"), native("start_thread", "libc.so.6")};
  EXPECT_EQ(leak_frames(n, {}), (std::vector<std::string>{"native worker", "native start_thread"}));
}

}  // namespace
}  // namespace gpuleak::output
