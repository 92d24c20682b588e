#include "output/sites.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "text/code_owner.h"
#include "text/paths.h"

namespace gpuleak::output {

using text::basename_of;
using text::hex;

std::string short_function(const std::string &name) {
  std::string s = name;
  // Trailing qualifiers after the parameter list: " const", " volatile", "&", "&&".
  for (bool again = true; again;) {
    again = false;
    for (const char *q : {" const", " volatile", " &&", " &", "&&", "&"}) {
      const std::string tail = q;
      if (s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0 &&
          s[s.size() - tail.size() - 1] == ')') {
        s.erase(s.size() - tail.size());
        again = true;
      }
    }
  }
  // The parameter list: the balanced (...) at the end, when something precedes it.
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    size_t open = std::string::npos;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++depth;
      if (s[i] == '(' && --depth == 0) {
        open = i;
        break;
      }
    }
    if (open != std::string::npos && open > 0) s.erase(open);
  }
  if (s.empty()) return name;
  // A template function's return type: the text before the last space outside <>, () and [].
  if (s.find("operator") == std::string::npos) {
    int depth = 0;
    size_t cut = std::string::npos;
    for (size_t i = 0; i < s.size(); ++i) {
      const char c = s[i];
      if (c == '<' || c == '(' || c == '[') ++depth;
      if (c == '>' || c == ')' || c == ']') --depth;
      if (c == ' ' && depth == 0) cut = i;
    }
    if (cut != std::string::npos && cut + 1 < s.size()) s.erase(0, cut + 1);
  }
  return s;
}

namespace {

constexpr const char *kAutogradMarker = "[autograd backward]";

// CPython itself: libpython, a statically linked `python3.x` executable, the standard library's
// extension modules (lib-dynload: _ctypes, _asyncio...), or the eval loop found by name.
bool is_interpreter_frame(const Frame &f) {
  if (f.kind != Frame::Kind::kNative) return false;
  std::string base = basename_of(f.module);
  if (base.compare(0, 9, "libpython") == 0) return true;
  if (base.compare(0, 6, "python") == 0 && base.find(".so") == std::string::npos) return true;
  return f.module.find("/lib-dynload/") != std::string::npos || f.function.compare(0, 17, "_PyEval_EvalFrame") == 0;
}

// The C library's process start, outward of main(): it names the executable (`_start` has no
// line, so it is shown by module) and says nothing about the program.
bool is_process_start(const Frame &f) {
  return f.function == "_start" || f.function.compare(0, 17, "__libc_start_main") == 0 ||
         f.function == "__libc_start_call_main";
}

bool has_file(const Frame &f) { return !f.file.empty(); }
bool is_python_source(const Frame &f) { return f.kind == Frame::Kind::kPython && has_file(f); }

// "train.py:41 in train_step"; without a file "train_step (libfoo.so)"; without a symbol the
// address.
// The function as a headline's text shows it: a native frame's C++ name shortened.
std::string shown_function(const Frame &f) {
  return f.kind == Frame::Kind::kNative ? short_function(f.function) : f.function;
}

std::string where(const Frame &f) {
  if (has_file(f)) {
    std::string s = short_path(f.file);
    if (f.line > 0) s += ":" + std::to_string(f.line);
    return f.function.empty() ? s : s + " in " + shown_function(f);
  }
  std::string name = f.function.empty() ? (f.address ? hex(f.address) : std::string("?")) : shown_function(f);
  return f.module.empty() ? name : name + " (" + basename_of(f.module) + ")";
}

// "Linear.forward, torch/nn/modules/linear.py:134"; "cublasLtMatmul, libcublasLt.so.12".
std::string via_text(const Frame &f) {
  std::string name = f.function.empty() ? (f.address ? hex(f.address) : std::string("?")) : shown_function(f);
  if (has_file(f)) {
    std::string s = short_path(f.file);
    if (f.line > 0) s += ":" + std::to_string(f.line);
    return name + ", " + s;
  }
  return f.module.empty() ? name : name + ", " + basename_of(f.module);
}

std::string frame_key(const Frame &f) {
  return std::string(f.kind == Frame::Kind::kNative ? "n" : "p") + '\x1f' + basename_of(f.module) + '\x1f' +
         f.function + '\x1f' + f.file + '\x1f' + std::to_string(f.line);
}

}  // namespace

