// A look at a capture file's ends without reading it: whose it is (the header's pid, the RunInfo's
// run token, both in its first bytes) and whether its process finished it at an exit (the last
// record is the final Stats record). What `gpuleak run` needs to pick its own captures among a
// folder's and to know that one is complete while its process is still ending.
#pragma once

#include <cstdint>
#include <string>

namespace gpuleak::format {

struct CapturePeek {
  uint32_t pid = 0;
  std::string run_token;  // "" when the capture has none (not under `gpuleak run`)
  bool finished = false;  // the file ends with a Stats record whose final_record is 1
};

// False when `path` is not a regular file that starts as a capture does (a FIFO is never opened
// for reading: it could block).
bool peek_capture(const std::string &path, CapturePeek *out);

}  // namespace gpuleak::format
