# The Debian package (cpack -G DEB in a build configured for /usr; scripts/build-deb.sh does both):
# the install tree above under FHS paths. With GPULEAK_PORTABLE_CLI the CLI needs only glibc, and
# the shim links libstdc++ statically anyway, so Depends is computed by dpkg-shlibdeps from what the
# binaries really link (libc6 only, for a portable build).
set(CPACK_PACKAGE_NAME gpuleak)
set(CPACK_PACKAGE_VENDOR "gpuleak")
set(CPACK_PACKAGE_CONTACT "gpuleak maintainers <dev@gpuleak.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GPU memory-leak and OOM profiler for CUDA programs")
set(CPACK_PACKAGE_DESCRIPTION
    "gpuleak runs a CUDA program (PyTorch, JAX, or native) under a preloaded shim, records every\n"
    "device allocation with its stack, and reports leaks across iterations, the peak and OOMs.")
string(JOIN "" CPACK_PACKAGE_DESCRIPTION ${CPACK_PACKAGE_DESCRIPTION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_FILE_NAME "${CPACK_PACKAGE_NAME}_${PROJECT_VERSION}_amd64")
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The Python helpers are optional: the CLI and shim work without Python.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3, python3-pytest")
# The shim dlopens libunwind for fast stacks and falls back on _Unwind_Backtrace without it.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libunwind8")
set(CPACK_STRIP_FILES ON)
set(CPACK_GENERATOR DEB)
include(CPack)
