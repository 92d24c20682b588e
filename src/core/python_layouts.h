// Where CPython keeps what a Python call site needs: the byte offsets gpuleak reads, without the GIL,
// to walk the calling thread's frames (python_stack.cpp). No Python header is included: the values
// come from CPython's published headers of each minor version (x86-64, the default GIL build) and
// are checked against those very headers, with offsetof and Py_BUILD_CORE, by
// tests/python_frames/layout_test.cpp for every interpreter the build is given.
//
// 3.13 and later publish these offsets themselves (_PyRuntime.debug_offsets, a _Py_DebugOffsets
// starting with the cookie "xdebugpy"): kLayout313 is only what the 3.13 headers say, kept for the
// test to compare with the running interpreter's own debug offsets. The struct _Py_DebugOffsets is
// stable within a minor version only, so DebugOffsets313 below is its 3.13 shape.
#pragma once

#include <cstdint>
#include <cstring>

namespace gpuleak::core::py {

// How a code object maps bytecode offsets to lines.
enum class LineTable : uint8_t {
  kPairs310 = 1,      // 3.10 co_linetable: (byte delta u8, line delta s8) pairs, -128 = no line
  kLocations311 = 2,  // 3.11+ co_linetable: the "location table" of Objects/locations.md
};

struct Layout {
  unsigned minor;  // 3.<minor>
  // Thread state -> innermost frame. 3.11/3.12 go through the C frame of the running eval loop:
  // tstate->cframe->current_frame. 3.10: tstate->frame (a PyFrameObject); 3.13: tstate->current_frame.
  int tstate_cframe;  // -1 when the version has no _PyCFrame
  int cframe_current_frame;
  int tstate_frame;  // used when tstate_cframe < 0
  // One frame (_PyInterpreterFrame, or PyFrameObject on 3.10).
  int frame_code;       // f_code / f_executable
  int frame_previous;   // previous / f_back
  int frame_instr;      // prev_instr (3.11, 3.12) / instr_ptr (3.13): pointer into co_code_adaptive;
                        // 3.10: f_lasti, an int counted in 2-byte code units
  int frame_owner;      // char; -1 when frames have no owner (3.10)
  bool lasti_is_index;  // 3.10
  // Code object.
  int code_filename;
  int code_name;
  int code_qualname;       // -1 before 3.11 (co_name is used)
  int code_firstlineno;    // int
  int code_linetable;      // bytes object
  int code_code_adaptive;  // inline bytecode; -1 on 3.10
  LineTable line_table;
  // Objects.
  int ob_type;               // PyObject.ob_type
  int bytes_size;            // PyVarObject.ob_size of a bytes object
  int bytes_data;            // PyBytesObject.ob_sval
  int unicode_length;        // PyASCIIObject.length (code points)
  int unicode_state;         // PyASCIIObject.state bit field: interned:2 kind:3 compact:1 ascii:1
  int unicode_ascii_data;    // sizeof(PyASCIIObject): where compact ASCII text starts
  int unicode_compact_data;  // sizeof(PyCompactUnicodeObject): where other compact text starts
};

// A frame owned by the C stack: an eval loop's entry frame or a shim frame, not Python code
// (3.12+, FRAME_OWNED_BY_CSTACK in Include/internal/pycore_frame.h).
inline constexpr int kFrameOwnedByCStack = 3;

// The tables keep one line per group of fields, as the comments name them.
// clang-format off
inline constexpr Layout kLayout310 = {
    10, -1, 0, 24,            // tstate->frame
    32, 24, 96, -1, true,     // f_code, f_back, f_lasti
    104, 112, -1, 40, 120, -1, LineTable::kPairs310,
    8, 16, 32, 16, 32, 48, 72};

inline constexpr Layout kLayout311 = {
    11, 56, 8, -1,            // tstate->cframe->current_frame
    32, 48, 56, 69, false,    // f_code, previous, prev_instr, owner
    112, 120, 128, 72, 136, 184, LineTable::kLocations311,
    8, 16, 32, 16, 32, 48, 72};

inline constexpr Layout kLayout312 = {
    12, 56, 0, -1,            // tstate->cframe->current_frame
    0, 8, 56, 70, false,      // f_code, previous, prev_instr, owner
    112, 120, 128, 68, 136, 192, LineTable::kLocations311,
    8, 16, 32, 16, 32, 40, 56};

inline constexpr Layout kLayout313 = {
    13, -1, 0, 72,            // tstate->current_frame
    0, 8, 56, 70, false,      // f_executable, previous, instr_ptr, owner
    112, 120, 128, 68, 136, 200, LineTable::kLocations311,
    8, 16, 32, 16, 32, 40, 56};
// clang-format on

// _Py_DebugOffsets as CPython 3.13 defines it (Include/internal/pycore_runtime.h): every field a
// uint64_t, sections in this order. Only the sections gpuleak reads are spelled out; the struct is
// read in place from _PyRuntime, which starts with it. One line per section, as CPython has them.
// clang-format off
struct DebugOffsets313 {
  char cookie[8];  // "xdebugpy"
  uint64_t version;        // PY_VERSION_HEX of the running interpreter
  uint64_t free_threaded;
  struct { uint64_t size, finalizing, interpreters_head; } runtime_state;
  struct {
    uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins, ceval_gil,
        gil_runtime_state, gil_runtime_state_enabled, gil_runtime_state_locked, gil_runtime_state_holder;
  } interpreter_state;
  struct {
    uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk, status;
  } thread_state;
  struct { uint64_t size, previous, executable, instr_ptr, localsplus, owner; } interpreter_frame;
  struct {
    uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
        localspluskinds, co_code_adaptive;
  } code_object;
  struct { uint64_t size, ob_type; } pyobject;
  struct { uint64_t size, tp_name, tp_repr, tp_flags; } type_object;
  struct { uint64_t size, ob_item, ob_size; } tuple_object;
  struct { uint64_t size, ob_item, ob_size; } list_object;
  struct { uint64_t size, ma_keys, ma_values; } dict_object;
  struct { uint64_t size, ob_fval; } float_object;
  struct { uint64_t size, lv_tag, ob_digit; } long_object;
  struct { uint64_t size, ob_size, ob_sval; } bytes_object;
  struct { uint64_t size, state, length, asciiobject_size; } unicode_object;
  struct { uint64_t size, collecting; } gc;
};
// clang-format on

// Builds the 3.13 layout from the running interpreter's debug offsets. False when they do not
// describe a 3.13 default (GIL) build, or an offset is out of any sane range.
inline bool layout_from_debug_offsets(const DebugOffsets313 &d, Layout *out) {
  if (std::memcmp(d.cookie, "xdebugpy", 8) != 0 || (d.version >> 16) != 0x030d || d.free_threaded != 0) return false;
  const uint64_t fields[] = {d.thread_state.current_frame,
                             d.interpreter_frame.previous,
                             d.interpreter_frame.executable,
                             d.interpreter_frame.instr_ptr,
                             d.interpreter_frame.owner,
                             d.code_object.filename,
                             d.code_object.name,
                             d.code_object.qualname,
                             d.code_object.linetable,
                             d.code_object.firstlineno,
                             d.code_object.co_code_adaptive,
                             d.pyobject.ob_type,
                             d.bytes_object.ob_size,
                             d.bytes_object.ob_sval,
                             d.unicode_object.state,
                             d.unicode_object.length,
                             d.unicode_object.asciiobject_size};
  for (uint64_t f : fields)
    if (f >= 4096) return false;
  Layout l = kLayout313;
  l.tstate_cframe = -1;
  l.tstate_frame = static_cast<int>(d.thread_state.current_frame);
  l.frame_code = static_cast<int>(d.interpreter_frame.executable);
  l.frame_previous = static_cast<int>(d.interpreter_frame.previous);
  l.frame_instr = static_cast<int>(d.interpreter_frame.instr_ptr);
  l.frame_owner = static_cast<int>(d.interpreter_frame.owner);
  l.code_filename = static_cast<int>(d.code_object.filename);
  l.code_name = static_cast<int>(d.code_object.name);
  l.code_qualname = static_cast<int>(d.code_object.qualname);
  l.code_firstlineno = static_cast<int>(d.code_object.firstlineno);
  l.code_linetable = static_cast<int>(d.code_object.linetable);
  l.code_code_adaptive = static_cast<int>(d.code_object.co_code_adaptive);
  l.ob_type = static_cast<int>(d.pyobject.ob_type);
  l.bytes_size = static_cast<int>(d.bytes_object.ob_size);
  l.bytes_data = static_cast<int>(d.bytes_object.ob_sval);
  l.unicode_length = static_cast<int>(d.unicode_object.length);
  l.unicode_state = static_cast<int>(d.unicode_object.state);
  l.unicode_ascii_data = static_cast<int>(d.unicode_object.asciiobject_size);
  // PyCompactUnicodeObject = PyASCIIObject + utf8_length + utf8 (not among the debug offsets).
  l.unicode_compact_data = l.unicode_ascii_data + 16;
  *out = l;
  return true;
}

// The table for 3.<minor> when gpuleak knows it from source (10, 11, 12), else null.
inline const Layout *layout_for_minor(unsigned minor) {
  switch (minor) {
    case 10:
      return &kLayout310;
    case 11:
      return &kLayout311;
    case 12:
      return &kLayout312;
    default:
      return nullptr;
  }
}

}  // namespace gpuleak::core::py
