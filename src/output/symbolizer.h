// Offline symbolization: raw return addresses from a capture -> function, file, line.
//
// Runs in the CLI after the profiled process is gone, never inside it. Each address is mapped to
// the module record whose PT_LOAD segment holds it, and that module's ELF file is read with
// elfutils libdw (its .symtab/.dynsym for the function, DWARF line tables for file:line, separate
// debug files found by build id or .gnu_debuglink). Symbols are only trusted from the very file
// that was loaded: a file that is gone, is not a regular ELF file, or whose GNU build id differs
// from the recorded one yields frames with the module path and address but no function or line.
//
// libdw's standard debuginfo search is used as is: /usr/lib/debug, .gnu_debuglink, and, when
// DEBUGINFOD_URLS is set in the environment, debuginfod downloads (the CLI decides whether to
// leave that variable set). Each ELF file that an address needs stays open until destruction.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "format/capture_reader.h"
#include "output/frame.h"

namespace gpuleak::output {

// Not thread-safe: use one Symbolizer per thread.
class Symbolizer {
 public:
  // Indexes the capture's module map; no ELF file is opened until an address needs it. The
  // capture must outlive the Symbolizer (its stacks are read in place, not copied).
  //
  // When several module records cover one address, the latest in capture order wins: a library
  // can be unloaded and another loaded at the same place. Segments that are empty or wrap past
  // the end of the address space are ignored.
  explicit Symbolizer(const format::Capture &capture);
  ~Symbolizer();
  Symbolizer(const Symbolizer &) = delete;
  Symbolizer &operator=(const Symbolizer &) = delete;
  Symbolizer(Symbolizer &&) noexcept;
  Symbolizer &operator=(Symbolizer &&) noexcept;

  // The frames of a captured native stack, innermost first, one Frame per captured address (an
  // address inside inlined code reports the machine function that holds it, and the line table's
  // file:line, which may be in the inlined callee). A Python stack (kind 1) gives Frames of kind
  // kPython (python_frames below); an unknown id an empty Stack. Results are cached per stack id
  // and per address.
  Stack symbolize(uint32_t stack_id);

  // One captured return address. Every captured address is a return address (it points after the
  // call), so address - 1 is what gets looked up; Frame::address keeps the captured value.
  // An address in no module gives a frame with only `address` set.
  Frame frame(uint64_t address);

  // One line per module whose symbols could not be used (file missing, not ELF, build id
  // mismatch), in the order they were first needed. For the CLI to print as a warning.
  const std::vector<std::string> &problems() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The frames of a Python stack record (kind 1), innermost first: function, file and line from the
// capture's strings, nothing else set. Needs no ELF file.
Stack python_frames(const format::Capture &capture, const format::Stack &stack);

// True for frames of gpuleak itself or of the CUDA libraries: the module's basename starts with
// libgpuleak, libcuda.so, libcudart or libcupti.
bool is_gpuleak_or_cuda_frame(const Frame &frame);

// Drops the leading (innermost) native frames for which is_gpuleak_or_cuda_frame holds, so that
// frame 0 is the program's code that called the CUDA API. Frames further out are kept even when
// they are CUDA's (a callback from libcudart into the program, then back, stays whole). Python
// frames are dropped only where they are gpuleak's own hooks (text::is_gpuleak_hook_file:
// gpuleak._cupy's allocator wrapper sits inside every CuPy array's stack).
Stack trim_to_caller(Stack stack);

}  // namespace gpuleak::output
