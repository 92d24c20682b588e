import { describe, expect, it } from 'vitest';
import { topFrame } from '../src/site_table.js';

describe('topFrame', () => {
  it('shows the report\'s headline, never a frame of its own choosing', () => {
    const row = {
      stack: [{ kind: 'python', function: 'Linear.forward', file: '/v/site-packages/torch/nn/modules/linear.py', line: 134 },
        { kind: 'python', function: 'train_step', file: '/p/train.py', line: 41 }],
      headline: { text: 'train.py:41 in train_step (via Linear.forward, torch/nn/modules/linear.py:134)' },
    };
    expect(topFrame(row)).toBe('train.py:41 in train_step (via Linear.forward, torch/nn/modules/linear.py:134)');
  });
  it('falls back to the innermost frame for reports written before headlines', () => {
    expect(topFrame({ stack: [{ kind: 'native', function: 'f', file: '/a/b.cu', line: 3 }] })).toBe('f (b.cu:3)');
  });
});
