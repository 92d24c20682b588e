#include "process.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include <gtest/gtest.h>

namespace gpuleak::test {

Result run(const std::vector<std::string> &argv, const std::map<std::string, std::string> &env) {
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) || pipe(err_pipe)) throw std::runtime_error("pipe");
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    close(out_pipe[0]);
    close(err_pipe[0]);
    for (const auto &[k, v] : env) {
      if (v.empty())
        unsetenv(k.c_str());
      else
        setenv(k.c_str(), v.c_str(), 1);
    }
    std::vector<char *> args;
    for (const auto &a : argv) args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  Result r;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

std::string make_temp_dir(const std::string &name) {
  const char *base = std::getenv("TMPDIR");
  std::string dir = std::string(base ? base : "/tmp") + "/gpuleak-test-" + name + "-XXXXXX";
  if (!mkdtemp(dir.data())) throw std::runtime_error("mkdtemp");
  return dir;
}

std::vector<std::string> files_with_suffix(const std::string &dir, const std::string &suffix) {
  std::vector<std::string> found;
  DIR *d = opendir(dir.c_str());
  if (!d) return found;
  while (dirent *e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
      found.push_back(dir + "/" + n);
  }
  closedir(d);
  return found;
}

std::map<std::string, std::string> shim_env(const std::string &out) {
  return {{"LD_PRELOAD", GPULEAK_SHIM_PATH},
          {"GPULEAK_OUT", out},
          {"LD_LIBRARY_PATH", GPULEAK_FAKE_CUDA_DIR},
          {"GPULEAK_QUIET", ""},
          {"NVTX_INJECTION64_PATH", ""}};
}

std::string program(const std::string &name) { return std::string(GPULEAK_PROGRAMS_DIR) + "/" + name; }

format::Capture read_only_capture(const std::string &dir) {
  auto files = files_with_suffix(dir, ".gpuleak");
  EXPECT_EQ(files.size(), 1u) << "captures in " << dir;
  format::Capture c;
  std::string error;
  if (files.empty()) return c;
  EXPECT_TRUE(format::read_capture_file(files[0], &c, &error)) << error;
  return c;
}

Counts count(const format::Capture &c) {
  Counts n;
  using format::Op;
  for (const auto &m : c.memory) {
    bool ok = m.result == 0;
    if (m.op == static_cast<uint8_t>(Op::kAlloc)) {
      if (!ok)
        ++n.failed;
      else if (m.flags & format::kFlagGraphReservation)
        ++n.graph;
      else if (m.kind != static_cast<uint8_t>(format::Kind::kImported))
        ++n.allocs;
    } else if (m.op == static_cast<uint8_t>(Op::kFree) && ok && !(m.flags & format::kFlagUnknownPointer)) {
      ++n.frees;
    }
  }
  return n;
}

}  // namespace gpuleak::test
