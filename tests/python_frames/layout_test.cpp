// Checks gpuleak's CPython layout tables (src/core/python_layouts.h) against the headers of the
// interpreter this test is compiled with (offsetof, with Py_BUILD_CORE for the internal structs),
// gpuleak's 3.13 reading of _PyRuntime.debug_offsets against the same headers, and gpuleak's line
// table decoder against the interpreter's own PyCode_Addr2Line for every instruction of a few
// standard library modules and of synthetic code with large and negative line steps.
//
// Built once per interpreter named in GPULEAK_PYTHON_FRAMES_INTERPRETERS (tests/python_frames).
#define PY_SSIZE_T_CLEAN
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#endif
#if PY_VERSION_HEX >= 0x030D0000
#include "internal/pycore_runtime.h"
#endif

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/python_layouts.h"
#include "core/python_stack.h"

namespace py = gpuleak::core::py;

namespace {

int failures = 0;

void same(const char *what, long ours, long theirs) {
  if (ours == theirs) return;
  std::fprintf(stderr, "FAIL %s: gpuleak has %ld, the headers say %ld\n", what, ours, theirs);
  ++failures;
}

// The layout the headers describe, field by field as python_layouts.h names them.
void check_layout(const py::Layout &l) {
  same("minor", l.minor, PY_MINOR_VERSION);
#if PY_VERSION_HEX < 0x030B0000
  same("tstate_cframe", l.tstate_cframe, -1);
  same("tstate_frame", l.tstate_frame, offsetof(PyThreadState, frame));
  same("frame_code", l.frame_code, offsetof(PyFrameObject, f_code));
  same("frame_previous", l.frame_previous, offsetof(PyFrameObject, f_back));
  same("frame_instr", l.frame_instr, offsetof(PyFrameObject, f_lasti));
  same("frame_owner", l.frame_owner, -1);
  same("lasti_is_index", l.lasti_is_index, 1);
  same("code_qualname", l.code_qualname, -1);
  same("code_code_adaptive", l.code_code_adaptive, -1);
  same("line_table", static_cast<long>(l.line_table), static_cast<long>(py::LineTable::kPairs310));
#else
#if PY_VERSION_HEX < 0x030D0000
  same("tstate_cframe", l.tstate_cframe, offsetof(PyThreadState, cframe));
  same("cframe_current_frame", l.cframe_current_frame, offsetof(_PyCFrame, current_frame));
  same("frame_code", l.frame_code, offsetof(_PyInterpreterFrame, f_code));
  same("frame_instr", l.frame_instr, offsetof(_PyInterpreterFrame, prev_instr));
#else
  same("tstate_cframe", l.tstate_cframe, -1);
  same("tstate_frame", l.tstate_frame, offsetof(PyThreadState, current_frame));
  same("frame_code", l.frame_code, offsetof(_PyInterpreterFrame, f_executable));
  same("frame_instr", l.frame_instr, offsetof(_PyInterpreterFrame, instr_ptr));
  same("kFrameOwnedByCStack", py::kFrameOwnedByCStack, FRAME_OWNED_BY_CSTACK);
#endif
#if PY_VERSION_HEX >= 0x030C0000 && PY_VERSION_HEX < 0x030D0000
  same("kFrameOwnedByCStack", py::kFrameOwnedByCStack, FRAME_OWNED_BY_CSTACK);
#endif
  same("frame_previous", l.frame_previous, offsetof(_PyInterpreterFrame, previous));
  same("frame_owner", l.frame_owner, offsetof(_PyInterpreterFrame, owner));
  same("lasti_is_index", l.lasti_is_index, 0);
  same("code_qualname", l.code_qualname, offsetof(PyCodeObject, co_qualname));
  same("code_code_adaptive", l.code_code_adaptive, offsetof(PyCodeObject, co_code_adaptive));
  same("line_table", static_cast<long>(l.line_table), static_cast<long>(py::LineTable::kLocations311));
#endif
  same("code_filename", l.code_filename, offsetof(PyCodeObject, co_filename));
  same("code_name", l.code_name, offsetof(PyCodeObject, co_name));
  same("code_firstlineno", l.code_firstlineno, offsetof(PyCodeObject, co_firstlineno));
  same("code_linetable", l.code_linetable, offsetof(PyCodeObject, co_linetable));
  same("ob_type", l.ob_type, offsetof(PyObject, ob_type));
  same("bytes_size", l.bytes_size, offsetof(PyVarObject, ob_size));
  same("bytes_data", l.bytes_data, offsetof(PyBytesObject, ob_sval));
  same("unicode_length", l.unicode_length, offsetof(PyASCIIObject, length));
  same("unicode_state", l.unicode_state, offsetof(PyASCIIObject, state));
  same("unicode_ascii_data", l.unicode_ascii_data, sizeof(PyASCIIObject));
  same("unicode_compact_data", l.unicode_compact_data, sizeof(PyCompactUnicodeObject));
}

// The state bit field as python_stack.cpp decodes it: kind bits 2-4, compact 5, ascii 6.
void check_unicode_state_bits() {
  PyObject *ascii = PyUnicode_FromString("train.py");
  PyObject *wide = PyUnicode_FromString("\xc3\xa9t\xc3\xa9_\xe2\x82\xac");  // "été_€": 2-byte kind
  for (PyObject *s : {ascii, wide}) {
    unsigned state = 0;
    std::memcpy(&state, reinterpret_cast<char *>(s) + offsetof(PyASCIIObject, state), sizeof state);
    same("state.kind", state >> 2 & 7, PyUnicode_KIND(s));
    same("state.compact", state >> 5 & 1, PyUnicode_IS_COMPACT(s));
    same("state.ascii", state >> 6 & 1, PyUnicode_IS_ASCII(s));
  }
  Py_DECREF(ascii);
  Py_DECREF(wide);
}

const char kCollect[] = R"PY(
import types, asyncio.base_events, threading, json.decoder, inspect, typing
SYNTH = '''
def far_apart(x):
    a = x
''' + '\n' * 300 + '''    b = (a +
         1)
    for i in range(3):
        if i:
            a = (b,
                 i)
    return [y for y in range(a[0]) if y]

class K:
    def m(self):
        try:
            return 1 / 0
        except ZeroDivisionError:
            return 2
        finally:
            pass
''' + '\n' * 70000 + '''
async def late():
    return lambda q: q
'''
codes = []
def walk(co):
    codes.append(co)
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            walk(c)
for module in (asyncio.base_events, threading, json.decoder, inspect, typing):
    with open(module.__file__, encoding='utf-8') as f:
        walk(compile(f.read(), module.__file__, 'exec'))
walk(compile(SYNTH, '<synthetic>', 'exec'))
)PY";

