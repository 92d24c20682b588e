#!/usr/bin/env python3
"""docs/ci.md's GitHub Actions and GitLab CI recipes, run line by line as shell (issue #31).

    recipes_test.py SOURCE_DIR BUILD_DIR

For each recipe, in a fresh folder: gpuleak's tracked files copied to ./gpuleak (the recipes build
it from there), a train.py that allocates through the fake CUDA (1 MiB kept per step when LEAK=1),
and the config file of docs/ci.md's "The config file". The recipe's own lines then run in one bash:
GitHub's `run:` steps (with GITHUB_PATH honoured between steps, as the runner does) and GitLab's
before_script and script. Checks: the build lines build the CLI and the shim, the `gpuleak` they
put on PATH is that build's, and the gate fails the leaking train.py (exit 1) and passes the clean
one. The compiler launcher of BUILD_DIR (ccache) is reused through CMake's environment variables.
Exits 77 (skipped) when the fake CUDA is missing.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

TRAIN = r'''
import ctypes, os, sys
cudart = ctypes.CDLL("libcudart.so.13")
steps = int(sys.argv[sys.argv.index("--steps") + 1])
kept = []
for step in range(steps):
    p = ctypes.c_void_p()
    cudart.cudaMalloc(ctypes.byref(p), 1 << 20)   # the step's activation
    if os.environ.get("LEAK") == "1":
        kept.append(p)                            # kept: 1 MiB per step
    else:
        cudart.cudaFree(p)
'''


def recipe_blocks(text):
    """{'github': [shell lines per step], 'gitlab': [shell lines]} from docs/ci.md's YAML blocks."""
    github = text.split("## GitHub Actions", 1)[1].split("```yaml", 1)[1].split("```", 1)[0]
    gitlab = text.split("## GitLab CI", 1)[1].split("```yaml", 1)[1].split("```", 1)[0]
    steps, lines, in_block = [], github.splitlines(), False
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)(?:- )?run: (.*)$", line)
        if not m:
            continue
        indent, body = m.group(1), m.group(2)
        if body.strip() == "|":
            block = []
            for nxt in lines[i + 1:]:
                if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= len(indent) + 2:
                    break
                block.append(nxt.strip())
            steps.append([b for b in block if b and not b.startswith("#")])
        else:
            steps.append([body])
    lab = []
    section = None
    for line in gitlab.splitlines():
        key = re.match(r"^\s*(before_script|script|artifacts):", line)
        if key:
            section = key.group(1)
            continue
        item = re.match(r"^\s*- (.*)$", line)
        if item and section in ("before_script", "script"):
            lab.append(item.group(1))
    return {"github": steps, "gitlab": [lab]}


def config_json(text):
    """docs/ci.md's config file, less the keys that name the user's own files and second GPU."""
    block = text.split("## The config file", 1)[1].split("```json", 1)[1].split("```", 1)[0]
    config = json.loads(block)
    for key in ("baseline", "tolerance", "suppressions"):
        config.pop(key, None)
    config["max_peak"] = {"all": config.get("max_peak", {}).get("all", "70 GiB")}
    return config


def copy_source(src, dst):
    files = subprocess.run(["git", "-C", src, "ls-files", "-z"], stdout=subprocess.PIPE,
                           check=True).stdout.decode().split("\0")
    for f in filter(None, files):
        s, d = os.path.join(src, f), os.path.join(dst, f)
        if os.path.isfile(s) and not os.path.islink(s):
            os.makedirs(os.path.dirname(d), exist_ok=True)
            shutil.copy2(s, d)


def main():
    src, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    fake = os.path.join(build, "fake_cuda")
    if not os.path.exists(os.path.join(fake, "libcudart.so.13")):
        print("recipes_test: SKIP: no fake CUDA in %s" % fake)
        return 77
    text = open(os.path.join(src, "docs", "ci.md"), encoding="utf-8").read()
    recipes, config = recipe_blocks(text), config_json(text)
    # The recipe's build reuses BUILD_DIR's objects through ccache (scripts/build.sh hashes paths
    # relative to the build folder) and is held to this machine's cores.
    env = dict(os.environ, LD_LIBRARY_PATH=fake, PYTHONDONTWRITEBYTECODE="1", CCACHE_BASEDIR="/",
               CCACHE_NOHASHDIR="1", CMAKE_BUILD_PARALLEL_LEVEL=str(os.cpu_count() or 2))
    cache = open(os.path.join(build, "CMakeCache.txt")).read()
    for lang in ("C", "CXX"):
        m = re.search(r"^CMAKE_%s_COMPILER_LAUNCHER:\w+=(.+)$" % lang, cache, re.M)
        if m:
            env["CMAKE_%s_COMPILER_LAUNCHER" % lang] = m.group(1)
    failures = 0
    root = tempfile.mkdtemp(prefix="gpuleak-recipes-")
    try:
        copy_source(src, os.path.join(root, "gpuleak"))
        for name, steps in recipes.items():
            for leak in ("1", "0"):
                work = os.path.join(root, "%s-%s" % (name, leak))
                os.makedirs(os.path.join(work, "ci"))
                os.symlink(os.path.join(root, "gpuleak"), os.path.join(work, "gpuleak"))
                open(os.path.join(work, "train.py"), "w").write(TRAIN)
                json.dump(config, open(os.path.join(work, "ci", "gpuleak-check.json"), "w"))
                gh_path = os.path.join(work, "github_path")
                open(gh_path, "w").close()
                script = ["set -e", "export GITHUB_PATH=%s" % gh_path]
                for step in steps:
                    # The runner adds GITHUB_PATH's lines to PATH before each later step.
                    script.append('while read -r p; do [ -n "$p" ] && PATH="$p:$PATH"; done < "$GITHUB_PATH"')
                    script += step
                script.append('echo "gpuleak used: $(command -v gpuleak)"')
                r = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, env=dict(env, LEAK=leak),
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1500)
                want = 1 if leak == "1" else 0
                used = re.findall(r"gpuleak used: (.*)", r.stdout)
                ok = r.returncode == want and (leak == "1" or (used and "gpuleak/build/bin/gpuleak" in used[-1]))
                print("%s %s recipe, %s train.py: exit %d (want %d)" % (
                    "PASS" if ok else "FAIL", name, "leaking" if leak == "1" else "clean", r.returncode, want))
                if not ok:
                    failures += 1
                    print(r.stdout[-3000:])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("%d passed, %d failed" % (4 - failures, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
