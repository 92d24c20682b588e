// Writes a PyTorch-shaped gpuleak.report/1 (docs/report-format.md) with the proportions issue #28
// measured on the H200 (PyTorch 2.11, per-tensor through the caching allocator's trace):
//   - 40 s of start-up (imports, model build) before a 4 s loop of 20,480 iterations: the loop is
//     the last 9 % of the time axis; the report keeps 10,000 of its iterations (the first and last
//     1,000 and an even sample between), each with its own index;
//   - one leak at train.py:52 (72 KiB per iteration through Linear.forward, GELU.forward and
//     mse_loss: 1.41 GiB at the last iteration), freed when the program exits;
//   - at exit 2.1 GiB live: 1.9 GiB of segments of PyTorch's caching allocator, 65 MiB of it in
//     tensors, and a 200 MiB cuBLAS workspace: what no listed site accounts for is the cache.
// The device's curve is the segments' (20 MiB steps), as the analysis counts it.
// Usage: node torch_report.mjs OUT.json
import { writeFileSync } from 'node:fs';

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;
const TORCH = '/venv/lib/python3.12/site-packages/torch/';

const native = (fn, module) => ({ kind: 'native', function: fn, file: null, line: null, module, address: '0x7f3a1c2e4d10', build_id: null });
const python = (fn, file, line) => ({ kind: 'python', function: fn, file, line, module: null });
const headline = (frame, user, via, text) => ({ kind: frame.kind, function: frame.function, file: frame.file, line: frame.line,
  module: frame.module, user, via, text });

const C10 = native('c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_block(c10::cuda::CUDACachingAllocator::' +
  'Native::(anonymous namespace)::AllocParams&, bool, std::shared_ptr<c10::GatheredContext> const&, ' +
  'std::unique_lock<std::recursive_mutex>&)', 'libc10_cuda.so');
const EMPTY = native('at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, c10::ScalarType, ' +
  'std::optional<c10::MemoryFormat>)', 'libtorch_cpu.so');
const MAIN = python('main', '/home/me/project/train.py', 80);
const STEP = python('train_step', '/home/me/project/train.py', 52);

const iterations = 20480;
const startNs = 40e9;
const perNs = 195312;  // 4 s / 20,480
const leakSites = [
  ['1a2b3c4d5e6f7081', 'Linear.forward', 'nn/modules/linear.py', 125, 36 * KiB],
  ['2b3c4d5e6f708192', 'GELU.forward', 'nn/modules/activation.py', 734, 32 * KiB],
  ['3c4d5e6f708192a3', 'mse_loss', 'nn/functional.py', 3884, 4 * KiB],
];
const rate = leakSites.reduce((s, l) => s + l[4], 0);
const leaks = leakSites.map(([id, fn, file, line, r]) => {
  const via = python(fn, TORCH + file, line);
  return {
    site_id: id, stack: [EMPTY, via, STEP, MAIN], device: 0, bytes_per_iteration: r,
    live_bytes: r * iterations, live_count: iterations, live_at_exit_bytes: 0, live_at_exit_count: 0,
    first_iteration: 0, confidence: 0.99, fit_quality: 1, r2: 1, iterations_observed: iterations - 5,
    headline: headline(STEP, true, { function: fn, file: `torch/${file}`, line, module: null },
      `train.py:52 in train_step (via ${fn}, torch/${file}:${line})`),
  };
});
const group = {
  headline: headline(STEP, true, null, 'train.py:52 in train_step'), device: 0, bytes_per_iteration: rate,
  live_bytes: rate * iterations, live_count: 3 * iterations, live_at_exit_bytes: 0, live_at_exit_count: 0,
  first_iteration: 0, confidence: 0.99, retained_by: null, site_ids: leakSites.map((l) => l[0]),
};

// The device's live bytes at an iteration's end: the segments holding the model, the optimizer's
// state and the leak, in 20 MiB steps.
const base = 460 * MiB;
const segmentsFor = (bytes) => Math.ceil(bytes / (20 * MiB)) * 20 * MiB;
const liveEnd = (i) => 200 * MiB + segmentsFor(base + rate * (i + 1));
const kept = new Set();
for (let i = 0; i < 1000; i++) { kept.add(i); kept.add(iterations - 1 - i); }
for (let k = 0; k < 8000; k++) kept.add(1000 + Math.floor((k * (iterations - 2000)) / 8000));
const its = [...kept].sort((a, b) => a - b).map((i) => ({
  index: i, loop: 'train.py:40', primary: true, start_ns: startNs + i * perNs, end_ns: startNs + (i + 1) * perNs - 1000,
  devices: [{ index: 0, live_end_bytes: liveEnd(i), peak_bytes: liveEnd(i) + 64 * MiB, allocated_bytes: rate + 64 * MiB,
    freed_bytes: 64 * MiB, alloc_count: 7, free_count: 4 }],
}));

