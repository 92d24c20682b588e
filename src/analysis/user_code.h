// Whose code a frame is: the user's own, or the interpreter's, the standard library's, an installed
// package's, a framework's or CUDA's. The one classifier of gpuleak: the analysis (the user's
// Python loops, advice only where the user can act) and the outputs (the headline of every
// finding: src/output/sites.h) both ask here, under one setting built from the capture and
// --user-code / GPULEAK_USER_CODE (AnalysisOptions::user_code, Analysis::user_code).
//
// Python files, first rule that applies:
//   1. under a --user-code / GPULEAK_USER_CODE root: the user's;
//   2. under a site-packages or dist-packages folder (venvs, conda, Debian's python3-* packages),
//      or gpuleak's own hooks (gpuleak/_cupy.py...): not the user's;
//   3. a framework's package folder (torch/, jax/, jaxlib/, cupy/, triton/...) wherever it is (an
//      editable install of torch is still torch's code), judged below the program's directory
//      when the file is under it (a project in ~/torch/ keeps its own train.py): not the user's;
//   4. under the program's own directory (the script's folder, as in Scalene): the user's;
//   5. the standard library (lib/pythonX.Y/, pythonXY.zip), and the pseudo-files in <...>: the
//      interpreter's frozen modules ("<frozen runpy>") and code made with exec ("<string>": the
//      methods dataclasses and namedtuple generate, `python -c`): not the user's (the observer,
//      tools/python/gpuleak/_observe.py, draws the same line);
//   6. anything else (code on PYTHONPATH, a zipapp, an editable install's source tree): the user's.
// Native frames, first rule that applies:
//   1. no module (an address outside every loaded object): not the user's;
//   2. a module under a root: the user's;
//   3. the CUDA runtime linked statically into the executable (cudart::, __cudart, the API's entry
//      points cudaMalloc, cuMemAlloc_v2), when the function's name is known: not the user's;
//   4. gpuleak, CUDA (driver, runtime, CUPTI, cuBLAS, cuDNN, NCCL...), framework libraries
//      (libtorch*, libc10*, libcupy*, jaxlib, XLA), the interpreter and its extension modules, the
//      C/C++ runtime, anything under site-packages/dist-packages or a framework's folder: not the
//      user's;
//   5. in a Python program (the site has Python frames): the user's only under the program's
//      directory (their own extension module); a native library elsewhere (OpenBLAS, a system
//      library) is a library the user's Python code called;
//   6. anything else (the executable, the program's own libraries): the user's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/site.h"
#include "format/capture_reader.h"

namespace gpuleak::analysis {

struct UserCode {
  // The program's own directory, absolute, without a trailing slash; "" when unknown.
  std::string program_dir;
  // Extra folders (or files) that count as the user's, whatever the rules above say.
  std::vector<std::string> roots;
};

// The setting for a capture: the program's directory from the run record (the script given to
// the interpreter, else the executable), and `roots` as given.
UserCode user_code_for(const format::Capture &capture, std::vector<std::string> roots);

// GPULEAK_USER_CODE's value: colon-separated folders, empty parts ignored.
std::vector<std::string> split_user_code(const std::string &value);

// The rules above. `function` is the native frame's symbol when known ("" when not: the analysis
// judges raw addresses, which only the outputs symbolize). `in_python`: the frame belongs to a
// site that has Python frames (rule 5).
bool is_user_python_file(const std::string &file, const UserCode &user);
bool is_user_native(const std::string &module, const std::string &function, bool in_python, const UserCode &user);

// The same rules over a capture's raw stacks, for the analysis: file string ids and return
// addresses placed in the loaded modules, each decided once.
class CodeOwner {
 public:
  CodeOwner(const format::Capture &capture, UserCode user);
  enum class Answer : uint8_t { kUser, kLibrary, kUnknown };  // kUnknown: the site has no frames
  // Whether any of the site's frames (Python, then native) is the user's.
  Answer site(const Site &site) const;
  bool python_file(uint32_t file_id) const;
  // false outside every known module.
  bool native_address(uint64_t pc, bool in_python) const;
  const UserCode &user() const { return user_; }

 private:
  struct Segment {
    uint64_t lo, hi;
    bool user_native, user_in_python;
  };
  const format::Capture &capture_;
  UserCode user_;
  std::vector<Segment> segments_;  // every module's PT_LOAD ranges, by start
  mutable std::unordered_map<uint32_t, bool> files_;
};

}  // namespace gpuleak::analysis
