// Known code for symbolizer_test.cpp, built with -g into its own shared library
// (libsymbolizer_fixture.so) so that addresses in a module other than the test executable can be
// symbolized and checked against exact names and lines.
#pragma once

#include <cstdint>

namespace symbolizer_fixture {

// The return address of the call to this function, i.e. a point inside its caller.
uint64_t caller_return_address();

// Calls caller_return_address() and returns what it gave; *line is the line of that call.
uint64_t leaky_site(int *line);

// Ends in a call that never returns (it throws its return address as a uint64_t), so that return
// address lies past the end of this function: only address - 1 is inside it. *line is the line of
// that call, set before it.
void ends_in_noreturn_call(int *line);

}  // namespace symbolizer_fixture
