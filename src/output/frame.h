// A symbolized stack frame: what every output shows for a call site.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuleak::output {

struct Frame {
  enum class Kind { kNative, kPython };
  Kind kind = Kind::kNative;
  std::string function;  // demangled; "" when unknown (the address is then all there is)
  std::string file;      // source file, "" when there is no debug info
  int line = 0;          // 0 when unknown
  std::string module;    // path of the ELF object (native) or "" (Python)
  uint64_t address = 0;  // native: the return address as captured; Python: 0
  std::string build_id;  // native: hex GNU build id of the module, "" when none
  // Native frames without a source line: where the return address sits, as the same build of the
  // module places it in every run (unlike `address`, which moves with the load address): its
  // offset into `function` when the symbol is known, else into the module. It tells apart two
  // calls inside one function without line tables (a stripped cuBLAS, a program built without
  // -g), which site_id (sites.h) would otherwise hash alike. 0 when there is a line or no module.
  uint64_t code_offset = 0;
};

using Stack = std::vector<Frame>;

}  // namespace gpuleak::output
