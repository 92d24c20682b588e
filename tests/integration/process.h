// Running a program the way a user would (fork + exec with an environment) and collecting what it
// left behind, for the integration tests.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "format/capture_reader.h"

namespace gpuleak::test {

struct Result {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  std::string out;
  std::string err;
};

// Runs argv with the current environment plus `env` (an empty value removes the variable).
Result run(const std::vector<std::string> &argv, const std::map<std::string, std::string> &env);

// A fresh empty directory under the test temp dir.
std::string make_temp_dir(const std::string &name);
std::vector<std::string> files_with_suffix(const std::string &dir, const std::string &suffix);

// The environment that profiles a program on the fake CUDA, writing to `out`.
std::map<std::string, std::string> shim_env(const std::string &out);

std::string program(const std::string &name);  // path of a tests/programs executable

format::Capture read_only_capture(const std::string &dir);  // exactly one capture expected in dir

struct Counts {
  int allocs = 0;  // successful Alloc records of owned memory (not imported, not graph reservations)
  int frees = 0;   // successful Free records that matched a live allocation
  int failed = 0;  // Alloc records with a non-zero result
  int graph = 0;   // allocations flagged as graph reservations
};
Counts count(const format::Capture &c);

}  // namespace gpuleak::test
