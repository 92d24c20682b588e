// `gpuleak run [options] [--] CMD ARGS...`: runs CMD under the shim, with the environment that makes
// it and its children write captures to --out, then turns each new capture into a report.
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include <fstream>

#include <CLI/CLI.hpp>

#include "cli.h"
#include "early_analysis.h"
#include "format/capture_peek.h"
#include "log/log.h"
#include "text/escape.h"
#include "text/input_file.h"
#include "text/paths.h"

#ifndef GPULEAK_CLI_TO_SHIMDIR
#define GPULEAK_CLI_TO_SHIMDIR "../lib"
#endif

namespace gpuleak::cli {

namespace {

uint64_t monotonic_seed() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

std::set<std::string> captures_in(const std::string &dir) {
  std::set<std::string> found;
  DIR *d = opendir(dir.c_str());
  if (!d) return found;
  while (dirent *e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 8 && name.compare(name.size() - 8, 8, ".gpuleak") == 0) found.insert(dir + "/" + name);
  }
  closedir(d);
  return found;
}

// The token a capture's RunInfo carries (GPULEAK_RUN_TOKEN), read from its first bytes only.
std::string run_token_of(const std::string &path) {
  format::CapturePeek peek;
  return format::peek_capture(path, &peek) ? peek.run_token : std::string();
}

// A token no other run shares: the processes of this run (and their children, which inherit the
// environment) write it into their captures.
std::string new_run_token() {
  uint64_t bits[2] = {0, 0};
  std::ifstream random("/dev/urandom", std::ios::binary);
  random.read(reinterpret_cast<char *>(bits), sizeof bits);
  char text[64];
  std::snprintf(text, sizeof text, "%d-%016llx%016llx", static_cast<int>(getpid()),
                static_cast<unsigned long long>(bits[0]), static_cast<unsigned long long>(bits[1] ^ monotonic_seed()));
  return text;
}

// Whether `path` still names the folder held open as `fd` (itself, not a symlink to it).
bool same_folder(int fd, const std::string &path) {
  struct stat held {
  }, now{};
  int again = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  bool same = again >= 0 && fstat(fd, &held) == 0 && fstat(again, &now) == 0 && held.st_dev == now.st_dev &&
              held.st_ino == now.st_ino;
  if (again >= 0) close(again);
  return same;
}

std::string absolute(const std::string &path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd))
    throw UsageError{std::string("cannot read the current directory: ") + std::strerror(errno)};
  return std::string(cwd) + "/" + path;
}

// mkdir -p: every missing level of `dir` (an existing level may be a symlink to a directory).
void make_directories(const std::string &dir) {
  for (size_t end = dir.find('/', 1);; end = dir.find('/', end + 1)) {
    std::string level = dir.substr(0, end);
    if (mkdir(level.c_str(), 0755) != 0 && errno != EEXIST)
      throw UsageError{"cannot create " + level + ": " + std::strerror(errno)};
    if (end == std::string::npos) break;
  }
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UsageError{"cannot create " + dir + ": " + std::strerror(S_ISDIR(st.st_mode) ? errno : ENOTDIR)};
}

// The status that a leak turns a successful run into: --error-exitcode, else GPULEAK_EXITCODE
// (what plain LD_PRELOAD runs use), else 0 (off).
int leak_exit_code(const RunOptions &o) {
  if (o.error_exitcode >= 0) {
    if (o.no_report && o.error_exitcode > 0)
      throw UsageError{"run: --error-exitcode needs the report (drop --no-report)"};
    return o.error_exitcode;
  }
  const char *env = std::getenv("GPULEAK_EXITCODE");
  if (!env || !*env) return 0;
  char *end = nullptr;
  errno = 0;
  long v = std::strtol(env, &end, 10);
  if (errno || *end || v < 0 || v > 255 || !std::isdigit(static_cast<unsigned char>(env[0])))
    throw UsageError{std::string("bad value GPULEAK_EXITCODE=\"") + env + "\" (an exit status, 0-255)"};
  return static_cast<int>(v);
}

