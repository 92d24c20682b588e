// Runs the gpuleak CLI the way a CI job does, for the gate's CLI tests: the command line, its exit
// status, and what it wrote on stdout and stderr.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "report_fixture.h"

namespace gpuleak::gate::testing {

struct Result {
  int code = -1;
  std::string out, err;
};

inline std::string quote(const std::string &s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs the gpuleak CLI with `args` (and `env`, "NAME=value ..." prefixes) in a clean environment
// as far as the GitHub variables go.
inline Result gpuleak(const ScratchDir &dir, const std::vector<std::string> &args, const std::string &env = "") {
  std::string cmd =
      "env -u GITHUB_ACTIONS -u GITHUB_STEP_SUMMARY -u GITHUB_WORKSPACE " + env + " " + quote(GPULEAK_CLI_PATH);
  for (const std::string &a : args) cmd += " " + quote(a);
  cmd += " >" + quote(dir.file("stdout")) + " 2>" + quote(dir.file("stderr"));
  int status = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(dir.file("stdout"));
  r.err = slurp(dir.file("stderr"));
  return r;
}

}  // namespace gpuleak::gate::testing
