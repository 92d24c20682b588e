# GPULEAK_INSTALL_PYTHONDIR: where `cmake --install` puts the gpuleak Python package, relative to
# the prefix, chosen so that the python3 found here imports it without PYTHONPATH:
#   - a site folder of that interpreter under the prefix (Debian: /usr -> lib/python3/dist-packages,
#     /usr/local -> lib/python3.11/dist-packages);
#   - else lib/python3.X/site-packages, what a venv or a plain CPython built with that prefix reads
#     (any other prefix: add <prefix>/lib/python3.X/site-packages to PYTHONPATH; docs/install.md).
if(DEFINED GPULEAK_INSTALL_PYTHONDIR)
  return()
endif()
find_package(Python3 COMPONENTS Interpreter)
set(_gpuleak_pydir "")
if(Python3_Interpreter_FOUND)
  execute_process(
    COMMAND ${Python3_EXECUTABLE} -c [=[
import os, site, sys, sysconfig
prefix = os.path.normpath(sys.argv[1])
for d in site.getsitepackages():
    rel = os.path.relpath(d, prefix)
    if rel.startswith("lib") and not rel.startswith(".."):
        print(rel)
        sys.exit(0)
print("lib/python%d.%d/site-packages" % sys.version_info[:2])
]=] ${CMAKE_INSTALL_PREFIX}
    OUTPUT_VARIABLE _gpuleak_pydir OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _gpuleak_pyrc)
  if(NOT _gpuleak_pyrc EQUAL 0)
    set(_gpuleak_pydir "")
  endif()
endif()
if(_gpuleak_pydir STREQUAL "")
  set(_gpuleak_pydir lib/python3/site-packages)
endif()
set(GPULEAK_INSTALL_PYTHONDIR ${_gpuleak_pydir} CACHE STRING "Where the gpuleak Python package is installed")
unset(_gpuleak_pydir)
unset(_gpuleak_pyrc)