SiteOptions site_options(const format::Capture &capture, std::optional<analysis::UserCode> user_code) {
  SiteOptions o;
  if (!capture.modules.empty()) o.executable = capture.modules.front().path;
  o.user_code = user_code ? std::move(*user_code) : analysis::user_code_for(capture, {});
  return o;
}

bool is_user_frame(const Frame &f, bool in_python, const analysis::UserCode &user) {
  if (f.kind == Frame::Kind::kPython) return has_file(f) && analysis::is_user_python_file(f.file, user);
  return analysis::is_user_native(f.module, f.function, in_python, user);
}

bool is_cuda_or_gpuleak_module(const std::string &module_path) {
  std::string base = basename_of(module_path);
  for (std::string_view p : {"libgpuleak", "libcuda.so", "libcudart", "libcupti", "libnvidia-"})
    if (base.compare(0, p.size(), p) == 0) return true;
  return false;
}

std::string short_path(const std::string &file) {
  for (const char *marker : {"/site-packages/", "/dist-packages/"}) {
    size_t at = file.rfind(marker);
    if (at != std::string::npos) return file.substr(at + std::string_view(marker).size());
  }
  size_t stdlib = text::stdlib_prefix_end(file);
  if (stdlib != std::string::npos && stdlib < file.size()) return file.substr(stdlib);
  return basename_of(file);
}

Stack site_frames(const Stack &native, const Stack &python) {
  Stack s;
  if (!python.empty()) {
    s.assign(native.begin(), std::find_if(native.begin(), native.end(), is_interpreter_frame));
    s.insert(s.end(), python.begin(), python.end());
    return s;
  }
  s = native;
  auto main_frame = std::find_if(s.begin(), s.end(), [](const Frame &f) { return f.function == "main"; });
  if (main_frame != s.end()) s.erase(main_frame + 1, s.end());
  while (!s.empty() && is_process_start(s.back())) s.pop_back();
  auto worker = std::find_if(s.begin(), s.end(), [](const Frame &f) {
    return f.kind == Frame::Kind::kNative &&
           f.function.find("torch::autograd::Engine::thread_main") != std::string::npos;
  });
  if (worker != s.end()) {
    Frame marker;
    marker.kind = Frame::Kind::kPython;
    marker.function = kAutogradMarker;
    s.insert(worker + 1, std::move(marker));
  }
  return s;
}

std::string site_id(const Stack &frames, const std::string &executable) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](const std::string &s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 0x100000001b3ull;
    }
    h ^= 0x1f;  // field separator, so that ("ab","c") and ("a","bc") differ
    h *= 0x100000001b3ull;
  };
  for (const Frame &f : frames) {
    mix(f.kind == Frame::Kind::kNative ? "n" : "p");
    mix(!executable.empty() && f.module == executable ? std::string() : basename_of(f.module));
    mix(f.function);
    mix(short_path(f.file));  // not where the checkout or the venv happens to live
    mix(std::to_string(f.line));
    // No line: the place in the function (or module) tells two calls apart; a frame with a line
    // hashes as it always has.
    if (f.kind == Frame::Kind::kNative && f.line <= 0 && f.code_offset) mix(hex(f.code_offset));
  }
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, h);
  return buf;
}

std::vector<bool> user_frames(const Stack &frames, const analysis::UserCode &user) {
  const bool python = std::any_of(frames.begin(), frames.end(), is_python_source);
  std::vector<bool> out(frames.size());
  for (size_t i = 0; i < frames.size(); ++i) out[i] = is_user_frame(frames[i], python, user);
  return out;
}