// GPULEAK_EARLY_ANALYSIS=0: the capture is analyzed after the program has ended, not while it ends.
bool early_analysis_enabled() {
  const char *env = std::getenv("GPULEAK_EARLY_ANALYSIS");
  if (!env || !*env || std::strcmp(env, "1") == 0) return true;
  if (std::strcmp(env, "0") == 0) return false;
  throw UsageError{std::string("bad value GPULEAK_EARLY_ANALYSIS=\"") + text::printable(env) + "\" (0 or 1)"};
}

pid_t g_child = 0;
void forward(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

bool is_file(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The folder holding the gpuleak Python package, whose _startup/sitecustomize.py installs the
// --loop and --cupy hooks: $GPULEAK_PYTHONDIR, else the installed copy next to this executable
// (<prefix>/lib/gpuleak/python), else the source tree this executable was built from.
std::string python_dir() {
  std::vector<std::string> candidates;
  if (const char *env = std::getenv("GPULEAK_PYTHONDIR"); env && *env) candidates.push_back(env);
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    std::string dir(exe, static_cast<size_t>(n));
    dir = text::dirname_of(dir);
    candidates.push_back(dir + "/../" GPULEAK_INSTALL_PYTHONDIR);
    candidates.push_back(dir + "/../../..");  // the wheel: <site-packages>/gpuleak/_native/bin
  }
  if (*GPULEAK_SOURCE_PYTHONDIR) candidates.push_back(GPULEAK_SOURCE_PYTHONDIR);
  for (const std::string &c : candidates)
    if (is_file(c + "/gpuleak/_startup/sitecustomize.py") && is_file(c + "/gpuleak/_hooks.py")) return c;
  throw UsageError{"cannot find gpuleak's Python package (gpuleak/_startup) for --loop/--cupy; set GPULEAK_PYTHONDIR"};
}

// --loop: FILE:LINE (the file must exist and have that line) or a Python function name.
void check_loop(const std::string &spec) {
  const size_t colon = spec.rfind(':');
  const std::string tail = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (!tail.empty() && tail.find_first_not_of("0123456789") == std::string::npos) {
    const std::string file = spec.substr(0, colon);
    const long line = tail.size() > 9 ? 0 : std::atol(tail.c_str());
    if (file.empty() || line < 1) throw UsageError{"run: --loop " + spec + ": expected FILE:LINE with LINE >= 1"};
    std::string why;
    const int fd = text::open_input(file, &why);  // a FIFO named here would block fopen forever
    FILE *f = fd < 0 ? nullptr : ::fdopen(fd, "r");
    if (!f) {
      if (fd >= 0) ::close(fd);
      throw UsageError{"run: --loop " + spec + ": cannot read " + (fd < 0 ? why : file + ": " + std::strerror(errno))};
    }
    long lines = 0;
    for (int c; (c = std::fgetc(f)) != EOF;) lines += c == '\n';
    std::fclose(f);
    if (line > lines + 1)
      throw UsageError{"run: --loop " + spec + ": " + file + " has " + std::to_string(lines) + " lines"};
    return;
  }
  // A function: its qualified name (Trainer.step, outer.<locals>.inner) or plain name.
  size_t from = 0;
  bool ok = !spec.empty();
  while (ok && from <= spec.size()) {
    size_t dot = spec.find('.', from);
    std::string part = spec.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
    bool ident =
        !part.empty() && !std::isdigit(static_cast<unsigned char>(part[0])) &&
        part.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == std::string::npos;
    ok = ident || part == "<locals>";
    if (dot == std::string::npos) break;
    from = dot + 1;
  }
  if (!ok) throw UsageError{"run: --loop " + spec + ": expected FILE:LINE or a Python function name"};
}

// Puts `dir` first on the variable's path list.
void prepend_path(const char *name, const std::string &dir) {
  std::string value = dir;
  if (const char *old = std::getenv(name); old && *old) value += std::string(":") + old;
  setenv(name, value.c_str(), 1);
}

}  // namespace

