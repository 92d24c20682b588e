#!/usr/bin/env bash
# The loop shapes of issue #26 on a real GPU, with no marks (tests/gpu/observed_loops.py): a JAX
# loop of one jitted call per step (XLA_PYTHON_CLIENT_ALLOCATOR=platform, `--jax per-buffer`, and
# JAX's default arena, its live arrays sampled at each observed pass), a torch `while True` loop to
# an out-of-memory error, a torch serving loop (requests, tokens, layers), and (issue #33) a
# training loop then an evaluation loop, a handler on 4 worker threads, each leaking and clean,
# under `gpuleak run`; then a pytest run of test_gpu_suite.py, one test leaking among clean ones
# (`gpuleak check` exits 1 naming it).
#
#   tests/gpu/run_observed_loops.sh BUILD_DIR [OUT_DIR]
#
# check_framework_case.py judges each report against what the program measured: iteration_source
# observed (Python 3.12+; python_loop is accepted on 3.10/3.11 only), verdict leak with the
# headline at the program's `# @keep-SHAPE` line and bytes_per_iteration within 10 % of the
# program's own figure (per step; per request for the serving loop), clean stays clean. Prints
# PASS/FAIL/SKIP per case into OUT_DIR/observed.log (default $OUT/observed when $OUT is set, else
# BUILD_DIR/gpu-observed). ONLY=REGEX runs the matching cases. Exit status: 1 on any FAIL, 77 without
# a GPU or when every case was SKIP, 2 on bad usage, else 0. PYTHON picks the interpreter (python3).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/common.sh"
if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 BUILD_DIR [OUT_DIR]" >&2
  exit 2
fi
skip_without_gpu
build_dir=$(cd "$1" 2>/dev/null && pwd) || {
  echo "run_observed_loops: no build folder $1" >&2
  exit 2
}
gpuleak=$build_dir/bin/gpuleak
if [[ ! -x $gpuleak || ! -f $build_dir/lib/libgpuleak.so ]]; then
  echo "run_observed_loops: $gpuleak or $build_dir/lib/libgpuleak.so missing" >&2
  exit 2
fi
default_out=$build_dir/gpu-observed
[[ -n ${OUT:-} ]] && default_out=$OUT/observed
mkdir -p "${2:-$default_out}" || exit 2
out_dir=$(cd "${2:-$default_out}" && pwd)
rm -rf "$out_dir/cases"
log=$out_dir/observed.log
: >"$log"
python=${PYTHON:-python3}
GPULEAK_PYTHONDIR=$(cd "$here/../../tools/python" && pwd) || exit 2
export GPULEAK_PYTHONDIR
use_hostlibs "$gpuleak" "$build_dir/gpu-tests/hostlibs"

say() { echo "$*" | tee -a "$log"; }
say "run_observed_loops: $(date -u +%FT%TZ) gpuleak $("$gpuleak" --version 2>&1 | head -1)"
say "  $("$python" --version 2>&1); $(nvidia-smi -L 2>/dev/null | head -1)"
source_ok=observed
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' || source_ok="observed|python_loop"

