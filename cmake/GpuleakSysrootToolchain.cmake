# A CMake toolchain file for the portable builds (the wheel, the Debian package): the host's GCC,
# glibc's headers and libraries from the sysroot that scripts/glibc-sysroot.sh lays out (Debian 11,
# glibc 2.31). What GCC 12's own static runtime needs from a newer glibc is provided by
# src/compat/glibc_compat.c (GPULEAK_GLIBC_COMPAT), and tests/packaging/glibc_symbols.py proves the
# result: no symbol version newer than the wheel's tag.
#
#   cmake -DCMAKE_TOOLCHAIN_FILE=cmake/GpuleakSysrootToolchain.cmake -DGPULEAK_SYSROOT=DIR ...
#
# GPULEAK_SYSROOT defaults to build-sysroot/bullseye in this checkout.
if(NOT GPULEAK_SYSROOT)
  set(GPULEAK_SYSROOT "${CMAKE_CURRENT_LIST_DIR}/../build-sysroot/bullseye")
endif()
get_filename_component(GPULEAK_SYSROOT "${GPULEAK_SYSROOT}" ABSOLUTE)
if(NOT EXISTS "${GPULEAK_SYSROOT}/usr/include/stdio.h")
  message(FATAL_ERROR "GpuleakSysrootToolchain: no sysroot at ${GPULEAK_SYSROOT} (scripts/glibc-sysroot.sh lays it out)")
endif()
# try_compile projects see these too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES GPULEAK_SYSROOT)

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_SYSROOT "${GPULEAK_SYSROOT}")
# Debian's GCC looks for its start files and libraries in its own prefix (/usr/lib/x86_64-linux-gnu)
# before the sysroot's: -B and -L put the sysroot's crt1.o, libc.so and libpthread.so first.
set(_gpuleak_multiarch "${GPULEAK_SYSROOT}/usr/lib/x86_64-linux-gnu")
foreach(_kind EXE SHARED MODULE)
  set(CMAKE_${_kind}_LINKER_FLAGS_INIT
    "-B${_gpuleak_multiarch}/ -L${_gpuleak_multiarch} -L${GPULEAK_SYSROOT}/lib/x86_64-linux-gnu")
endforeach()
unset(_gpuleak_multiarch)

# Libraries, headers and packages from the sysroot only (the header-only ones are linked in
# there); programs (pkg-config, the compiler) from the host.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${GPULEAK_SYSROOT}")
set(ENV{PKG_CONFIG_LIBDIR} "${GPULEAK_SYSROOT}/usr/lib/x86_64-linux-gnu/pkgconfig:${GPULEAK_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

set(GPULEAK_GLIBC_COMPAT ON CACHE BOOL "Provide what GCC's static runtime needs from a newer glibc (src/compat)")
