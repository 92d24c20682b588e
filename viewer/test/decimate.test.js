import { describe, expect, it } from 'vitest';
import { decimateCurve, lowerBound } from '../src/decimate.js';

function walk(n, seed = 1) {
  let s = seed;
  const rnd = () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648);
  const t = new Float64Array(n);
  const y = new Float64Array(n);
  let v = 1e6;
  for (let i = 0; i < n; i++) {
    t[i] = i * 10 + Math.floor(rnd() * 5);
    v = Math.max(0, v + (rnd() - 0.5) * 1e4);
    y[i] = v;
  }
  return { t, y };
}

describe('decimateCurve', () => {
  it('returns short ranges unchanged', () => {
    const { t, y } = walk(50);
    const d = decimateCurve(t, y, t[0], t[49], 100);
    expect(d.t).toEqual(Array.from(t));
  });

  it('keeps the maximum and at most three points per bucket', () => {
    const { t, y } = walk(1_000_000, 3);
    const d = decimateCurve(t, y, t[0], t[t.length - 1], 1000);
    expect(d.t.length).toBeLessThanOrEqual(3 * 1000 + 2);
    const max = (a) => a.reduce((m, v) => Math.max(m, v), -Infinity);
    const min = (a) => a.reduce((m, v) => Math.min(m, v), Infinity);
    expect(max(d.y)).toBe(max(y));
    expect(min(d.y)).toBe(min(y));
    for (let i = 1; i < d.t.length; i++) expect(d.t[i]).toBeGreaterThanOrEqual(d.t[i - 1]);
  });

  it('never averages: a one-point spike survives', () => {
    const n = 200_000;
    const t = Float64Array.from({ length: n }, (_, i) => i);
    const y = Float64Array.from({ length: n }, (_, i) => (i === 123_457 ? 99 : 1));
    const d = decimateCurve(t, y, 0, n - 1, 300);
    const k = d.y.indexOf(99);
    expect(k).toBeGreaterThanOrEqual(0);
    expect(d.t[k]).toBe(123_457);
  });

  it('keeps every bucket maximum inside a zoomed window, plus the edges', () => {
    const { t, y } = walk(100_000, 5);
    const x0 = t[20_000];
    const x1 = t[60_000];
    const buckets = 200;
    const d = decimateCurve(t, y, x0, x1, buckets);
    expect(d.t[0]).toBeLessThan(x0);
    expect(d.t[d.t.length - 1]).toBeGreaterThanOrEqual(x1);
    const width = (x1 - x0) / buckets;
    for (let b = 0; b < buckets; b++) {
      const lo = x0 + b * width;
      const hi = x0 + (b + 1) * width;
      let best = -Infinity;
      for (let i = lowerBound(t, lo); i < t.length && t[i] < hi && t[i] < x1; i++) best = Math.max(best, y[i]);
      if (best === -Infinity) continue;
      const found = d.t.some((tt, i) => tt >= lo && tt < hi && d.y[i] === best);
      expect(found, `bucket ${b}`).toBe(true);
    }
  });

  it('keeps each bucket\'s last point, so a step crosses every column edge at the right value', () => {
    const { t, y } = walk(100_000, 9);
    const buckets = 100;
    const x0 = t[0];
    const x1 = t[t.length - 1];
    const d = decimateCurve(t, y, x0, x1, buckets);
    const width = (x1 - x0) / buckets;
    for (let b = 0; b < buckets - 1; b++) {
      const hi = x0 + (b + 1) * width;
      const last = lowerBound(t, hi) - 1;  // the last point before the column's right edge
      if (last < 1 || t[last] < x0 + b * width) continue;
      expect(d.t.includes(t[last]), `bucket ${b}`).toBe(true);
    }
  });

  it('handles an empty series', () => {
    expect(decimateCurve([], [], 0, 1, 10)).toEqual({ t: [], y: [] });
  });
});
