"""GPU machine check of Python call sites with PyTorch: reads the report of tests/gpu/torch_loop.py
(run with PYTORCH_NO_CUDA_MEMORY_CACHING=1 or PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, so
that every tensor is its own allocation) and checks that the leak is attributed to
cache_activation's torch.zeros line, called from main's loop, called from the module.

usage: python3 check_torch_report.py REPORT.json [torch_loop.py]
Prints each leak and live site with its Python frames; exit 0 when the check holds, 1 when not.
"""
import json
import os
import sys


def marker_line(path, text):
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if text in line:
                return number
    sys.exit(f"FAIL: {text!r} not found in {path}")


def short(stack):
    out = []
    for f in stack:
        if f["kind"] == "python":
            out.append(f"py:{f['function']}@{os.path.basename(f['file'] or '?')}:{f['line']}")
    natives = [f for f in stack if f["kind"] == "native"]
    head = natives[-1]["function"] if natives else None  # the native frame right before Python
    return f"[{len(natives)} native, last {head}] " + " ".join(out)


def main():
    report = json.load(open(sys.argv[1]))
    source = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..", "gpu", "torch_loop.py")
    want = [("cache_activation", marker_line(source, "t = torch.zeros(LEAK_BYTES")),
            ("main", marker_line(source, "        cache_activation(device)")),
            ("<module>", marker_line(source, "sys.exit(main())"))]
    print("expected Python frames:", want)
    print("verdict:", report["verdict"], " allocator:", report["run"].get("allocator_mode"))
    for kind in ("leaks", "live_at_exit"):
        for s in report[kind][:12]:
            print(f"{kind}: {s.get('live_count')} live, {s.get('live_bytes')} B: {short(s['stack'])}")
    autograd = sum(1 for s in report["live_at_exit"] if any(f["function"] == "[autograd backward]" for f in s["stack"]))
    print("live sites marked [autograd backward]:", autograd)
    for s in report["leaks"]:
        py = [(f["function"], f["line"]) for f in s["stack"] if f["kind"] == "python"]
        if py[:3] == want and all(os.path.basename(f["file"]) == "torch_loop.py"
                                  for f in s["stack"] if f["kind"] == "python"):
            kinds = [f["kind"] for f in s["stack"]]
            if "native" in kinds[kinds.index("python"):]:
                sys.exit("FAIL: native frames after the Python frames")
            print("OK: the leak reads", py[:3])
            return 0
    sys.exit("FAIL: no leak whose Python frames start with " + str(want))


if __name__ == "__main__":
    sys.exit(main())
