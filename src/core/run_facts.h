// Who is being profiled: program name, command line, rank, host. Read once when the capture is
// opened; also decides the capture's file name (DESIGN.md "Output contracts").
#pragma once

#include <string>
#include <vector>

namespace gpuleak::core {

struct RunFacts {
  std::string program;               // executable basename, or the script for Python
  std::vector<std::string> command;  // argv
  std::string host;
  int rank = -1;              // RANK, else SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK
  std::string allocator_env;  // PYTORCH_CUDA_ALLOC_CONF
};

RunFacts read_run_facts();

// "<program>" of a command line: for a Python interpreter the script (or -m module) basename.
std::string program_name(const std::string &exe, const std::vector<std::string> &argv);

// mkdir -p: false with *error set when a level cannot be made or the result is not a directory.
bool make_directories(const std::string &dir, std::string *error);

// Where a capture was created.
struct CaptureFile {
  std::string path;  // the folder (symlinks resolved when it was opened) and the name
  std::string name;  // "<stem>[.N].gpuleak"
  int dir_fd = -1;   // the folder, opened O_DIRECTORY | O_NOFOLLOW, close-on-exec, high
};

// Creates `<dir>/<stem>.gpuleak` without following symlinks or replacing anything: when the name is
// taken, or a report or trace of that stem exists, ".1", ".2", ... are appended to the stem.
// Creates `dir` and its parents (0755) when missing. Returns the open descriptor (close-on-exec,
// moved to a high number) and fills *out, or -1 with *error set.
int create_capture_file(const std::string &dir, const std::string &stem, CaptureFile *out, std::string *error);

}  // namespace gpuleak::core
