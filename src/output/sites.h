// Call sites, resolved once for every output: the frames a site shows, its stable site_id, its
// headline (the frame a person should be sent to) and its short label. The report, the trace,
// the viewer, the exports and, through the report, the gate all name a site through this class,
// so a site has one id and one headline everywhere.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/site.h"
#include "analysis/user_code.h"
#include "format/capture_reader.h"
#include "output/frame.h"

namespace gpuleak::output {

// Turns a capture stack id (native or Python) into frames, innermost first; an id it does not
// know gives an empty Stack. Called at most once per id.
using SymbolizeFn = std::function<Stack(uint32_t stack_id)>;

struct SiteOptions {
  // Path of the profiled executable (the capture's first module record): its frames are hashed
  // without its name, so that a renamed binary keeps its site ids. "" when unknown.
  std::string executable;
  // Whose code a frame is: the analysis's setting (Analysis::user_code), so that a headline and
  // the analysis draw one line.
  analysis::UserCode user_code;
};

// The options for a capture: its executable and `user_code` (default: user_code_for(capture, {})).
SiteOptions site_options(const format::Capture &capture, std::optional<analysis::UserCode> user_code = std::nullopt);

// The frame a person should be sent to for a site (docs/report-format.md "headline").
struct Headline {
  bool user = false;  // `frame` is the user's own code (else the best frame there was)
  Frame frame;        // the innermost frame of the user's code; unset (empty) for an unknown site
  // The innermost frame of the same kind when it is not `frame`: the library code the user's
  // line called ("Linear.forward"), so a person sees both.
  std::optional<Frame> via;
  // The user's frame that called `frame`'s function, when `frame` is the user's and one is
  // further out (the next user frame of another function): a helper's line ("train.py:6 in
  // alloc") does not say which of its calls keeps the memory; its caller does.
  std::optional<Frame> caller;
  // "train.py:41 in train_step (via Linear.forward, torch/nn/modules/linear.py:134)";
  // "an unknown site" when the site has no frames.
  std::string text;
  // The same without the via part: "train.py:41 in train_step".
  std::string where;
  // The caller as `where` shows a frame ("train.py:40 in main"); "" without a caller.
  std::string caller_where;
  // Sites with the same key differ only below the user's frame (and share its caller): one
  // finding per user line.
  std::string key;
};

struct ResolvedSite {
  Stack frames;  // native frames (interpreter and process start dropped), then Python frames
  std::string id;
  Headline headline;
  std::string label;  // "train_step (train.py:41)": the headline frame in a few words
};

class Sites {
 public:
  explicit Sites(SymbolizeFn symbolize, SiteOptions options = {});

  const ResolvedSite &resolve(const analysis::Site &site) { return resolve(site.stack_id, site.py_stack_id); }
  const ResolvedSite &resolve(uint32_t stack_id, uint32_t py_stack_id);
  const SiteOptions &options() const { return options_; }

 private:
  const Stack &stack(uint32_t id);

  SymbolizeFn symbolize_;
  SiteOptions options_;
  std::unordered_map<uint32_t, Stack> stacks_;
  std::unordered_map<uint64_t, ResolvedSite> sites_;
};

// A site's frames from its native and Python stacks, innermost first: the native frames down to
// the code that called CUDA, then the thread's Python frames. With Python frames, the native
// frames from the first interpreter frame outwards are dropped (the Python frames say where that
// code was); without, the frames outward of main() (_start, __libc_start_main) are, and a PyTorch
// autograd worker thread gets an "[autograd backward]" marker frame.
Stack site_frames(const Stack &native, const Stack &python);

// A call site's stable id: FNV-1a 64 over each frame's kind, module basename, function, file
// (short_path: relative to site-packages or the standard library, else its basename) and line
// (never the address; a native frame without a line adds its code_offset: frame.h), as 16
// lowercase hex digits. Frames of `executable` are hashed without a
// module name. The same code gets the same id across runs, machines, checkouts, venvs, address
// layouts and executable names.
std::string site_id(const Stack &frames, const std::string &executable = {});

// A demangled C++ name as people read it in a headline: without its parameter list, trailing
// qualifiers and return type ("at::detail::empty_generic(c10::ArrayRef<long>, ...)" ->
// "at::detail::empty_generic"). Template arguments, `operator()`, `operator new` and
// "(anonymous namespace)" stay. Any other text is returned as it is.
std::string short_function(const std::string &name);

// The headline of a site's frames (site_frames order) under `user`.
Headline headline_of(const Stack &frames, const analysis::UserCode &user);

// Whether a frame is the user's (analysis/user_code.h's rules); `in_python`: its site has Python
// frames.
bool is_user_frame(const Frame &frame, bool in_python, const analysis::UserCode &user);

// A native frame a person would not look at even without a user frame: gpuleak's own and CUDA's.
bool is_cuda_or_gpuleak_module(const std::string &module_path);

// The path a person recognises: relative to site-packages/dist-packages for an installed package
// ("torch/nn/modules/linear.py"), to lib/pythonX.Y for the standard library, else the basename.
std::string short_path(const std::string &file);

// Which of a site's frames (site_frames order) are the user's own code, by the rules headline_of
// picks its frame with (the viewer's "hide library frames" keeps these).
std::vector<bool> user_frames(const Stack &frames, const analysis::UserCode &user);

// "function (file:line)" with the file's basename; without a line, "function (module)"; without
// a symbol, the address.
std::string frame_label(const Frame &frame);

}  // namespace gpuleak::output
