import { describe, expect, it } from 'vitest';
import { allocatorNote, captureWarnings, forecastSentences, verdictSummary } from '../src/summary.js';

const leakReport = {
  verdict: 'leak',
  analysis: { primary_loop: 'step', primary_iterations: 400 },
  devices: [{ index: 0, name: 'NVIDIA H200', total_bytes: 150754820096, verdict: 'leak',
    forecast: { iterations_left: 7702, seconds_left: 3544.1, bytes_per_iteration: 18874368 } }],
  leaks: [{ bytes_per_iteration: 18874368, live_bytes: 1509949440, live_count: 400,
    stack: [{ kind: 'python', function: 'train_step', file: '/home/ana/proj/train.py', line: 42 }] }],
};

describe('verdictSummary', () => {
  it('names the leak, its rate and what it holds', () => {
    const s = verdictSummary(leakReport);
    expect(s.title).toBe('Leak found');
    expect(s.sentence).toContain('train_step (train.py:42)');
    expect(s.sentence).toContain('+18.0 MiB per "step" iteration');
    expect(s.sentence).toContain('1.41 GiB in 400 allocations');
  });
  it('names the finding by its headline, the user\'s own line, when the report has one', () => {
    const lib = (fn, line) => ({ kind: 'python', function: fn, file: '/venv/site-packages/torch/nn/modules/linear.py', line });
    const report = {
      ...structuredClone(leakReport),
      leaks: [
        { bytes_per_iteration: 8388608, live_bytes: 1, live_count: 1, stack: [lib('Linear.forward', 134)],
          headline: { text: 'train.py:41 in train_step (via Linear.forward, torch/nn/modules/linear.py:134)' } },
        { bytes_per_iteration: 4194304, live_bytes: 1, live_count: 1, stack: [lib('GELU.forward', 816)],
          headline: { text: 'train.py:41 in train_step (via GELU.forward, torch/nn/modules/activation.py:816)' } },
      ],
      leak_groups: [{ bytes_per_iteration: 12582912, live_bytes: 503316480, live_count: 80,
        headline: { text: 'train.py:41 in train_step' } }],
    };
    const s = verdictSummary(report);
    expect(s.sentence).toContain('One line of code keeps');
    expect(s.sentence).toContain('The largest, train.py:41 in train_step, grows by +12.0 MiB per "step" iteration');
    expect(s.sentence).not.toContain('Linear.forward');
  });
  it('says who keeps the largest leak, as text, and nothing without a path', () => {
    const path = '`history` (list, local of main at train.py:44) -> [53 items] -> Tensor <img src=x onerror=alert(1)>';
    const report = { ...structuredClone(leakReport),
      leak_groups: [{ bytes_per_iteration: 1, live_bytes: 1, live_count: 1, headline: { text: 'train.py:52 in main' },
        retained_by: { text: path, event: 'oom', bytes: 1 } }] };
    const s = verdictSummary(report);
    expect(s.keptBy).toBe(`Kept by ${path} (at the out-of-memory).`);
    report.leak_groups[0].retained_by = null;
    expect(verdictSummary(report).keptBy).toBeNull();
    expect(verdictSummary(leakReport).keptBy).toBeNull();
  });
  it('explains an inconclusive run without iterations', () => {
    const s = verdictSummary({ verdict: 'inconclusive', iteration_source: 'none', devices: [] });
    expect(s.sentence).toMatch(/No iterations were found/);
  });
  it('reports clean runs plainly', () => {
    expect(verdictSummary({ verdict: 'clean', analysis: { primary_iterations: 10 } }).title).toBe('No leak found');
  });
});

