// Whose code a frame is: the user's own, or the interpreter's, the standard library's, an
// installed package's, a framework's or CUDA's. The headline of every finding (sites.h) is the
// innermost frame of the user's own code, so this is the one place that draws the line.
//
// Python files, first rule that applies:
//   1. under a --user-code / GPULEAK_USER_CODE root: the user's;
//   2. under a site-packages or dist-packages folder (venvs, conda, Debian's python3-* packages):
//      a library's;
//   3. under the program's own directory (the script's folder, as in Scalene): the user's;
//   4. the standard library (a "<frozen ...>" module, lib/pythonX.Y/, pythonXY.zip): not the user's;
//   5. anything else (an editable install's source tree, a zipapp, code on PYTHONPATH): the user's.
// Native frames: gpuleak, CUDA (driver, runtime, CUPTI, cuBLAS, cuDNN, NCCL...), framework
// libraries (libtorch*, libc10*, libcupy*, jaxlib, XLA), the interpreter, and the C/C++ runtime
// (libc, libstdc++, libgcc_s, ld.so, libffi) are not the user's, nor is anything installed under
// site-packages/dist-packages or lib-dynload, nor the CUDA runtime linked statically into the
// executable (cudart::, __cudart functions and the API's entry points: cudaMalloc, cuMemAlloc_v2). Everything else (the
// executable, the program's own libraries) is the user's.
#pragma once

#include <string>
#include <vector>

#include "format/capture_reader.h"
#include "output/frame.h"

namespace gpuleak::output {

struct UserCode {
  // The program's own directory, absolute, without a trailing slash; "" when unknown.
  std::string program_dir;
  // Extra folders (or files) that count as the user's, whatever the rules above say.
  std::vector<std::string> roots;
};

// The user-code setting for a capture: the program's directory from the run record (the script
// given to the interpreter, else the executable), and `roots` as given.
UserCode user_code_for(const format::Capture &capture, std::vector<std::string> roots);

// GPULEAK_USER_CODE's value: colon-separated folders, empty parts ignored.
std::vector<std::string> split_user_code(const std::string &value);

// The rules above, for a Python source file and for a native frame.
bool is_user_python_file(const std::string &file, const UserCode &user);
bool is_user_native_frame(const Frame &frame, const UserCode &user);

// A native frame a person would not look at even without a user frame: gpuleak's own and CUDA's.
bool is_cuda_or_gpuleak_module(const std::string &module_path);

// The path a person recognises: relative to site-packages/dist-packages for an installed package
// ("torch/nn/modules/linear.py"), to lib/pythonX.Y for the standard library, else the basename.
std::string short_path(const std::string &file);

}  // namespace gpuleak::output