const weights = python('Linear.__init__', TORCH + 'nn/modules/linear.py', 106);
const model = python('Net.__init__', '/home/me/project/model.py', 12);
const weightsSite = {
  site_id: '4d5e6f708192a3b4', stack: [EMPTY, weights, model, MAIN],
  headline: headline(model, true, { function: 'Linear.__init__', file: 'torch/nn/modules/linear.py', line: 106, module: null },
    'model.py:12 in Net.__init__ (via Linear.__init__, torch/nn/modules/linear.py:106)'),
};
const cublas = native('cublasCreate_v2', 'libcublas.so.13');
const cublasSite = {
  site_id: '5e6f708192a3b4c5', stack: [native('cuMemAlloc_v2', 'libcuda.so.1'), cublas, native('at::cuda::getCurrentCUDABlasHandle()', 'libtorch_cuda.so'), STEP, MAIN],
  headline: headline(STEP, true, { function: 'cublasCreate_v2', file: null, line: null, module: 'libcublas.so.13' },
    'train.py:52 in train_step (via cublasCreate_v2 (libcublas.so.13))'),
};
const reserved = Math.round(1.9 * GiB);
const inTensors = 65 * MiB;
const workspace = 200 * MiB;
const atExit = reserved + workspace;
const duration = startNs + iterations * perNs + 0.3e9;

const report = {
  schema: 'gpuleak.report/1',
  run: { command: ['python', 'train.py'], program: 'train.py', pid: 4242, ppid: 1, rank: null, host: 'h200',
    start_time: '2026-12-04T12:00:00.000Z', duration_ns: duration, gpuleak_version: '0.1.0', cuda_driver_version: 13000,
    allocator_env: {}, allocator_mode: 'per-tensor (PyTorch\'s caching allocator, through its trace)',
    allocator_note: 'tensors were seen through torch: leaks are per tensor site; the segments that hold them are listed apart',
    pool_tracker: 'torch', unwinder: 'libunwind', stack_depth: 32,
    capture: { cupti: 'off', events: 250000, events_dropped: 0, tracking_disabled: null, truncated: false, clean_exit: true } },
  verdict: 'leak',
  iteration_source: 'observed',
  analysis: { primary_loop: 'train.py:40', primary_iterations: iterations, iterations_total: iterations, warmup_iterations: 5,
    allocations: 143360, frees: 82000, failed_allocations: 0, unmatched_frees: 0, graph_reservations: 0, not_owned: 0,
    context_resets: 0, pool_blocks: 143000, host_pinned_peak_bytes: 0, host_pinned_live_at_exit_bytes: 0,
    live_at_exit_sites: 2, warnings: [] },
  devices: [{ index: 0, name: 'NVIDIA H200', total_bytes: 150 * GiB, peak_live_bytes: liveEnd(iterations - 1) + 64 * MiB,
    live_at_exit_bytes: atExit, nvml_used_bytes: null, untracked_bytes: null, alloc_count: 400, free_count: 300,
    verdict: 'leak', growth_bytes_per_iteration: rate, growth_fit_quality: 0.99, growth_r2: 0.99,
    growth_after_warmup: [rate], forecast: { iterations_left: 2160000, seconds_left: 421875, bytes_per_iteration: rate } }],
  iterations: its,
  leaks,
  leak_groups: [group],
  live_at_exit: [
    { ...cublasSite, device: 0, live_bytes: workspace, live_count: 1 },
    { ...weightsSite, device: 0, live_bytes: inTensors, live_count: 24 },
  ],
  advice: [],
  segments: [{ device: 0, site_id: '6f708192a3b4c5d6', stack: [native('cudaMalloc', 'libcudart.so.13'), C10, EMPTY, STEP, MAIN],
    headline: headline(STEP, true, null, 'train.py:52 in train_step'), count: 183, peak_bytes: liveEnd(iterations - 1),
    live_at_exit_bytes: reserved, live_at_exit_count: 95,
    blocks: [{ ...weightsSite, live_at_exit_bytes: inTensors, live_at_exit_count: 24, peak_bytes: inTensors }] }],
  oom: null,
};
writeFileSync(process.argv[2], `${JSON.stringify(report, null, 1)}\n`);
