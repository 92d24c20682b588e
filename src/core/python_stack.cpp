#include "core/python_stack.h"
#include "core/python_observer.h"

#include <dlfcn.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/module_map.h"
#include "core/python_layouts.h"
#include "core/recorder_state.h"
#include "core/tls.h"
#include "log/log.h"
#include "text/paths.h"

namespace gpuleak::core {

namespace python_detail {
std::atomic<int> g_runtime_state{0};
GPULEAK_SHARED_TLS uint64_t t_absent_calls = 0;
}  // namespace python_detail

namespace {

constexpr unsigned kMaxDepth = 256;
constexpr size_t kMaxText = 4096;              // String records hold at most this many bytes
constexpr int64_t kMaxLineTable = 1 << 20;     // a bigger co_linetable is not a real one
constexpr size_t kMaxCodes = 1 << 16;          // cached code objects before the cache starts over
constexpr size_t kMaxWalksPerShard = 1 << 16;  // cached raw walks per shard, likewise
// Prepended to a Python stack when it is interned beside native stacks (one id space for both):
// a non-canonical address, so no native stack can equal it.
constexpr uint64_t kPythonTag = 0xf1f1000000000001ull;

// ---- The interpreter, found once per process -------------------------------------------------

enum RuntimeState : int { kUnresolved, kResolving, kReady, kAbsent, kUnsupported, kOff };
static_assert(kAbsent == python_detail::kAbsent && kUnsupported == python_detail::kUnsupported &&
              kOff == python_detail::kOff);

struct Runtime {
  py::Layout layout{};
  void *(*this_thread_state)() = nullptr;                    // PyGILState_GetThisThreadState
  int (*is_initialized)() = nullptr;                         // Py_IsInitialized
  int (*is_finalizing)() = nullptr;                          // Py_IsFinalizing (3.13) / _Py_IsFinalizing
  uint64_t code_type = 0, unicode_type = 0, bytes_type = 0;  // &PyCode_Type, ...
  uintptr_t text_begin = 0, text_end = 0;  // the interpreter's code (libpython or python3.x), or empty
};

// Process-wide and kept across fork (the child runs the same interpreter). Written only by the
// one thread that wins the kUnresolved -> kResolving exchange, read after kReady is published.
Runtime g_runtime;
std::atomic<int> &g_state = python_detail::g_runtime_state;
std::atomic<bool> g_layout_confirmed{false};  // a walk has once gone through cleanly
unsigned g_depth = 64;
bool g_force_unsupported = false;
bool g_force_bad_layout = false;  // test hook: read code objects at the wrong offset

void *symbol(const char *name) { return dlsym(RTLD_DEFAULT, name); }

int unsupported(const char *version, const char *why) {
  GPULEAK_LOG_WARN(
      "Python %s: %s; allocations keep native stacks only (Python call sites need CPython 3.10-3.13, x86-64, "
      "GIL build)",
      version, why);
  return kUnsupported;
}

int resolve_runtime(Runtime *rt) {
  auto is_initialized = reinterpret_cast<int (*)()>(symbol("Py_IsInitialized"));
  auto this_thread = reinterpret_cast<void *(*)()>(symbol("PyGILState_GetThisThreadState"));
  if (!is_initialized || !this_thread) return kAbsent;  // no Python in this process (yet)

  // Py_Version (3.11+) is PY_VERSION_HEX; 3.10 only has the static string of Py_GetVersion().
  unsigned major = 0, minor = 0;
  if (auto *hex = static_cast<const unsigned long *>(symbol("Py_Version"))) {
    major = (*hex >> 24) & 0xff;
    minor = (*hex >> 16) & 0xff;
  } else if (auto get = reinterpret_cast<const char *(*)()>(symbol("Py_GetVersion"))) {
    if (std::sscanf(get(), "%u.%u", &major, &minor) != 2) major = minor = 0;
  }
  char version[32];
  std::snprintf(version, sizeof version, "%u.%u", major, minor);
  if (g_force_unsupported) return unsupported(version, "treated as unsupported (GPULEAK_PY_FORCE_UNSUPPORTED)");
#if !defined(__x86_64__)
  return unsupported(version, "this architecture is not supported");
#endif
  if (major != 3) return unsupported(version, "not a supported version");

  if (minor == 13) {
    auto *offsets = static_cast<const py::DebugOffsets313 *>(symbol("_PyRuntime"));
    if (!offsets) return unsupported(version, "_PyRuntime not found");
    if (!py::layout_from_debug_offsets(*offsets, &rt->layout))
      return unsupported(version, "its debug offsets do not describe a GIL build of 3.13");
  } else if (const py::Layout *known = py::layout_for_minor(minor)) {
    // A Py_TRACE_REFS build puts two more pointers in front of every object.
    if (symbol("_Py_PrintReferences")) return unsupported(version, "a Py_TRACE_REFS build is not supported");
    rt->layout = *known;
  } else {
    return unsupported(version, "not a supported version");
  }

  rt->code_type = reinterpret_cast<uint64_t>(symbol("PyCode_Type"));
  rt->unicode_type = reinterpret_cast<uint64_t>(symbol("PyUnicode_Type"));
  rt->bytes_type = reinterpret_cast<uint64_t>(symbol("PyBytes_Type"));
  rt->is_finalizing = reinterpret_cast<int (*)()>(symbol(minor >= 13 ? "Py_IsFinalizing" : "_Py_IsFinalizing"));
  if (!rt->code_type || !rt->unicode_type || !rt->bytes_type || !rt->is_finalizing)
    return unsupported(version, "an expected CPython symbol is missing");
  rt->is_initialized = is_initialized;
  rt->this_thread_state = this_thread;
  if (g_force_bad_layout) rt->layout.frame_code += 8;
  // The interpreter's own machine code, where native stacks stop being worth keeping once the
  // Python frames are known. Only a libpython or an executable named python*: a program that
  // embeds Python statically has its own frames in that range too.
  Dl_info where{};
  if (dladdr(reinterpret_cast<void *>(is_initialized), &where) && where.dli_fname) {
    const std::string_view base = text::basename_view(where.dli_fname);
    if (base.substr(0, 9) == "libpython" || base.substr(0, 6) == "python") {
      auto range = ModuleMap::range_of(reinterpret_cast<void *>(is_initialized));
      rt->text_begin = range.first;
      rt->text_end = range.second;
    }
  }
  return kReady;
}

// Waits while another thread resolves the interpreter (a handful of dlsym calls). Bounded: the
// resolver may be stuck behind a loader lock this very thread holds (a CUDA call made from a
// library constructor), and then going without Python frames once beats a hang.
const Runtime *wait_for_resolver() {
  for (int spins = 0; spins < 100000; ++spins) {
    int st = g_state.load(std::memory_order_acquire);
    if (st != kResolving) return st == kReady ? &g_runtime : nullptr;
    sched_yield();
  }
  return nullptr;
}

// The interpreter, or null while there is none to read. The first call resolves it; a process
// without Python is looked at again on each thread's 2nd, 4th, 8th... capture (it may embed
// Python later), counted per thread so that native programs share no counter.
const Runtime *runtime() {
  int st = g_state.load(std::memory_order_acquire);
  if (st == kReady) return &g_runtime;
  if (st == kResolving) return wait_for_resolver();
  if (st != kUnresolved && st != kAbsent) return nullptr;  // kAbsent: capture() let this call look again
  // One resolver; the others wait for it: the first allocations of a program often come from
  // several threads at once, and each of them deserves its Python frames.
  if (!g_state.compare_exchange_strong(st, kResolving, std::memory_order_acq_rel)) return wait_for_resolver();
  int result = resolve_runtime(&g_runtime);
  g_state.store(result, std::memory_order_release);
  return result == kReady ? &g_runtime : nullptr;
}

// ---- Reading the interpreter's memory, lightly checked ------------------------------------------

// Non-null, 8-aligned and in the user half of the x86-64 address space.
inline bool plausible(uint64_t p) { return p >= 4096 && p < (1ull << 47) && (p & 7) == 0; }

template <class T>
inline T load(uint64_t address) {
  T v;
  std::memcpy(&v, reinterpret_cast<const void *>(address), sizeof v);
  return v;
}

inline bool has_type(uint64_t object, const py::Layout &l, uint64_t type) {
  return plausible(object) && load<uint64_t>(object + l.ob_type) == type;
}

// Walks the thread's frames, innermost first, skipping C-stack frames. Returns the number of
// frames, or -1 when something does not look like CPython's state (then nothing is used).
int walk(const Runtime &rt, uint64_t tstate, PythonStacks::Raw *out, unsigned max) {
  const py::Layout &l = rt.layout;
  if (!plausible(tstate)) return -1;
  uint64_t frame;
  if (l.tstate_cframe >= 0) {
    uint64_t cframe = load<uint64_t>(tstate + l.tstate_cframe);
    if (!plausible(cframe)) return -1;
    frame = load<uint64_t>(cframe + l.cframe_current_frame);
  } else {
    frame = load<uint64_t>(tstate + l.tstate_frame);
  }
  unsigned n = 0;
  for (unsigned steps = 0; frame && n < max; ++steps) {
    if (!plausible(frame) || steps > 4 * max + 64) return -1;  // a cycle is corruption too
    uint64_t previous = load<uint64_t>(frame + l.frame_previous);
    if (l.frame_owner >= 0 && load<char>(frame + l.frame_owner) == py::kFrameOwnedByCStack) {
      frame = previous;
      continue;
    }
    uint64_t code = load<uint64_t>(frame + l.frame_code);
    if (!has_type(code, l, rt.code_type)) return -1;
    int64_t offset;
    if (l.lasti_is_index) {
      int lasti = load<int>(frame + l.frame_instr);
      offset = lasti < 0 ? -1 : int64_t{lasti} * 2;
    } else {
      int64_t diff = static_cast<int64_t>(load<uint64_t>(frame + l.frame_instr) - (code + l.code_code_adaptive));
      offset = diff < 0 ? -1 : diff;
    }
    out[n++] = {code, load<uint64_t>(code + l.code_linetable), offset};
    frame = previous;
  }
  return static_cast<int>(n);
}

void append_utf8(std::string *out, uint32_t c) {
  if (c < 0x80) {
    *out += static_cast<char>(c);
  } else if (c < 0x800) {
    *out += static_cast<char>(0xc0 | c >> 6);
    *out += static_cast<char>(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    *out += static_cast<char>(0xe0 | c >> 12);
    *out += static_cast<char>(0x80 | (c >> 6 & 0x3f));
    *out += static_cast<char>(0x80 | (c & 0x3f));
  } else {
    *out += static_cast<char>(0xf0 | (c >> 18 & 7));
    *out += static_cast<char>(0x80 | (c >> 12 & 0x3f));
    *out += static_cast<char>(0x80 | (c >> 6 & 0x3f));
    *out += static_cast<char>(0x80 | (c & 0x3f));
  }
}

// A str object's text as UTF-8 (compact strings only: every name a code object holds is one).
bool read_str(const Runtime &rt, uint64_t object, std::string *out) {
  const py::Layout &l = rt.layout;
  out->clear();
  if (!has_type(object, l, rt.unicode_type)) return false;
  int64_t length = load<int64_t>(object + l.unicode_length);
  uint32_t state = load<uint32_t>(object + l.unicode_state);
  unsigned kind = state >> 2 & 7;
  bool compact = state >> 5 & 1, ascii = state >> 6 & 1;
  if (!compact || length < 0 || (kind != 1 && kind != 2 && kind != 4)) return false;
  if (length > static_cast<int64_t>(kMaxText)) length = kMaxText;
  uint64_t data = object + (ascii ? l.unicode_ascii_data : l.unicode_compact_data);
  if (ascii) {
    out->assign(reinterpret_cast<const char *>(data), static_cast<size_t>(length));
    return true;
  }
  for (int64_t i = 0; i < length && out->size() < kMaxText; ++i) {
    uint32_t c = kind == 1   ? load<uint8_t>(data + i)
                 : kind == 2 ? load<uint16_t>(data + 2 * i)
                             : load<uint32_t>(data + 4 * i);
    append_utf8(out, c > 0x10ffff ? 0xfffd : c);
  }
  return true;
}

bool read_bytes(const Runtime &rt, uint64_t object, std::string *out) {
  const py::Layout &l = rt.layout;
  if (!has_type(object, l, rt.bytes_type)) return false;
  int64_t size = load<int64_t>(object + l.bytes_size);
  if (size < 0 || size > kMaxLineTable) return false;
  out->assign(reinterpret_cast<const char *>(object + l.bytes_data), static_cast<size_t>(size));
  return true;
}

uint32_t intern_text(State *s, const std::string &text) {
  if (text.empty()) return 0;
  size_t n = text.size() < kMaxText ? text.size() : kMaxText;
  while (n < text.size() && n > 0 && (static_cast<uint8_t>(text[n]) & 0xc0) == 0x80) --n;  // whole characters
  bool is_new = false;
  uint32_t id = s->strings.intern(text.data(), n, &is_new);
  if (is_new) {
    format::StringRecord r{id, static_cast<uint32_t>(n)};
    append_record(s, format::RecordType::kString, &r, sizeof r, text.data(), n);
  }
  return id;
}

// One multiply per frame: the three words are folded first (addresses are 8-aligned and below
// 2^47, offsets small), then mixed into the running hash.
uint64_t hash_walk(const PythonStacks::Raw *raw, unsigned n) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
  for (unsigned i = 0; i < n; ++i) {
    uint64_t v = raw[i].code ^ (raw[i].linetable << 17 | raw[i].linetable >> 47) ^
                 static_cast<uint64_t>(raw[i].offset) * 0x9e3779b97f4a7c15ull;
    h = ((h << 23 | h >> 41) ^ v) * 0xff51afd7ed558ccdull;
  }
  return h ^ (h >> 33);
}

bool same_walk(const std::vector<PythonStacks::Raw> &known, const PythonStacks::Raw *raw, unsigned n) {
  if (known.size() != n) return false;
  for (unsigned i = 0; i < n; ++i)
    if (known[i].code != raw[i].code || known[i].linetable != raw[i].linetable || known[i].offset != raw[i].offset)
      return false;
  return true;
}

// The last walk this thread interned: a loop allocating at one site skips every table.
GPULEAK_TLS const PythonStacks *t_owner = nullptr;
GPULEAK_TLS uint64_t t_hash = 0;
GPULEAK_TLS uint32_t t_id = 0;

}  // namespace

std::string python_stacks_configure() {
  if (const char *v = std::getenv("GPULEAK_PY_STACK_DEPTH")) {
    if (!parse_unsigned(v, 0, kMaxDepth, &g_depth))
      return std::string("GPULEAK_PY_STACK_DEPTH=") + v + " is not a number from 0 to 256";
  }
  // Test hooks: "layout" reads frames at a wrong offset (the first walk must notice), any other
  // value but "0" treats the interpreter's version as unknown.
  const char *force = std::getenv("GPULEAK_PY_FORCE_UNSUPPORTED");
  g_force_bad_layout = force && std::strcmp(force, "layout") == 0;
  g_force_unsupported = force && *force && std::strcmp(force, "0") != 0 && !g_force_bad_layout;
  if (g_depth == 0) g_state.store(kOff, std::memory_order_release);
  if (const char *bad = python_observer_configure(); *bad) return bad;
  return {};
}

int python_line_for_offset(uint8_t format, const std::string &table, int first_line, int64_t offset) {
  if (offset < 0) return first_line;
  const auto *p = reinterpret_cast<const uint8_t *>(table.data());
  const uint8_t *end = p + table.size();
  int line = first_line;
  int64_t start = 0;
  if (format == static_cast<uint8_t>(py::LineTable::kPairs310)) {
    // Objects/lnotab_notes.txt of 3.10: (bytecode delta, line delta); -128 = no line.
    for (; p + 1 < end; p += 2) {
      int64_t stop = start + p[0];
      int delta = static_cast<int8_t>(p[1]);
      int entry = delta == -128 ? 0 : (line += delta);
      if (offset >= start && offset < stop) return entry > 0 ? entry : 0;
      start = stop;
    }
    return 0;
  }
  // Objects/locations.md (3.11+): an entry starts with a byte whose top bit is set; bits 3-6 are
  // the code, bits 0-2 the length in code units minus one. Codes 13 and 14 carry a signed varint
  // line delta, 11 and 12 mean +1 and +2, 15 means "no line", every other keeps the line.
  while (p < end) {
    uint8_t first = *p;
    if (!(first & 0x80)) return 0;
    int code = first >> 3 & 15;
    int64_t stop = start + ((first & 7) + 1) * 2;
    int delta = 0;
    if (code == 13 || code == 14) {
      const uint8_t *q = p + 1;
      unsigned value = 0, shift = 0;
      uint8_t b = 0x40;
      while ((b & 0x40) && q < end && shift < 32) {
        b = *q++;
        value |= static_cast<unsigned>(b & 63) << shift;
        shift += 6;
      }
      delta = value & 1 ? -static_cast<int>(value >> 1) : static_cast<int>(value >> 1);
    } else if (code == 11 || code == 12) {
      delta = code - 10;
    }
    line += delta;
    if (offset >= start && offset < stop) return code == 15 || line <= 0 ? 0 : line;
    start = stop;
    do ++p;
    while (p < end && !(*p & 0x80));
  }
  return 0;
}

unsigned PythonStacks::frames_before_interpreter(const uint64_t *frames, unsigned n) {
  if (g_state.load(std::memory_order_acquire) != kReady) return n;
  for (unsigned i = 0; i < n; ++i)  // return addresses: the call is at address - 1
    if (frames[i] - 1 >= g_runtime.text_begin && frames[i] - 1 < g_runtime.text_end) return i;
  return n;
}

uint32_t PythonStacks::capture_slow(State *s) {
  const Runtime *rt = runtime();
  if (!rt || !rt->is_initialized() || rt->is_finalizing()) return 0;
  python_observer_maybe_schedule();
  // This thread's own state (thread-specific storage, no GIL): null on a thread that never ran
  // Python (autograd workers, CUDA callback threads), so no other thread's frames can show up.
  auto tstate = reinterpret_cast<uint64_t>(rt->this_thread_state());
  if (!tstate) return 0;
  Raw raw[kMaxDepth];
  int n = walk(*rt, tstate, raw, g_depth);
  if (!g_layout_confirmed.load(std::memory_order_relaxed)) {
    // The very first walk decides whether the offsets fit this interpreter at all: if its frames
    // do not look like CPython's, say so once and stop reading them.
    if (n < 0) {
      int expected = kReady;
      if (g_state.compare_exchange_strong(expected, kUnsupported)) {
        char version[16];
        std::snprintf(version, sizeof version, "3.%u", rt->layout.minor);
        unsupported(version, "its frames do not match gpuleak's layout for this version");
      }
      return 0;
    }
    if (n > 0) g_layout_confirmed.store(true, std::memory_order_relaxed);
  }
  if (n <= 0) return 0;
  uint64_t h = hash_walk(raw, n);
  if (t_owner == this && t_hash == h) return t_id;
  Shard &shard = shards_[h % kShards];
  uint32_t id = 0;
  {
    std::lock_guard<std::mutex> lock(shard.lock);
    auto range = shard.walks.equal_range(h);
    for (auto it = range.first; it != range.second && !id; ++it)
      if (same_walk(it->second.first, raw, n)) id = it->second.second;
  }
  if (!id) {
    id = resolve(s, raw, n);
    if (!id) return 0;
    std::lock_guard<std::mutex> lock(shard.lock);
    if (shard.walks.size() >= kMaxWalksPerShard) shard.walks.clear();
    shard.walks.emplace(h, std::make_pair(std::vector<Raw>(raw, raw + n), id));
  }
  t_owner = this, t_hash = h, t_id = id;
  return id;
}

// First sight of a walk: names and lines, then the interned StackRecord. Each frame's code object
// is read at most once while it stays in the cache; everything is copied, nothing kept by address.
uint32_t PythonStacks::resolve(State *s, const Raw *raw, unsigned n) {
  const Runtime &rt = g_runtime;
  const py::Layout &l = rt.layout;
  uint64_t encoded[1 + 2 * kMaxDepth];
  encoded[0] = kPythonTag;
  {
    std::lock_guard<std::mutex> lock(code_lock_);
    std::string text;
    for (unsigned i = 0; i < n; ++i) {
      CodeKey key{raw[i].code, raw[i].linetable};
      auto it = codes_.find(key);
      if (it == codes_.end()) {
        if (codes_.size() >= kMaxCodes) codes_.clear();
        CodeInfo info;
        uint64_t code = raw[i].code;
        if (!read_bytes(rt, raw[i].linetable, &info.line_table)) return 0;
        info.first_line = load<int>(code + l.code_firstlineno);
        if (read_str(rt, load<uint64_t>(code + l.code_filename), &text)) info.file_id = intern_text(s, text);
        int name_at = l.code_qualname >= 0 ? l.code_qualname : l.code_name;
        if (read_str(rt, load<uint64_t>(code + name_at), &text)) info.function_id = intern_text(s, text);
        it = codes_.emplace(key, std::move(info)).first;
      }
      const CodeInfo &c = it->second;
      int line = python_line_for_offset(static_cast<uint8_t>(l.line_table), c.line_table, c.first_line, raw[i].offset);
      encoded[1 + 2 * i] = uint64_t{c.file_id} << 32 | c.function_id;
      encoded[2 + 2 * i] = static_cast<uint64_t>(line > 0 ? line : 0);
    }
  }
  bool is_new = false;
  uint32_t id = s->stack_ids.intern(encoded, 1 + 2 * n, &is_new);
  if (is_new) {
    format::StackRecord r{id, static_cast<uint16_t>(2 * n), static_cast<uint16_t>(format::StackKind::kPython)};
    append_record(s, format::RecordType::kStack, &r, sizeof r, encoded + 1, 2 * n * sizeof(uint64_t));
  }
  return id;
}

uint32_t PythonStacks::intern_frames(State *s, const char *const *files, const char *const *functions,
                                     const int32_t *lines, unsigned n) {
  if (g_depth == 0 || n == 0 || g_state.load(std::memory_order_acquire) == kOff) return 0;
  if (n > g_depth) n = g_depth;
  uint64_t encoded[1 + 2 * kMaxDepth];
  encoded[0] = kPythonTag;
  for (unsigned i = 0; i < n; ++i) {
    const uint32_t file = files && files[i] ? intern_text(s, files[i]) : 0;
    const uint32_t function = functions && functions[i] ? intern_text(s, functions[i]) : 0;
    encoded[1 + 2 * i] = uint64_t{file} << 32 | function;
    encoded[2 + 2 * i] = static_cast<uint64_t>(lines && lines[i] > 0 ? lines[i] : 0);
  }
  bool is_new = false;
  uint32_t id = s->stack_ids.intern(encoded, 1 + 2 * n, &is_new);
  if (is_new) {
    format::StackRecord r{id, static_cast<uint16_t>(2 * n), static_cast<uint16_t>(format::StackKind::kPython)};
    append_record(s, format::RecordType::kStack, &r, sizeof r, encoded + 1, 2 * n * sizeof(uint64_t));
  }
  return id;
}

}  // namespace gpuleak::core
