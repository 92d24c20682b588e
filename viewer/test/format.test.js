import { describe, expect, it } from 'vitest';
import {
  forecastPhrase, formatBytes, formatCount, formatRate, formatSeconds, formatTimeTicks, frameLabel, plural,
} from '../src/format.js';

describe('formatBytes', () => {
  it('uses binary units with three significant digits', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1024)).toBe('1.00 KiB');
    expect(formatBytes(1536)).toBe('1.50 KiB');
    expect(formatBytes(18874368)).toBe('18.0 MiB');
    expect(formatBytes(150754820096)).toBe('140 GiB');
    expect(formatBytes(5 * 2 ** 40)).toBe('5.00 TiB');
  });
  it('carries into the next unit instead of printing 1024', () => {
    expect(formatBytes(1024 * 1024 - 1)).toBe('1.00 MiB');
  });
  it('keeps the sign and says unknown for null', () => {
    expect(formatBytes(-2048)).toBe('-2.00 KiB');
    expect(formatBytes(null)).toBe('–');
    expect(formatBytes(Number.NaN)).toBe('–');
  });
});

describe('rates, counts and durations', () => {
  it('formats a growth rate', () => {
    expect(formatRate(1048576)).toBe('+1.00 MiB per iteration');
    expect(formatRate(0)).toBe('0 B per iteration');
  });
  it('groups thousands', () => {
    expect(formatCount(1234567)).toBe('1,234,567');
  });
  it('says durations in the unit people use', () => {
    expect(formatSeconds(0.85)).toBe('850 ms');
    expect(formatSeconds(42)).toBe('42 s');
    expect(formatSeconds(3544.1)).toBe('59 min');
    expect(formatSeconds(5 * 3600)).toBe('5.0 h');
    expect(formatSeconds(3 * 86400)).toBe('3.0 days');
  });
});

describe('frameLabel', () => {
  it('shows function and file:line', () => {
    expect(frameLabel({ function: 'train_step', file: '/home/ana/train.py', line: 42 })).toBe('train_step (train.py:42)');
  });
  it('falls back to the address and module', () => {
    expect(frameLabel({ function: null, file: null, module: 'libfoo.so', address: '0x7f00' })).toBe('0x7f00 in libfoo.so');
    expect(frameLabel(undefined)).toBe('(unknown)');
  });
});

describe('formatTimeTicks', () => {
  it('uses one unit per axis, with the decimals the step needs', () => {
    expect(formatTimeTicks([0, 5e8, 1e9, 1.5e9])).toEqual(['0.0 s', '0.5 s', '1.0 s', '1.5 s']);
    expect(formatTimeTicks([0, 2e6, 4e6])).toEqual(['0 ms', '2 ms', '4 ms']);
    expect(formatTimeTicks([1e10, 2e10])).toEqual(['10 s', '20 s']);
    expect(formatTimeTicks([0, 250e3, 500e3])).toEqual(['0 µs', '250 µs', '500 µs']);
  });
});

describe('plural', () => {
  it('says one thing in the singular and the rest in the plural', () => {
    expect(plural(1, 'allocation')).toBe('1 allocation');
    expect(plural(0, 'allocation')).toBe('0 allocations');
    expect(plural(1024, 'call site')).toBe('1,024 call sites');
    expect(plural(2, 'process', 'processes')).toBe('2 processes');
  });
});

describe('forecastPhrase', () => {
  // The same words as src/format/words.h (tests/unit/text_summary_test.cpp, report_markdown_test.cpp).
  it('is one phrase everywhere', () => {
    expect(forecastPhrase(4100, 1025)).toBe('out of memory in ~4,100 iterations (~17 min)');
    expect(forecastPhrase(1, 0)).toBe('out of memory in ~1 iteration');
    expect(forecastPhrase(120, 0.5)).toBe('out of memory in ~120 iterations (under 1 s)');
    expect(forecastPhrase(0, 0)).toBe('out of memory within the next iteration');
  });
});