# shape  name  gpuleak run options (comma-separated)  extra environment (comma-separated)
cases=(
  "jax_step platform - XLA_PYTHON_CLIENT_ALLOCATOR=platform,XLA_PYTHON_CLIENT_PREALLOCATE=false"
  "jax_step per-buffer --jax,per-buffer -"
  "jax_step default - -"
  "torch_oom default - -"
  "torch_serve default - -"
  "torch_train_eval default - -"
  "torch_threads default - -"
)
pass=0 fail=0 skip=0
for spec in "${cases[@]}"; do
  read -r shape mode options extra_env <<<"$spec"
  for kind in leak clean; do
    name=$shape-$mode-$kind
    [[ -n ${ONLY:-} && ! $name =~ $ONLY ]] && continue
    dir=$out_dir/cases/$name
    mkdir -p "$dir/captures"
    run_opts=()
    [[ $options != - ]] && IFS=, read -r -a run_opts <<<"$options"
    envs=(-u PYTORCH_CUDA_ALLOC_CONF -u PYTORCH_NO_CUDA_MEMORY_CACHING -u XLA_PYTHON_CLIENT_ALLOCATOR
          -u XLA_PYTHON_CLIENT_PREALLOCATE -u GPULEAK_PY_LOOP -u GPULEAK_PY_OBSERVE)
    [[ $extra_env != - ]] && IFS=, read -r -a more <<<"$extra_env" && envs+=("${more[@]}")
    start=$(date +%s%N)
    (cd "$dir" && env "${envs[@]}" timeout -k 10 300 "$gpuleak" run --out "$dir/captures" "${run_opts[@]}" -- \
      "$python" "$here/observed_loops.py" --shape "$shape" "--$kind" --result "$dir/result.json" \
      >"$dir/stdout" 2>"$dir/stderr")
    status=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    reports=("$dir"/captures/observed_loops.py.*.report.json)
    if grep -q '^SKIPPED:' "$dir/stdout" 2>/dev/null; then
      verdict=SKIP
      detail=$(grep '^SKIPPED:' "$dir/stdout" | head -1)
    elif [[ $status -ne 0 ]]; then
      detail="the program under gpuleak run exited with $status (see $dir/stderr)"
      verdict=FAIL
    elif [[ ${#reports[@]} -ne 1 || ! -f ${reports[0]} ]]; then
      detail="expected one report in $dir/captures"
      verdict=FAIL
    else
      loops_opt=()
      # Every loop judged on its own (issue #33): the training loop clean, the evaluation loop's.
      [[ $shape == torch_train_eval ]] && loops_opt=(--loops "clean,$kind")
      detail=$("$python" "$here/check_framework_case.py" --report "${reports[0]}" --measured "$dir/result.json" \
        --iteration-source "$source_ok" "${loops_opt[@]}" 2>&1)
      case $? in
        0) verdict=PASS ;;
        77) verdict=SKIP ;;
        *) verdict=FAIL ;;
      esac
      summary=$(grep -m1 'verdict' "$dir/stderr" 2>/dev/null)
      [[ -n $summary ]] && detail="$detail | $summary"
    fi
    say "$verdict $name ($ms ms): $detail"
    [[ $verdict == FAIL ]] && tail -n 5 "$dir/stderr" | sed 's/^/    stderr: /' | tee -a "$log"
    [[ $verdict == PASS && ${KEEP_CAPTURES:-0} != 1 ]] && rm -f "$dir"/captures/*.gpuleak
    case $verdict in
      PASS) pass=$((pass + 1)) ;;
      SKIP) skip=$((skip + 1)) ;;
      *) fail=$((fail + 1)) ;;
    esac
  done
done

# A pytest run of a GPU test file with one leaking test (issue #33, test_gpu_suite.py): `gpuleak
# check` exits 1 naming the test and its `# @keep-pytest` line, the rate within 10 % of the bytes
# the test kept per step, its JUnit case failing; the other tests' loops clean.
name=pytest-suite
if [[ -z ${ONLY:-} || $name =~ $ONLY ]]; then
  dir=$out_dir/cases/$name
  mkdir -p "$dir/captures"
  if ! "$python" -c 'import pytest' 2>/dev/null; then
    verdict=SKIP detail="pytest is not installed for $python"
  else
    start=$(date +%s%N)
    (cd "$dir" && env -u PYTORCH_CUDA_ALLOC_CONF -u GPULEAK_PY_OBSERVE GPULEAK_SUITE_RESULT="$dir/result.json" \
      timeout -k 10 300 "$gpuleak" run --out "$dir/captures" -- "$python" -m pytest -q -p no:cacheprovider \
      "$here/test_gpu_suite.py" >"$dir/stdout" 2>"$dir/stderr")
    status=$?
    reports=("$dir"/captures/*.report.json)
    if [[ $status -ne 0 ]]; then
      verdict=FAIL detail="pytest under gpuleak run exited with $status (see $dir/stdout)"
    elif [[ ! -f $dir/result.json ]]; then
      verdict=SKIP detail="$(grep -m1 -i skip "$dir/stdout")"
    elif [[ ${#reports[@]} -ne 1 || ! -f ${reports[0]} ]]; then
      verdict=FAIL detail="expected one report in $dir/captures"
    else
      "$gpuleak" check --format plain --junit "$dir/junit.xml" "${reports[0]}" >"$dir/check.txt" 2>&1
      check=$?
      keep=$(grep -n '# @keep-pytest$' "$here/test_gpu_suite.py" | cut -d: -f1)
      detail=$("$python" - "${reports[0]}" "$dir/result.json" "$dir/check.txt" "$dir/junit.xml" "$check" "$keep" <<'PY'
import json, sys
import xml.etree.ElementTree as ET
report, measured = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
check, junit, status, keep = open(sys.argv[3]).read(), sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
test = "test_gpu_suite.py::test_leaky_step"
loops = report.get("loops") or []
leaky = [l for l in loops if l.get("test") == test]
others = [l for l in loops if l.get("test") != test and l.get("verdict") not in ("clean", "inconclusive")]
problems = []
if status != 1 or test not in check or f"test_gpu_suite.py:{keep}" not in check:
    problems.append(f"gpuleak check exited {status}; its output names the test: {test in check}, "
                    f"the line test_gpu_suite.py:{keep}: {f'test_gpu_suite.py:{keep}' in check}")
if len(leaky) != 1 or leaky[0].get("verdict") != "leak":
    problems.append(f"the leaky test's loop: {[(l.get('name'), l.get('verdict')) for l in leaky]}")
else:
    g = (leaky[0].get("leak_groups") or [{}])[0]
    rate, want = g.get("bytes_per_iteration") or 0, measured["kept_bytes_per_step"]
    if abs(rate - want) > 0.1 * want:
        problems.append(f"rate {rate} B/step, the test kept {want} B/step")
if others:
    problems.append(f"other loops not clean: {[(l.get('test'), l.get('verdict')) for l in others]}")
failing = [c.get("name") for c in ET.parse(junit).iter("testcase") if c.find("failure") is not None]
if test not in failing:
    problems.append(f"JUnit failing cases {failing}")
print(("FAIL: " + "; ".join(problems)) if problems else
      f"ok: check exit 1 naming {test} at line {keep}; loops {[(l.get('test'), l.get('verdict')) for l in loops]}")
sys.exit(1 if problems else 0)
PY
)
      case $? in
        0) verdict=PASS ;;
        *) verdict=FAIL ;;
      esac
    fi
    ms=$((($(date +%s%N) - start) / 1000000))
  fi
  say "$verdict $name (${ms:-0} ms): $detail"
  case $verdict in
    PASS) pass=$((pass + 1)) ;;
    SKIP) skip=$((skip + 1)) ;;
    *) fail=$((fail + 1)) ;;
  esac
fi

say "run_observed_loops: $pass PASS, $fail FAIL, $skip SKIP; log $log"
[[ $fail -gt 0 ]] && exit 1
[[ $pass -eq 0 ]] && exit 77
exit 0
