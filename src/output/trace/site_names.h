// Call sites by name, for the trace and the exports: each stack id of the capture is symbolized
// once, and a site (native stack id, Python stack id) gets the same frames and the same site_id
// as in the report (output::site_id over the native frames followed by the Python frames).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include "output/frame.h"

namespace gpuleak::output::trace {

// Turns a capture stack id into frames, innermost first (as make_report's `symbolize`).
using SymbolizeFn = std::function<Stack(uint32_t stack_id)>;

class SiteNames {
 public:
  explicit SiteNames(SymbolizeFn symbolize) : symbolize_(std::move(symbolize)) {}

  // The site's frames, innermost first: native, then Python.
  const Stack &frames(uint32_t stack_id, uint32_t py_stack_id);
  // frame_label of the innermost frame, or "unknown site" when the site has no frames.
  const std::string &label(uint32_t stack_id, uint32_t py_stack_id);
  // output::site_id of frames(): the report's id for the same site.
  const std::string &id(uint32_t stack_id, uint32_t py_stack_id);

 private:
  struct Entry {
    Stack frames;
    std::string label;
    std::string id;
  };
  Entry &entry(uint32_t stack_id, uint32_t py_stack_id);
  const Stack &stack(uint32_t id);

  SymbolizeFn symbolize_;
  std::unordered_map<uint32_t, Stack> stacks_;
  std::unordered_map<uint64_t, Entry> sites_;
};

}  // namespace gpuleak::output::trace
