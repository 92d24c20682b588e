# gpuleakConfig.cmake: find_package(gpuleak) support, for projects that gate their own tests.
#
#   find_package(gpuleak 0.1 REQUIRED)      # -DCMAKE_PREFIX_PATH=<prefix> or -Dgpuleak_DIR=...
#   gpuleak_add_test(NAME ... COMMAND ...)  # GpuleakTest.cmake
#
# Defines:
#   gpuleak::cli          imported executable: the gpuleak command (run, report, check, diff, ...)
#   gpuleak::shim         imported shared library libgpuleak.so: LD_PRELOAD it, never link it
#   gpuleak::api          interface target for include/gpuleak/gpuleak.h (the header-only C API:
#                         gpuleak_iteration_begin/end, gpuleak_mark; needs only libdl)
#   GPULEAK_EXECUTABLE, GPULEAK_LIBRARY, GPULEAK_INCLUDE_DIR
#   gpuleak_add_test()    see GpuleakTest.cmake
#
# Two layouts are recognized:
#   install tree  <prefix>/lib/cmake/gpuleak/gpuleakConfig.cmake, <prefix>/bin/gpuleak,
#                 <prefix>/@GPULEAK_INSTALL_SHIMDIR@/libgpuleak.so, <prefix>/include/gpuleak/gpuleak.h
#   build tree    <build>/gpuleakConfig.cmake beside <build>/bin and <build>/lib, with
#                 <build>/gpuleakBuildTree.cmake naming the source tree (gpuleak_DIR=<build>)

if(EXISTS "${CMAKE_CURRENT_LIST_DIR}/gpuleakBuildTree.cmake")
  include("${CMAKE_CURRENT_LIST_DIR}/gpuleakBuildTree.cmake")  # sets _gpuleak_source_dir
  set(_gpuleak_prefix "${CMAKE_CURRENT_LIST_DIR}")
  set(_gpuleak_include "${_gpuleak_source_dir}/include")
  set(_gpuleak_shimdir lib)
else()
  get_filename_component(_gpuleak_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
  set(_gpuleak_include "${_gpuleak_prefix}/include")
  set(_gpuleak_shimdir "@GPULEAK_INSTALL_SHIMDIR@")  # GPULEAK_INSTALL_SHIMDIR when configured
endif()

set(GPULEAK_EXECUTABLE "${_gpuleak_prefix}/bin/gpuleak")
set(GPULEAK_LIBRARY "${_gpuleak_prefix}/${_gpuleak_shimdir}/libgpuleak.so")
set(GPULEAK_INCLUDE_DIR "${_gpuleak_include}")

set(gpuleak_FOUND TRUE)
foreach(_gpuleak_file "${GPULEAK_EXECUTABLE}" "${GPULEAK_LIBRARY}" "${GPULEAK_INCLUDE_DIR}/gpuleak/gpuleak.h")
  if(NOT EXISTS "${_gpuleak_file}")
    set(gpuleak_FOUND FALSE)
    set(gpuleak_NOT_FOUND_MESSAGE "gpuleak: ${_gpuleak_file} is missing (build or install gpuleak first)")
  endif()
endforeach()

if(gpuleak_FOUND)
  if(NOT TARGET gpuleak::cli)
    add_executable(gpuleak::cli IMPORTED)
    set_target_properties(gpuleak::cli PROPERTIES IMPORTED_LOCATION "${GPULEAK_EXECUTABLE}")
  endif()
  if(NOT TARGET gpuleak::shim)
    add_library(gpuleak::shim SHARED IMPORTED)
    set_target_properties(gpuleak::shim PROPERTIES IMPORTED_LOCATION "${GPULEAK_LIBRARY}" IMPORTED_NO_SONAME TRUE)
  endif()
  if(NOT TARGET gpuleak::api)
    add_library(gpuleak::api INTERFACE IMPORTED)
    set_target_properties(gpuleak::api PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${GPULEAK_INCLUDE_DIR}"
                                                  INTERFACE_LINK_LIBRARIES "${CMAKE_DL_LIBS}")
  endif()
  include("${CMAKE_CURRENT_LIST_DIR}/GpuleakTest.cmake")
endif()

unset(_gpuleak_prefix)
unset(_gpuleak_include)
unset(_gpuleak_shimdir)
unset(_gpuleak_file)
