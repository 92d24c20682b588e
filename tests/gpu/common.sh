# Shared by the tests/gpu/run_*.sh scripts (sourced, not run).

# Exits 77 (CTest's "skipped") with one line when this machine has no NVIDIA GPU.
skip_without_gpu() {
  if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "SKIPPED: no NVIDIA GPU"
    exit 77
  fi
}

# use_hostlibs GPULEAK HOSTLIBS_DIR: when the CLI does not start (the GPU machine lacks libdw),
# puts the libraries tests/gpu/build.sh bundled on LD_LIBRARY_PATH. Returns 0 when it did.
use_hostlibs() {
  if ! "$1" --help >/dev/null 2>&1 && [[ -d $2 ]]; then
    export LD_LIBRARY_PATH="$2${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    return 0
  fi
  return 1
}
