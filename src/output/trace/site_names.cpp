#include "output/trace/site_names.h"

#include "output/report_json.h"
#include "output/trace/trace_text.h"

namespace gpuleak::output::trace {

const Stack &SiteNames::stack(uint32_t id) {
  auto it = stacks_.find(id);
  if (it == stacks_.end()) it = stacks_.emplace(id, id && symbolize_ ? symbolize_(id) : Stack{}).first;
  return it->second;
}

SiteNames::Entry &SiteNames::entry(uint32_t stack_id, uint32_t py_stack_id) {
  const uint64_t key = static_cast<uint64_t>(stack_id) << 32 | py_stack_id;
  auto it = sites_.find(key);
  if (it != sites_.end()) return it->second;
  Entry e;
  e.frames = stack(stack_id);
  const Stack &py = stack(py_stack_id);
  e.frames.insert(e.frames.end(), py.begin(), py.end());
  e.label = e.frames.empty() ? "unknown site" : frame_label(e.frames.front());
  e.id = site_id(e.frames);
  return sites_.emplace(key, std::move(e)).first->second;
}

const Stack &SiteNames::frames(uint32_t stack_id, uint32_t py_stack_id) { return entry(stack_id, py_stack_id).frames; }
const std::string &SiteNames::label(uint32_t stack_id, uint32_t py_stack_id) {
  return entry(stack_id, py_stack_id).label;
}
const std::string &SiteNames::id(uint32_t stack_id, uint32_t py_stack_id) { return entry(stack_id, py_stack_id).id; }

}  // namespace gpuleak::output::trace
