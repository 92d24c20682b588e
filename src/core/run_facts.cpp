#include "core/run_facts.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "core/high_fd.h"
#include "text/paths.h"

namespace gpuleak::core {

using text::basename_of;

namespace {

std::vector<std::string> read_cmdline() {
  std::vector<std::string> argv;
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return argv;
  std::string all;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) all.append(buf, static_cast<size_t>(n));
  close(fd);
  size_t start = 0;
  while (start < all.size()) {
    size_t end = all.find('\0', start);
    if (end == std::string::npos) end = all.size();
    argv.push_back(all.substr(start, end - start));
    start = end + 1;
  }
  return argv;
}

int parse_rank(const char *v) {
  if (!v || !*v) return -1;
  char *end = nullptr;
  long r = std::strtol(v, &end, 10);
  return (*end || r < 0 || r > INT_MAX) ? -1 : static_cast<int>(r);
}

// File names must stay plain: anything outside [A-Za-z0-9._-] becomes '_'.
std::string sanitize(std::string s) {
  for (char &c : s)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  if (s.empty() || s[0] == '.') s.insert(s.begin(), '_');
  return s.substr(0, 128);
}

}  // namespace

std::string program_name(const std::string &exe, const std::vector<std::string> &argv) {
  std::string base = basename_of(exe);
  if (base.rfind("python", 0) == 0) {
    for (size_t i = 1; i < argv.size(); ++i) {
      const std::string &a = argv[i];
      if (a == "-m" && i + 1 < argv.size()) return argv[i + 1];
      if (a == "-c") return base + "-c";
      if (a.empty() || a[0] == '-') {
        if (a == "-W" || a == "-X" || a == "-Q") ++i;  // options that take a value
        continue;
      }
      return basename_of(a);
    }
  }
  return base;
}

RunFacts read_run_facts() {
  RunFacts f;
  f.command = read_cmdline();
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string exe_path = n > 0 ? std::string(exe, static_cast<size_t>(n)) : (f.command.empty() ? "" : f.command[0]);
  f.program = program_name(exe_path, f.command);
  if (f.program.empty()) f.program = "program";
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) == 0) f.host = host;
  for (const char *name : {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"}) {
    f.rank = parse_rank(std::getenv(name));
    if (f.rank >= 0) break;
  }
  if (const char *conf = std::getenv("PYTORCH_CUDA_ALLOC_CONF")) f.allocator_env = conf;
  // PyTorch's other switch: with it, every tensor is its own cudaMalloc (no caching allocator).
  // Then, as NAME=value, the other frameworks' switches: JAX's allocator and preallocation, and
  // the CuPy mode `gpuleak run --cupy` set up (the report names the pool that hides objects).
  for (const char *name : {"PYTORCH_NO_CUDA_MEMORY_CACHING", "XLA_PYTHON_CLIENT_ALLOCATOR",
                           "XLA_PYTHON_CLIENT_PREALLOCATE", "GPULEAK_CUPY", "GPULEAK_JAX", "GPULEAK_TORCH"}) {
    const char *value = std::getenv(name);
    if (value && value[0]) f.allocator_env += std::string(f.allocator_env.empty() ? "" : ";") + name + "=" + value;
  }
  return f;
}

bool make_directories(const std::string &dir, std::string *error) {
  // Each level in turn, like mkdir -p; a level that exists must be a directory (or a symlink to
  // one: the user may point GPULEAK_OUT anywhere).
  for (size_t end = dir.find('/', 1);; end = dir.find('/', end + 1)) {
    std::string level = dir.substr(0, end);
    if (!level.empty() && mkdir(level.c_str(), 0755) != 0 && errno != EEXIST) {
      *error = "cannot create " + level + ": " + std::strerror(errno);
      return false;
    }
    if (end == std::string::npos) break;
  }
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *error = "cannot create " + dir + ": " + std::strerror(S_ISDIR(st.st_mode) ? errno : ENOTDIR);
    return false;
  }
  return true;
}

namespace {

// Whether `name` exists in the folder (a file, a symlink, anything).
bool taken(int dir_fd, const std::string &name) {
  struct stat st {};
  return fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT;
}

}  // namespace

int create_capture_file(const std::string &dir, const std::string &stem, CaptureFile *out, std::string *error) {
  if (!make_directories(dir, error)) return -1;
  // The folder as it is now, symlinks resolved, held open: what it is later called (renamed, or
  // swapped for a symlink) changes nothing for the capture or the at-exit report.
  char real[PATH_MAX];
  std::string folder = realpath(dir.c_str(), real) ? std::string(real) : dir;
  int dir_fd = open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir_fd < 0) {
    *error = "cannot open " + folder + ": " + std::strerror(errno);
    return -1;
  }
  dir_fd = move_high(dir_fd);
  std::string safe = sanitize(stem);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    std::string base = safe + (attempt ? "." + std::to_string(attempt) : "");
    // One counter for the capture and what is written beside it: a report or trace left by an
    // earlier process under this name (a PID that came back) is never replaced.
    if (taken(dir_fd, base + ".report.json") || taken(dir_fd, base + ".trace.json")) continue;
    std::string name = base + ".gpuleak";
    int fd = openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) {
      out->path = folder + "/" + name;
      out->name = name;
      out->dir_fd = dir_fd;
      return move_high(fd);
    }
    if (errno != EEXIST) {
      *error = "cannot create " + folder + "/" + name + ": " + std::strerror(errno);
      close(dir_fd);
      return -1;
    }
  }
  *error = "cannot create a capture file in " + folder + ": every name is taken";
  close(dir_fd);
  return -1;
}

}  // namespace gpuleak::core
