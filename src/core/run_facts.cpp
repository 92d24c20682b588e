#include "core/run_facts.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace gpuleak::core {

namespace {

std::string basename_of(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

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
                           "XLA_PYTHON_CLIENT_PREALLOCATE", "GPULEAK_CUPY"}) {
    const char *value = std::getenv(name);
    if (value && value[0]) f.allocator_env += std::string(f.allocator_env.empty() ? "" : ";") + name + "=" + value;
  }
  return f;
}

int create_capture_file(const std::string &dir, const std::string &stem, std::string *path, std::string *error) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    *error = "cannot create " + dir + ": " + std::strerror(errno);
    return -1;
  }
  std::string safe = sanitize(stem);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    std::string name = safe + (attempt ? "." + std::to_string(attempt) : "") + ".gpuleak";
    std::string full = dir + "/" + name;
    int fd = open(full.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) {
      *path = full;
      return fd;
    }
    if (errno != EEXIST) {
      *error = "cannot create " + full + ": " + std::strerror(errno);
      return -1;
    }
  }
  *error = "cannot create a capture file in " + dir + ": every name is taken";
  return -1;
}

}  // namespace gpuleak::core
