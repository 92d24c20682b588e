import { describe, expect, it } from 'vitest';
import { forecastSentences, verdictSummary } from '../src/summary.js';

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
  it('explains an inconclusive run without iterations', () => {
    const s = verdictSummary({ verdict: 'inconclusive', iteration_source: 'none', devices: [] });
    expect(s.sentence).toMatch(/No iterations were found/);
  });
  it('reports clean runs plainly', () => {
    expect(verdictSummary({ verdict: 'clean', analysis: { primary_iterations: 10 } }).title).toBe('No leak found');
  });
});

describe('forecastSentences', () => {
  it('says when the device runs out', () => {
    const [s] = forecastSentences(leakReport);
    expect(s).toBe('At +18.0 MiB per iteration, GPU 0 (NVIDIA H200) runs out of memory of 140 GiB in about ' +
      '7,702 more iterations (≈ 59 min), if nothing else changes.');
  });
  it('says nothing without a forecast', () => {
    expect(forecastSentences({ devices: [{ index: 0, forecast: null }] })).toEqual([]);
  });
});
