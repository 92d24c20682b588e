import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildModel, readDocument } from '../src/data.js';
import { buildStackTree, snapshotRows, temporalRows } from '../src/stack_tree.js';
import { fitLine } from '../src/iteration_bars.js';

const example = JSON.parse(readFileSync(new URL('./fixtures/report.example.json', import.meta.url), 'utf8'));

describe('readDocument', () => {
  it('recognises the unfilled template', () => {
    expect(readDocument('"placeholder"')).toBeNull();
  });
  it('refuses an unknown document', () => {
    expect(() => readDocument('{"schema":"other/1"}')).toThrow(/unknown data schema/);
  });
});

describe('a model from a report alone', () => {
  const model = buildModel({ schema: 'gpuleak.html/1', report: example, view: null });
  it('has coarse timelines per device', () => {
    expect(model.fromCapture).toBe(false);
    expect(model.timelines).toHaveLength(1);
    expect(model.timelines[0].coarse).toBe(true);
    expect(Math.max(...model.timelines[0].y)).toBe(example.iterations[0].devices[0].peak_bytes);
  });
  it('interns frames shared by several sites once', () => {
    const frames = model.frames.function;
    expect(new Set(frames).size).toBe(frames.length);
  });
});

describe('stack trees', () => {
  const sites = { site_id: ['a', 'b'], frames: [[0, 2], [1, 2]] };  // both called from frame 2 (main)
  it('sums bytes from the root down, outermost frame first', () => {
    const root = buildStackTree(sites, [{ site: 0, bytes: 30, count: 3 }, { site: 1, bytes: 10, count: 1 }],
      { sites: 5, bytes: 5, count: 5 });
    expect(root.bytes).toBe(45);
    expect(root.children[0].frame).toBe(2);
    expect(root.children[0].bytes).toBe(40);
    expect(root.children[0].children.map((c) => c.frame)).toEqual([0, 1]);
    expect(root.children[1].frame).toBe(-2);
    expect(root.maxDepth).toBe(2);
  });
  it('builds ten thousand distinct stacks quickly', () => {
    const frames = [];
    for (let s = 0; s < 10_000; s++) frames.push(Array.from({ length: 32 }, (_, d) => (d < 28 ? s * 4 + d : 1e6 + d)));
    const rows = frames.map((_, s) => ({ site: s, bytes: 1 + s, count: 1 }));
    const t0 = performance.now();
    const root = buildStackTree({ frames }, rows);
    expect(performance.now() - t0).toBeLessThan(5000);  // ~100 ms on an idle machine
    expect(root.children).toHaveLength(1);
    expect(root.bytes).toBe(rows.reduce((a, r) => a + r.bytes, 0));
  });
  it('turns snapshot columns into rows', () => {
    expect(snapshotRows({ site: [1], bytes: [10], count: [2] })).toEqual([{ site: 1, bytes: 10, count: 2 }]);
  });
});

describe('temporalRows', () => {
  // site 0 leaks every iteration; site 1 is freed one iteration later.
  const temporal = { site: [0, 0, 0, 1, 1], device: [0, 0, 0, 0, 0], birth_iteration: [0, 1, 2, 0, 1],
    death_iteration: [-1, -1, -1, 1, 2], count: [1, 1, 1, 1, 1], bytes: [10, 10, 10, 5, 5] };
  it('keeps what is alive at the end of the run', () => {
    expect(temporalRows(temporal, 0, 0, 2, true)).toEqual([{ site: 0, bytes: 30, count: 3 }]);
  });
  it('or at the end of the range', () => {
    expect(temporalRows(temporal, 0, 1, 1, false)).toEqual([{ site: 1, bytes: 5, count: 1 }, { site: 0, bytes: 10, count: 1 }].sort((a, b) => b.bytes - a.bytes));
  });
});

describe('fitLine', () => {
  it('puts the report\'s slope where the analysis puts it: through the median of y - slope x', () => {
    const xs = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
    const ys = xs.map((x) => 10 * x + 5);
    ys[5] += 1000;  // one spike: a least-squares line (through the mean) would rise by 100
    ys[0] = 999;  // warm-up, left out
    const line = fitLine(xs, ys, 1, 10);
    expect(line).toEqual({ intercept: 5, x0: 1, y0: 15, x1: 9, y1: 95 });
    expect(fitLine([1], [1], 0, 1)).toBeNull();
  });
  it('places points by iteration number, not by their position in a sampled report', () => {
    const xs = [0, 1, 2, 5000, 20479];
    const line = fitLine(xs, xs.map((x) => 3 * x + 7), 1, 3);
    expect(line.x1).toBe(20479);
    expect(line.y1).toBe(3 * 20479 + 7);
  });
});

describe('iterationsFromColumns', () => {
  it('gives back the report\'s iteration objects', () => {
    const cols = { loops: ['step'], loop: [0, 0], index: [0, 1], primary: [1, 1], start_ns: [1, 3], end_ns: [2, 4],
      devices: [{ index: 0, live_end_bytes: [10, 20], peak_bytes: [11, 21], allocated_bytes: [1, 2], freed_bytes: [0, 1],
        alloc_count: [1, 1], free_count: [0, 1] }] };
    const model = buildModel({ schema: 'gpuleak.html/1', report: { devices: [{ index: 0 }] }, iterations: cols, view: null });
    expect(model.report.iterations[1]).toEqual({ index: 1, loop: 'step', primary: true, start_ns: 3, end_ns: 4,
      devices: [{ index: 0, live_end_bytes: 20, peak_bytes: 21, allocated_bytes: 2, freed_bytes: 1, alloc_count: 1, free_count: 1 }] });
    expect(model.primary).toHaveLength(2);
  });
});