std::string find_shim() {
  if (const char *env = std::getenv("GPULEAK_LIB")) return env;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) throw UsageError{"cannot locate libgpuleak.so (set GPULEAK_LIB)"};
  std::string dir(exe, static_cast<size_t>(n));
  dir = text::dirname_of(dir);
  for (const std::string &candidate :
       {dir + "/../lib/libgpuleak.so", dir + "/" GPULEAK_CLI_TO_SHIMDIR "/libgpuleak.so", dir + "/libgpuleak.so"}) {
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return candidate;
  }
  throw UsageError{"cannot find libgpuleak.so next to " + dir + " (set GPULEAK_LIB)"};
}

int run_command(const RunOptions &o) {
  if (o.command.empty()) throw UsageError{"run: no command given (gpuleak run [options] CMD ARGS...)"};
  if (!o.loop.empty()) check_loop(o.loop);
  std::string shim = absolute(find_shim());
  int leak_exit = leak_exit_code(o);
  bool early = !o.no_report && early_analysis_enabled();
  // The Python start-up hooks, found before anything is changed (a missing package is a usage error).
  // PyTorch's tensors inside its default caching allocator come through the same hook (issue #14);
  // asked for by default, so a missing package there only means the segment view.
  // CuPy's arrays and JAX's live arrays in their default modes come through it too (issue #27).
  const bool asked = !o.loop.empty() || (o.cupy != "default" && o.cupy != "segments") || o.jax == "per-buffer";
  const bool torch_tracker = o.torch == "default";
  // Who keeps each leak (issue #30): the same hook walks the references at exit and at an OOM.
  const bool retention = o.retention != "off";
  std::string python;
  if (asked) {
    python = absolute(python_dir());
  } else {
    try {
      python = absolute(python_dir());
    } catch (const UsageError &) {
    }
  }
  const bool hooks = !python.empty();
  std::string out = absolute(o.out_dir);
  make_directories(out);
  // The folder itself, symlinks resolved, held open: the report after the run refuses to read or
  // write through a folder that was swapped meanwhile (same_folder).
  char real[PATH_MAX];
  if (realpath(out.c_str(), real)) out = real;
  const int out_fd = open(out.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (out_fd < 0) throw UsageError{"cannot open " + out + ": " + std::strerror(errno)};
  std::set<std::string> before = captures_in(out);

  std::string preload = shim;
  if (const char *old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  setenv("GPULEAK_OUT", out.c_str(), 1);
  setenv("GPULEAK_UNDER_RUN", "1", 1);
  const std::string token = new_run_token();
  setenv("GPULEAK_RUN_TOKEN", token.c_str(), 1);
  setenv("NVTX_INJECTION64_PATH", shim.c_str(), 0);
  if (o.stack_depth >= 0) setenv("GPULEAK_STACK_DEPTH", std::to_string(o.stack_depth).c_str(), 1);
  if (o.cupti) setenv("GPULEAK_CUPTI", "1", 1);
  if (o.quiet) setenv("GPULEAK_QUIET", "1", 1);
  // PyTorch's caching allocator shows gpuleak whole segments; these modes make every tensor its
  // own allocation (docs/conformance.md measured both on PyTorch 2.11).
  if (o.torch == "per-tensor") {
    setenv("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync", 1);
  } else if (o.torch == "no-caching") {
    setenv("PYTORCH_NO_CUDA_MEMORY_CACHING", "1", 1);
  }
  // JAX: its BFC allocator preallocates a region and hands out buffers inside it; the platform
  // allocator makes every buffer its own cudaMalloc/cudaFree (jax.dev "GPU memory allocation").
  // Which per-buffer allocator the installed JAX has is read by the start-up hook (gpuleak._jax:
  // address, else platform), which sets XLA_PYTHON_CLIENT_ALLOCATOR before JAX starts.
  if (o.jax == "per-buffer") setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "false", 1);
  if (o.jax != "default") setenv("GPULEAK_JAX", o.jax.c_str(), 1);
  // gpuleak's own allocator switches, so that the report never blames the program for their cost.
  if (o.torch == "per-tensor" || o.torch == "no-caching") setenv("GPULEAK_TORCH", o.torch.c_str(), 1);
  // CuPy has no variable for its pool: the start-up hook sets the allocator when cupy is imported.
  // --loop: the same hook marks the passes of a line (or the calls of a function).
  if (hooks) {
    prepend_path("PYTHONPATH", python);
    prepend_path("PYTHONPATH", python + "/gpuleak/_startup");
  }
  if (o.cupy != "default") setenv("GPULEAK_CUPY", o.cupy.c_str(), 1);
  if (torch_tracker && hooks) setenv("GPULEAK_TORCH_TRACKER", "1", 0);
  if (!o.loop.empty()) setenv("GPULEAK_PY_LOOP", o.loop.c_str(), 1);
  if (!retention) setenv("GPULEAK_RETENTION", "0", 1);
  // --user-code: the program's loop observer (gpuleak._observe) draws the user's code with the same
  // folders as the report after it, which reads them from the flag and the variable alike.
  if (!o.read.user_code.empty()) {
    std::string roots = std::getenv("GPULEAK_USER_CODE") ? std::getenv("GPULEAK_USER_CODE") : "";
    for (const std::string &root : o.read.user_code) roots += (roots.empty() ? "" : ":") + root;
    setenv("GPULEAK_USER_CODE", roots.c_str(), 1);
  }

  GPULEAK_LOG_DEBUG("run: LD_PRELOAD=%s GPULEAK_OUT=%s; running %s (%zu arguments)", preload.c_str(), out.c_str(),
                    o.command[0].c_str(), o.command.size() - 1);
  std::vector<char *> argv;
  for (const std::string &a : o.command) argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  // gpuleak's own writes (the summary, the report's lines) to a stderr whose reader has gone must
  // not end `gpuleak run` with SIGPIPE; the program gets the disposition gpuleak started with.
  struct sigaction ignore {
  }, started_with{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &started_with);
  // The program's own capture is analyzed while the process ends (early_analysis.h), with the read
  // options of the report after it; a bad read setting is said by that report, as before.
  output::ReadOptions early_options;
  try {
    if (early) early_options = read_options(o.read);
  } catch (const UsageError &) {
    early = false;
  }
  EarlyAnalysis analysis(out, token, early_options, early);
  g_child = fork();
  if (g_child < 0) throw UsageError{std::string("fork failed: ") + std::strerror(errno)};
  if (g_child == 0) {
    sigaction(SIGPIPE, &started_with, nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "gpuleak: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  signal(SIGINT, forward);
  signal(SIGTERM, forward);
  signal(SIGHUP, forward);
  int status = analysis.wait(g_child);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

  if (!same_folder(out_fd, out)) {
    GPULEAK_LOG_ERROR(
        "run: %s is not the folder it was when the run started (renamed, or now a symlink); "
        "nothing is read or written through it: analyze the captures with gpuleak report",
        text::printable(out).c_str());
    return code;
  }
  std::set<std::string> after = captures_in(out);
  ReportOptions report;  // its read options: the variables (GPULEAK_ITERATION_RANGE, GPULEAK_USER_CODE...)
  // Only this run's processes: a --out shared with other runs holds their captures too.
  for (const std::string &path : after)
    if (!before.count(path) && run_token_of(path) == token) report.inputs.push_back(path);
  GPULEAK_LOG_DEBUG("run: %s exited with status %d; %zu new captures in %s", o.command[0].c_str(), code,
                    report.inputs.size(), out.c_str());
  report.read = o.read;
  report.quiet = o.quiet;
  report.fail_on_leak = leak_exit > 0;
  std::map<std::string, PreparedReport> prepared = analysis.take();
  report.prepared = &prepared;
  bool leak = false;
  if (!o.no_report && !report.inputs.empty()) {
    try {
      leak = report_command(report) == 1;
    } catch (const UsageError &e) {
      GPULEAK_LOG_ERROR("%s", e.message.c_str());
    }
  }
  // Like GPULEAK_EXITCODE under plain LD_PRELOAD: a program that failed on its own keeps its status.
  return leak && code == 0 ? leak_exit : code;
}

void drop_run_separator(const CLI::App &app, std::vector<char *> *args) {
  if (args->size() < 2 || std::strcmp((*args)[1], "run") != 0) return;
  std::vector<const CLI::App *> found = app.get_subcommands([](const CLI::App *c) { return c->get_name() == "run"; });
  if (found.empty()) return;
  for (size_t i = 2; i < args->size(); ++i) {
    std::string word = (*args)[i];
    if (word == "--") {
      args->erase(args->begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
    if (word.size() < 2 || word[0] != '-') return;  // the command: a `--` among its words stays its own
    const CLI::Option *opt = found[0]->get_option_no_throw(word.substr(0, word.find('=')));
    if (opt && opt->get_items_expected_min() > 0 && word.find('=') == std::string::npos) ++i;  // --out DIR
  }
}

void register_run(CLI::App &app, Action *action) {
  auto o = std::make_shared<RunOptions>();
  auto *cmd = app.add_subcommand("run",
                                 "Run a program under gpuleak (gpuleak run [options] [--] CMD ARGS...); "
                                 "exits with the program's status");
  cmd->add_option("--out", o->out_dir, "Folder for captures, reports and traces")->capture_default_str();
  cmd->add_option("--stack-depth", o->stack_depth, "Native frames per stack (0-128, default 32)")
      ->check(CLI::Range(0, 128));
  cmd->add_flag("--cupti", o->cupti, "Use CUPTI too (cross-check, GPU activity); off by default");
  cmd->add_flag("--quiet", o->quiet, "No summary on stderr");
  cmd->add_option("--torch", o->torch,
                  "PyTorch allocator: default (its caching allocator, each tensor seen through the "
                  "allocator's trace), segments (the caching allocator's segments only), per-tensor "
                  "(backend:cudaMallocAsync) or no-caching (PYTORCH_NO_CUDA_MEMORY_CACHING=1)")
      ->check(CLI::IsMember({"default", "segments", "per-tensor", "no-caching"}));
  cmd->add_option("--jax", o->jax,
                  "JAX allocator: default (its arena; the live arrays sampled at each iteration boundary, "
                  "exit and out-of-memory), segments (the arena only), or per-buffer "
                  "(XLA_PYTHON_CLIENT_ALLOCATOR=address, or platform where the installed JAX lacks it; "
                  "XLA_PYTHON_CLIENT_PREALLOCATE=false)")
      ->check(CLI::IsMember({"default", "segments", "per-buffer"}));
  cmd->add_option("--cupy", o->cupy,
                  "CuPy allocator, set at start-up: default (its memory pool, each array seen through its "
                  "allocator), segments (the pool's chunks only), per-array (no pool: "
                  "cupy.cuda.set_allocator(None)) or async (stream-ordered pool, cudaMallocAsync)")
      ->check(CLI::IsMember({"default", "segments", "per-array", "async"}));
  cmd->add_option("--retention", o->retention,
                  "Python: the reference path that keeps each leak alive (who keeps it), found at exit and at "
                  "an out-of-memory within GPULEAK_RETENTION_BUDGET seconds (default 2): on (default) or off")
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_option("--loop", o->loop,
                  "Python: mark each pass of FILE:LINE (a loop head or any line), or each call of a function "
                  "NAME, as one iteration, with no code change");
  add_shared_read_flags(cmd, &o->read);
  cmd->add_flag("--no-report", o->no_report, "Only capture; analyze later with gpuleak report");
  cmd->add_option("--error-exitcode", o->error_exitcode,
                  "Exit with N when the report finds a leak and the program itself exited 0 (default: "
                  "GPULEAK_EXITCODE, else off)")
      ->check(CLI::Range(0, 255));
  // The first word that is not one of run's options starts the command, and every word after it is
  // the command's (`gpuleak run python train.py --lr 0.1`, as with memray run, time or nohup); `--`
  // before the command is still accepted (drop_run_separator). CLI11 hands the words over as remaining().
  cmd->prefix_command();
  cmd->callback([o, cmd, action] {
    o->command = cmd->remaining();
    *action = [o] {
      if (!o->command.empty() && o->command[0].size() > 1 && o->command[0][0] == '-')
        throw UsageError{"run: unknown option " + o->command[0] + " (see gpuleak run --help)"};
      return run_command(*o);
    };
  });
}

}  // namespace gpuleak::cli
