// The preload's process-level plumbing: load-time set-up, fork, exit and fatal signals.
#pragma once

#include <cstdint>
#include <utility>

namespace gpuleak::shim {

// libgpuleak's own executable range (its frames are skipped in stacks; its exports never wrapped).
std::pair<uintptr_t, uintptr_t> own_text_range();
// False when tracking is off for this process: then every lookup returns the real function.
bool wrapping_enabled();
// exec_hooks.cpp: find the real exec functions (at load time, so that exec stays signal-safe).
void resolve_exec_functions();

}  // namespace gpuleak::shim