void check_line_tables() {
  PyObject *globals = PyDict_New();
  PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
  PyObject *result = PyRun_String(kCollect, Py_file_input, globals, globals);
  if (!result) {
    PyErr_Print();
    ++failures;
    return;
  }
  Py_DECREF(result);
  PyObject *codes = PyDict_GetItemString(globals, "codes");
  long checked = 0, wrong = 0;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(codes); ++i) {
    auto *co = reinterpret_cast<PyCodeObject *>(PyList_GET_ITEM(codes, i));
    std::string table(PyBytes_AS_STRING(co->co_linetable), PyBytes_GET_SIZE(co->co_linetable));
#if PY_VERSION_HEX < 0x030B0000
    Py_ssize_t nbytes = PyBytes_GET_SIZE(co->co_code);
    auto format = static_cast<uint8_t>(py::LineTable::kPairs310);
#else
    Py_ssize_t nbytes = Py_SIZE(co) * 2;
    auto format = static_cast<uint8_t>(py::LineTable::kLocations311);
#endif
    for (Py_ssize_t offset = -2; offset < nbytes; offset += 2) {
      int theirs = offset < 0 ? co->co_firstlineno : PyCode_Addr2Line(co, static_cast<int>(offset));
      if (theirs < 0) theirs = 0;
      int ours = gpuleak::core::python_line_for_offset(format, table, co->co_firstlineno, offset < 0 ? -1 : offset);
      ++checked;
      if (ours != theirs && wrong++ < 10)
        std::fprintf(stderr, "FAIL line of %s offset %zd: gpuleak %d, CPython %d\n", PyUnicode_AsUTF8(co->co_name),
                     offset, ours, theirs);
    }
  }
  if (wrong) ++failures;
  std::printf("line tables: %ld instruction offsets of %zd code objects, %ld wrong\n", checked, PyList_GET_SIZE(codes),
              wrong);
  Py_DECREF(globals);
}

}  // namespace

int main() {
  std::printf("CPython %s\n", PY_VERSION);
#if PY_VERSION_HEX >= 0x030D0000
  // 3.13: gpuleak reads the offsets from the interpreter itself; its table must agree too.
  static_assert(sizeof(py::DebugOffsets313) == sizeof(_Py_DebugOffsets), "_Py_DebugOffsets changed shape");
  same("debug offsets: unicode_object", offsetof(py::DebugOffsets313, unicode_object),
       offsetof(_Py_DebugOffsets, unicode_object));
  same("debug offsets: code_object", offsetof(py::DebugOffsets313, code_object),
       offsetof(_Py_DebugOffsets, code_object));
  py::Layout from_runtime{};
  bool ok = py::layout_from_debug_offsets(*reinterpret_cast<const py::DebugOffsets313 *>(&_PyRuntime.debug_offsets),
                                          &from_runtime);
  same("layout_from_debug_offsets succeeded", ok, 1);
  std::printf("checking the layout read from _PyRuntime.debug_offsets\n");
  check_layout(from_runtime);
  std::printf("checking kLayout313\n");
  check_layout(py::kLayout313);
#else
  const py::Layout *table = py::layout_for_minor(PY_MINOR_VERSION);
  if (!table) {
    std::fprintf(stderr, "FAIL no table for 3.%d\n", PY_MINOR_VERSION);
    return 1;
  }
  std::printf("checking the table for 3.%d\n", PY_MINOR_VERSION);
  check_layout(*table);
#endif
  Py_Initialize();
  check_unicode_state_bits();
  check_line_tables();
  Py_Finalize();
  std::printf(failures ? "FAILED (%d)\n" : "ok\n", failures);
  return failures ? 1 : 0;
}
