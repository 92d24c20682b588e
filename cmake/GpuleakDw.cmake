# gpuleak::dw, what the symbolizer and the doctor link for DWARF and ELF: the shared libdw and
# libelf normally; with GPULEAK_PORTABLE_CLI the static archives of Debian's -dev packages, with
# the compression libraries libdw reads debug sections through (pkg-config --static libdw), so
# the CLI runs where elfutils is not installed. Order matters for static archives: each before
# what it uses.
add_library(gpuleak_dw INTERFACE)
add_library(gpuleak::dw ALIAS gpuleak_dw)
if(NOT GPULEAK_PORTABLE_CLI)
  target_link_libraries(gpuleak_dw INTERFACE PkgConfig::DW)
  return()
endif()
target_include_directories(gpuleak_dw INTERFACE ${DW_INCLUDE_DIRS})
set(_gpuleak_dw_archives)
foreach(_lib dw elf bz2 lzma z)
  find_library(GPULEAK_LIB${_lib}_A NAMES lib${_lib}.a)
  if(NOT GPULEAK_LIB${_lib}_A)
    message(FATAL_ERROR "GPULEAK_PORTABLE_CLI: lib${_lib}.a not found (scripts/install-deps.sh installs it)")
  endif()
  list(APPEND _gpuleak_dw_archives ${GPULEAK_LIB${_lib}_A})
endforeach()
target_link_libraries(gpuleak_dw INTERFACE ${_gpuleak_dw_archives} Threads::Threads)
unset(_gpuleak_dw_archives)
