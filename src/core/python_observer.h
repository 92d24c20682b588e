// Starting the Python loop observer (tools/python/gpuleak/_observe.py) in a program run under
// plain LD_PRELOAD, where no start-up hook of gpuleak's runs: once the shim sees an initialized
// interpreter (the first allocation with Python frames), it asks the interpreter, through
// Py_AddPendingCall (callable from any thread, GIL or not), to run a few lines on its main thread
// at the next check between bytecodes. Those lines import the observer from the gpuleak package
// the program can import (gpuleak run's, an installed one), else from the one next to the shim
// (found at start-up: the install's python folder, a wheel's, the build's source tree), and start
// it; they bind no name in the program's namespaces, never raise into it, and say a failure in one
// stderr line. Under `gpuleak run` the start-up hook has started it already: the call is a no-op.
// GPULEAK_PY_OBSERVE=0 turns observation off (the Python side reads it).
#pragma once

#include <atomic>

namespace gpuleak::core {

namespace python_detail {
extern std::atomic<bool> g_observer_asked;
void schedule_observer();
}  // namespace python_detail

// Called from a Python stack capture once the interpreter is known and initialized: cheap after the first time.
inline void python_observer_maybe_schedule() {
  if (__builtin_expect(!python_detail::g_observer_asked.load(std::memory_order_relaxed), 0))
    python_detail::schedule_observer();
}

// "" or a one-line complaint about GPULEAK_PY_OBSERVE (0 or 1).
const char *python_observer_configure();

}  // namespace gpuleak::core