Headline headline_of(const Stack &frames, const analysis::UserCode &user) {
  Headline h;
  if (frames.empty()) {
    h.where = h.text = "an unknown site";
    return h;
  }
  const bool python = std::any_of(frames.begin(), frames.end(), is_python_source);
  auto is_user = [&](const Frame &f) { return is_user_frame(f, python, user); };
  auto pick = std::find_if(frames.begin(), frames.end(), is_user);
  h.user = pick != frames.end();
  if (!h.user) {  // nothing of the user's: the innermost Python line, else the program's caller of CUDA
    auto named_native = [](const Frame &f) {
      return f.kind == Frame::Kind::kNative && !is_cuda_or_gpuleak_module(f.module) &&
             (!f.function.empty() || has_file(f));
    };
    // Past the caching allocator's own frames, to what asked it for memory: the op or library
    // that made the tensor.
    auto past_allocator = [&](const Frame &f) {
      return named_native(f) && !text::is_allocator_module_name(basename_of(f.module));
    };
    pick = python ? std::find_if(frames.begin(), frames.end(), is_python_source)
                  : std::find_if(frames.begin(), frames.end(), past_allocator);
    if (!python && pick == frames.end()) pick = std::find_if(frames.begin(), frames.end(), named_native);
    if (pick == frames.end()) pick = frames.begin();
  }
  h.frame = *pick;
  // What the user's line called: the innermost frame of the same kind, when it is another one;
  // never the caching allocator's own frames (they say only that memory was handed out), nor a
  // frame without a name (an address says nothing the module's name does not).
  auto named_not_allocator = [](const Frame &f) {
    return (!f.function.empty() || has_file(f)) && !text::is_allocator_module_name(basename_of(f.module));
  };
  auto innermost = pick->kind == Frame::Kind::kPython ? std::find_if(frames.begin(), frames.end(), is_python_source)
                                                      : std::find_if(frames.begin(), pick, named_not_allocator);
  if (innermost != frames.end() && innermost != pick) h.via = *innermost;
  h.where = h.text = where(h.frame);
  if (h.via) h.text += " (via " + via_text(*h.via) + ")";
  h.key = frame_key(h.frame);
  if (h.user) {
    // The next user frame outward in another function (recursion is one function); only a frame
    // with a place to go to (a file, or a name) says more than the headline.
    auto same_function = [&](const Frame &f) { return f.function == pick->function && f.file == pick->file; };
    auto caller = std::find_if(pick + 1, frames.end(), [&](const Frame &f) {
      return is_user(f) && !same_function(f) && (has_file(f) || !f.function.empty());
    });
    if (caller != frames.end()) {
      h.caller = *caller;
      h.caller_where = where(*caller);
      h.key += '\x1e' + frame_key(*caller);
    }
  }
  return h;
}

std::string frame_label(const Frame &f) {
  std::string name = f.function.empty() ? (f.address ? hex(f.address) : std::string("?")) : f.function;
  if (!f.file.empty()) {
    name += " (" + basename_of(f.file);
    if (f.line > 0) name += ":" + std::to_string(f.line);
    return name + ")";
  }
  if (!f.module.empty()) return name + " (" + basename_of(f.module) + ")";
  return name;
}

Sites::Sites(SymbolizeFn symbolize, SiteOptions options)
    : symbolize_(std::move(symbolize)), options_(std::move(options)) {}

const Stack &Sites::stack(uint32_t id) {
  auto it = stacks_.find(id);
  if (it == stacks_.end()) it = stacks_.emplace(id, id && symbolize_ ? symbolize_(id) : Stack{}).first;
  return it->second;
}

const ResolvedSite &Sites::resolve(uint32_t stack_id, uint32_t py_stack_id) {
  const uint64_t key = static_cast<uint64_t>(stack_id) << 32 | py_stack_id;
  auto it = sites_.find(key);
  if (it != sites_.end()) return it->second;
  ResolvedSite r;
  r.frames = site_frames(stack(stack_id), stack(py_stack_id));
  r.id = site_id(r.frames, options_.executable);
  r.headline = headline_of(r.frames, options_.user_code);
  r.label = r.frames.empty() ? "unknown site" : frame_label(r.headline.frame);
  return sites_.emplace(key, std::move(r)).first->second;
}

}  // namespace gpuleak::output
