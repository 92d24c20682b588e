// A call site as the analysis names it: the capture's interned native and Python stack ids.
#pragma once

#include <cstdint>

namespace gpuleak::analysis {

// A call site: native stack id and Python stack id as the capture interned them (0 = none).
struct Site {
  uint32_t stack_id = 0;
  uint32_t py_stack_id = 0;
  bool operator==(const Site &o) const { return stack_id == o.stack_id && py_stack_id == o.py_stack_id; }
};

}  // namespace gpuleak::analysis