describe('an out-of-memory run', () => {
  it('leads with the failure: where, how much, what was live by site', () => {
    const report = {
      ...structuredClone(leakReport),
      oom: { events: [{ device: 0, api: 'cudaMalloc', requested_bytes: 4194304, free_bytes: 0, total_bytes: 67108864,
        live_bytes: 67108864, recovered: false,
        stack: [{ kind: 'native', function: 'load_batch', file: '/src/data.cpp', line: 7 }],
        live_by_site: [{ bytes: 50331648, count: 48, stack: [{ kind: 'native', function: 'cache', file: 'a.cu', line: 3 }] },
          { bytes: 16777216, count: 1, stack: [{ kind: 'native', function: 'weights', file: 'b.cu', line: 9 }] }] }] },
    };
    const s = verdictSummary(report);
    expect(s.title).toBe('Out of memory; verdict: leak');
    expect(s.oom).toBe('cudaMalloc of 4.00 MiB failed on GPU 0 (NVIDIA H200) at load_batch (data.cpp:7), with ' +
      '64.0 MiB live (0 B free of 64.0 MiB). Live then, by call site: 48.0 MiB in 48 allocations at cache (a.cu:3); ' +
      '16.0 MiB in 1 allocation at weights (b.cu:9).');
  });
  it('has no lead without one', () => {
    expect(verdictSummary(leakReport).oom).toBeNull();
  });
});

describe('forecastSentences', () => {
  it('says when the device runs out, in the words every output uses', () => {
    const [s] = forecastSentences(leakReport);
    expect(s).toBe('GPU 0 (NVIDIA H200, 140 GiB): out of memory in ~7,702 iterations (~59 min) at +18.0 MiB per ' +
      'iteration, if nothing else changes.');
  });
  it('says what it counted as held outside the tracked allocations', () => {
    const report = structuredClone(leakReport);
    report.devices[0].forecast.held_elsewhere_bytes = 512 * 1024 * 1024;
    const [s] = forecastSentences(report);
    expect(s).toContain('per iteration, with the 512 MiB held outside the tracked allocations, if nothing else changes.');
  });
  it('says when the forecast is for JAX\'s arena filling', () => {
    const report = structuredClone(leakReport);
    Object.assign(report.devices[0].forecast, { fills: 'jax_arena', pool_free_bytes: 2 * 1024 ** 3, held_elsewhere_bytes: 0 });
    const [s] = forecastSentences(report);
    expect(s).toContain("per iteration, when JAX's arena is full (2.00 GiB of it free at the last iteration), if nothing else changes.");
  });
  it('says less than an iteration left as such, never "already past its memory"', () => {
    const report = structuredClone(leakReport);
    report.devices[0].forecast.iterations_left = 0;
    const [s] = forecastSentences(report);
    expect(s).toContain('out of memory within the next iteration');
    expect(s).not.toMatch(/already past|~0 iterations/);
  });
  it('makes no forecast for a device that ran out in this run', () => {
    const report = { ...structuredClone(leakReport), oom: { events: [{ device: 0 }] } };
    expect(forecastSentences(report)).toEqual(['GPU 0 (NVIDIA H200): ran out of memory in this run.']);
  });
  it('says nothing without a forecast', () => {
    expect(forecastSentences({ devices: [{ index: 0, forecast: null }] })).toEqual([]);
  });
});

describe('allocatorNote', () => {
  it('is the analysis\'s allocator note, the sentence every other surface prints', () => {
    const note = 'gpuleak saw a caching allocator\'s segments, not tensors: rerun with `gpuleak run --torch per-tensor`';
    const report = { verdict: 'growth', run: { allocator_mode: 'segments (PyTorch\'s caching allocator)', allocator_note: note } };
    expect(allocatorNote(report)).toBe(note);
    expect(captureWarnings(report)).toEqual([]);
  });
  it('is null without one, and no advice is made from the mode\'s text', () => {
    const report = { verdict: 'growth', run: { allocator_mode: 'segments (PyTorch\'s caching allocator)', allocator_note: null } };
    expect(allocatorNote(report)).toBeNull();
    expect(captureWarnings(report)).toEqual([]);
  });
});
