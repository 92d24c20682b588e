// Issue #28 on the page's data: one finding per user line, the cache apart from the call sites,
// the leak at the last iteration, C++ names as people read them, library frames hidden.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildModel, frameAt, poolOwner, pooledRun } from '../src/data.js';
import { leakFindings } from '../src/leak_table.js';
import { defaultMoment, specialBoxes } from '../src/flame_panel.js';
import { buildStackTree, snapshotRows } from '../src/stack_tree.js';
import { userFrameFilter } from '../src/frame_filter.js';
import { frameDetail, frameLabel, shortFunction } from '../src/format.js';
import { verdictSummary } from '../src/summary.js';

const fixture = (name) => JSON.parse(readFileSync(new URL(`../../tests/fixtures/issue28/${name}`, import.meta.url), 'utf8'));
const MiB = 1 << 20;

describe('one finding per user line', () => {
  it('groups the library sites under the line, in the report\'s order', () => {
    const findings = leakFindings(fixture('torch_three_sites.report.json'));
    expect(findings).toHaveLength(1);
    expect(findings[0].headline.text).toBe('train.py:52 in train_step');
    expect(findings[0].bytes_per_iteration).toBe(18 * MiB);
    expect(findings[0].sites.map((s) => s.headline.text.match(/via (\S+),/)[1])).toEqual(['Linear.forward', 'GELU.forward', 'mse_loss']);
  });
  it('counts sites as findings in a report from before leak_groups', () => {
    const report = fixture('torch_three_sites.report.json');
    delete report.leak_groups;
    expect(leakFindings(report)).toHaveLength(3);
    expect(verdictSummary(report).sentence).toMatch(/^3 call sites keep/);
  });
  it('says one line and how many library sites it goes through', () => {
    const s = verdictSummary(fixture('torch_three_sites.report.json')).sentence;
    expect(s).toMatch(/^One line of code keeps memory alive across iterations\. The largest, train\.py:52 in train_step, grows by \+18\.0 MiB/);
    expect(s).toContain('through 3 library call sites');
  });
  it('names an OOM by its headline, never the allocator\'s frame', () => {
    const lead = verdictSummary(fixture('torch_oom.report.json')).oom;
    expect(lead).toMatch(/failed on GPU 0 \(NVIDIA H200\) at infer\.py:20 in infer \(via Linear\.forward/);
    expect(lead).toMatch(/Live then, by call site: 768 MiB in 12 allocations at infer\.py:20 in infer/);
    expect(lead).not.toMatch(/alloc_block|c10::/);
  });
});

// A PyTorch report's shape at exit: 1.9 GiB of segments, 65 MiB of tensors in them, a workspace
// beside them, the leak freed at exit (torch_report.mjs in tests/browser has the full story).
function pytorchAtExit() {
  const report = fixture('torch_three_sites.report.json');
  const weights = { site_id: 'w', stack: [{ kind: 'python', function: 'Net.__init__', file: '/p/model.py', line: 12 }],
    headline: { kind: 'python', function: 'Net.__init__', file: '/p/model.py', line: 12, user: true, text: 'model.py:12 in Net.__init__' } };
  report.run.allocator_mode = 'per-tensor (PyTorch\'s caching allocator, through its trace)';
  report.devices[0].live_at_exit_bytes = 1900 * MiB + 200 * MiB;
  report.live_at_exit = [{ site_id: 'ws', stack: [{ kind: 'native', function: 'cublasCreate_v2', module: 'libcublas.so' }], device: 0,
    live_bytes: 200 * MiB, live_count: 1 }, { ...weights, device: 0, live_bytes: 65 * MiB, live_count: 24 }];
  report.segments = [{ device: 0, site_id: 's', stack: [], live_at_exit_bytes: 1900 * MiB, live_at_exit_count: 95,
    blocks: [{ ...weights, live_at_exit_bytes: 65 * MiB, live_at_exit_count: 24 }] }];
  return buildModel({ schema: 'gpuleak.html/1', report, view: null });
}

describe('the cache apart from the call sites', () => {
  it('splits what the report lists at exit from the allocator\'s cache', () => {
    const model = pytorchAtExit();
    const end = model.snapshots.find((s) => s.kind === 'end');
    expect(end.cache_bytes).toBe(1835 * MiB);
    expect(end.other.bytes).toBe(0);
    const hidden = specialBoxes(model, end, false);
    expect(hidden.extras).toEqual([]);
    expect(hidden.hidden).toBe(1835 * MiB);
    const shown = specialBoxes(model, end, true);
    expect(shown.extras).toEqual([{ label: 'cached by PyTorch\'s caching allocator, not in tensors', bytes: 1835 * MiB, count: 0 }]);
    const tree = buildStackTree(model.sites, snapshotRows(end), shown.other, { extras: shown.extras });
    expect(tree.children[0].frame).toBe(-3);  // the widest box, named as the cache
    expect(tree.children[0].label).toMatch(/^cached by/);
  });
  it('opens on the last iteration, where the leak freed at exit still is', () => {
    const model = pytorchAtExit();
    const i = defaultMoment(model.report, model.snapshots);
    const last = model.snapshots[i];
    expect(last.kind).toBe('last_iteration');
    expect(last.iteration).toBe(19);
    expect(last.bytes.reduce((a, b) => a + b, 0)).toBe(18 * MiB * 20);
    // What the report does not list there holds the cache too: drawn only with the cache.
    expect(last.other.mixed).toBe(true);
    expect(specialBoxes(model, last, false).other).toBeNull();
    expect(specialBoxes(model, last, true).other.label).toMatch(/smaller call sites and PyTorch's caching allocator's cache/);
  });
});

describe('whose cache', () => {
  it('knows a pooled run by its allocator mode and names the owner as the summary does', () => {
    const run = (allocator_mode, pool_tracker = null) => ({ run: { allocator_mode, pool_tracker } });
    expect(pooledRun(run('per-tensor (PyTorch\'s caching allocator, through its trace)'))).toBe(true);
    expect(pooledRun(run('segments (expandable, cuMemCreate/cuMemMap)'))).toBe(true);
    expect(pooledRun(run('pool (CuPy\'s memory pool)'))).toBe(true);
    expect(pooledRun(run('per-array (CuPy\'s stream-ordered pool, cudaMallocAsync)'))).toBe(false);
    expect(pooledRun(run('per-allocation'))).toBe(false);
    expect(pooledRun(run('per-tensor', 'torch 2.11.0+cu130 CUDACachingAllocator trace tracker'))).toBe(true);
    expect(poolOwner(run('pool (JAX\'s BFC allocator)'))).toBe('JAX\'s arena');
    expect(poolOwner(run('pool (CuPy\'s memory pool)'))).toBe('CuPy\'s pool');
  });
});

describe('library frames', () => {
  it('keeps the user\'s frames and each site\'s headline', () => {
    const model = pytorchAtExit();
    const last = model.snapshots.find((s) => s.kind === 'last_iteration');
    const tree = buildStackTree(model.sites, snapshotRows(last), null, { keep: userFrameFilter(model, true) });
    const labels = [];
    const walk = (n) => {
      if (n.frame >= 0) labels.push(frameLabel(frameAt(model, n.frame)));
      n.children.forEach(walk);
    };
    walk(tree);
    expect(labels).toEqual(['train_step (train.py:52)']);
    expect(userFrameFilter(model, false)).toBeNull();
  });
  it('reads a C++ name as the headline does, keeping the whole name beside it', () => {
    const name = 'c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_block(c10::cuda::CUDACachingAllocator::' +
      'Native::(anonymous namespace)::AllocParams&, bool, std::shared_ptr<c10::GatheredContext> const&)';
    expect(shortFunction(name)).toBe('c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_block');
    expect(shortFunction('at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*) const')).toBe('at::detail::empty_generic');
    expect(shortFunction('void foo<int>(int)')).toBe('foo<int>');
    expect(shortFunction('Foo::operator()(int)')).toBe('Foo::operator()');
    expect(shortFunction('(anonymous namespace)::run()')).toBe('(anonymous namespace)::run');
    const frame = { kind: 'native', function: name, module: 'libc10_cuda.so' };
    expect(frameLabel(frame, { short: true })).toBe('c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_block (libc10_cuda.so)');
    expect(frameDetail(frame)).toContain(name);
  });
});
