#!/usr/bin/env bash
# The main job: build gpuleak, run a leaky sample program under `gpuleak run`, print the report.
# With an NVIDIA GPU and nvcc, the sample is a real CUDA program built with nvcc's defaults
# (static runtime); without one, the same loop runs on the fake CUDA of tests/fake_cuda.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Only what the demo runs: the CLI and the shim, and without a GPU the fake CUDA and the sample
# (scripts/test.sh builds the rest, in ./build). The demo builds into its own folder with the Demo
# build type: -Og, no debug info, the CLI's libraries compiled in unity batches
# (GPULEAK_UNITY_READERS). On 2 cores the RelWithDebInfo build of these targets took 588 CPU s,
# the Demo build takes about 265 (docs/benchmarks.md "The demo's build"). BUILD_DIR and
# BUILD_TYPE choose another.
export BUILD_DIR=${BUILD_DIR:-build-demo} BUILD_TYPE=${BUILD_TYPE:-Demo}
nvcc=${GPULEAK_CUDA_ROOT:-/usr/local/cuda}/bin/nvcc
gpu=0
nvidia-smi -L >/dev/null 2>&1 && [ -x "$nvcc" ] && gpu=1
if [ "$gpu" = 1 ]; then
  scripts/build.sh gpuleak gpuleak_cli
else
  scripts/build.sh gpuleak gpuleak_cli prog_leaky_static fake_cuda_driver fake_nvml
fi
build=$BUILD_DIR
out=$(mktemp -d "${TMPDIR:-/tmp}/gpuleak-demo-XXXXXX")
if [ "$gpu" = 1 ]; then
  echo "== real GPU: $(nvidia-smi -L | head -n 1)"
  "$nvcc" -g -lineinfo -o "$build/leaky_sample" examples/leaky_sample.cu
  sample=("$build/leaky_sample" 200)
else
  echo "== no GPU here: running the sample on the fake CUDA (tests/fake_cuda)"
  export LD_LIBRARY_PATH="$PWD/$build/fake_cuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  sample=("$build/programs/prog_leaky_static" 200)
fi
echo "== gpuleak run --out $out -- ${sample[*]}"
"$build/bin/gpuleak" run --out "$out" -- "${sample[@]}"
report=$(ls "$out"/*.report.json | head -n 1)
echo "== the leak, from $report:"
python3 - "$report" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("verdict:", r["verdict"], "| iterations from:", r["iteration_source"])
for leak in r["leaks"]:
    print(f"  {leak['bytes_per_iteration'] / 2**20:.2f} MiB per iteration, {leak['live_count']} allocations live, "
          f"first at iteration {leak['first_iteration']}, confidence {leak['confidence']:.2f}")
    for f in leak["stack"][:4]:
        print(f"    at {f.get('function') or '?'} ({(f.get('file') or '?').split('/')[-1]}:{f.get('line') or 0})")
PY
