#include "core/python_observer.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace gpuleak::core {

namespace python_detail {
std::atomic<bool> g_observer_asked{false};
}  // namespace python_detail

namespace {

// The Python code the pending call runs, built at start-up (python_observer_configure): the hook
// that schedules it then looks at no file and builds nothing.
std::string *g_program = nullptr;

bool is_file(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The folder that holds the gpuleak package: the install's (GPULEAK_SHIM_TO_PYTHON from the
// shim's folder), a wheel's (the shim is gpuleak/_native/lib/libgpuleak.so), or the source tree
// this build came from. "" when none has the observer.
std::string package_parent() {
  Dl_info self{};
  std::string dir;
  if (dladdr(reinterpret_cast<void *>(&package_parent), &self) && self.dli_fname) {
    dir = self.dli_fname;
    size_t slash = dir.rfind('/');
    dir = slash == std::string::npos ? std::string(".") : dir.substr(0, slash);
  }
  const std::string candidates[] = {
      dir.empty() ? std::string() : dir + "/" GPULEAK_SHIM_TO_PYTHON,
      dir.empty() ? std::string() : dir + "/../../..",
      GPULEAK_SOURCE_PYTHON_DIR,
  };
  for (const std::string &c : candidates)
    if (!c.empty() && is_file(c + "/gpuleak/_observe.py")) return c;
  return {};
}

std::string hex(const std::string &s) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) out += digits[c >> 4], out += digits[c & 15];
  return out;
}

// One expression statement: nothing is bound in __main__. The package is the one the program can
// import when there is one (gpuleak run's, an installed wheel), else the one next to the shim,
// loaded from its path without touching sys.path. Without either (a shim copied alone) the loops
// are not observed, and the capture's Observer record says why: no stderr line, it is no failure.
std::string program_for(const std::string &parent) {
  const std::string body =
      "import sys\n"
      "def _gpuleak_observe(parent):\n"
      "    try:\n"
      "        import importlib.util\n"
      "        if 'gpuleak' not in sys.modules and importlib.util.find_spec('gpuleak') is None:\n"
      "            if not parent:\n"
      "                import ctypes\n"
      "                ctypes.CDLL(None).gpuleak_api_observer(2, b\"gpuleak's Python package is neither importable \"\n"
      "                    b\"nor next to the shim: loops not observed\")\n"
      "                return\n"
      "            spec = importlib.util.spec_from_file_location('gpuleak', parent + '/gpuleak/__init__.py',\n"
      "                                                          submodule_search_locations=[parent + '/gpuleak'])\n"
      "            module = importlib.util.module_from_spec(spec)\n"
      "            sys.modules['gpuleak'] = module\n"
      "            try:\n"
      "                spec.loader.exec_module(module)\n"
      "            except BaseException:\n"
      "                del sys.modules['gpuleak']\n"
      "                raise\n"
      "        from gpuleak import _observe\n"
      "        _observe.install_from_shim()\n"
      "    except Exception as e:\n"
      "        sys.stderr.write('gpuleak: the Python loop observer could not start (%s: %s); iterations are "
      "inferred\\n' % (type(e).__name__, e))\n"
      "        return\n"
      "    try:\n"
      "        from gpuleak import _hooks\n"
      "        _hooks.install_from_shim()\n"
      "    except Exception as e:\n"
      "        sys.stderr.write('gpuleak: the CuPy/JAX hooks could not start (%s: %s); the report shows their "
      "pools\\n' % (type(e).__name__, e))\n"
      "_gpuleak_observe(bytes.fromhex('" +
      hex(parent) + "').decode('utf-8', 'surrogateescape'))\n";
  return "__import__('builtins').exec(bytes.fromhex('" + hex(body) + "').decode(), {'__name__': 'gpuleak_observer'})";
}

int run_program(void *) {
  auto run = reinterpret_cast<int (*)(const char *)>(dlsym(RTLD_DEFAULT, "PyRun_SimpleString"));
  if (run && g_program) run(g_program->c_str());  // the exec'd code catches its own errors
  return 0;                                       // never an exception into the program
}

}  // namespace

namespace python_detail {
void schedule_observer() {
  if (g_observer_asked.exchange(true)) return;
  auto add = reinterpret_cast<int (*)(int (*)(void *), void *)>(dlsym(RTLD_DEFAULT, "Py_AddPendingCall"));
  if (!add || !dlsym(RTLD_DEFAULT, "PyRun_SimpleString")) return;
  if (g_program) add(&run_program, nullptr);
}
}  // namespace python_detail

const char *python_observer_configure() {
  // GPULEAK_PY_OBSERVE=0 is read by the observer itself (it records that observation is off): the
  // pending call still runs, for CuPy's and JAX's hooks.
  const char *v = std::getenv("GPULEAK_PY_OBSERVE");
  if (v && *v && std::strcmp(v, "1") != 0 && std::strcmp(v, "0") != 0) return "GPULEAK_PY_OBSERVE must be 0 or 1";
  // Three stat(2) calls at start-up, in every process under the preload, rather than a file
  // lookup inside the hook that first sees Python frames. Without a package next to the shim the
  // program imports the one on its path (gpuleak run's), or says in one line that there is none.
  g_program = new std::string(program_for(package_parent()));  // never freed: the call may run late
  return "";
}

}  // namespace gpuleak::core
