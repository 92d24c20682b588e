#include "symbolizer_fixture.h"

namespace symbolizer_fixture {
namespace {
volatile int g_sink;  // work after each call, so that no call becomes a tail call
}  // namespace

__attribute__((noinline)) uint64_t caller_return_address() {
  auto ra = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  g_sink = g_sink + 1;
  return ra;
}

__attribute__((noinline)) uint64_t leaky_site(int *line) {
  // The line of the call just below is what the symbolizer must report.
  *line = __LINE__ + 1;
  uint64_t ra = caller_return_address();
  g_sink = g_sink + 1;
  return ra;
}

[[noreturn]] __attribute__((noinline)) void throw_caller_return_address() {
  throw reinterpret_cast<uint64_t>(__builtin_return_address(0));
}

__attribute__((noinline)) void ends_in_noreturn_call(int *line) {
  *line = __LINE__ + 1;
  throw_caller_return_address();
}

}  // namespace symbolizer_fixture
