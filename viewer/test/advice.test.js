import { describe, expect, it } from 'vitest';
import { adviceTitle, evidenceLabel, evidenceText } from '../src/advice.js';

describe('advice numbers', () => {
  it('read their unit from the name', () => {
    expect(evidenceText('peak_bytes', 8 * 2 ** 20)).toBe('8.00 MiB');
    expect(evidenceText('bytes_per_iteration', 4 * 2 ** 20)).toBe('4.00 MiB');
    expect(evidenceText('peak_bytes_if_released', 20 * 2 ** 20)).toBe('20.0 MiB');
    expect(evidenceText('iteration_ns', 734000)).toBe('734 µs');
    expect(evidenceText('alloc_time_ns_per_iteration', 250000)).toBe('250 µs');
    expect(evidenceText('time_ns_per_iteration', 2.5e6)).toBe('3 ms');
    expect(evidenceText('sync_share', 0.42)).toBe('42%');
    expect(evidenceText('allocs_per_iteration', 1)).toBe('1');
    expect(evidenceText('allocs_per_iteration', 1.5)).toBe('1.50');
    expect(evidenceText('peak_bytes', null)).toBe('–');
  });
  it('label without the unit', () => {
    expect(evidenceLabel('alloc_time_ns_per_iteration')).toBe('alloc time per iteration');
    expect(evidenceLabel('peak_bytes_if_released')).toBe('peak if released');
    expect(evidenceLabel('sync_share')).toBe('sync share');
  });
  it('titles every kind and passes unknown ones through', () => {
    expect(adviceTitle('churn')).toMatch(/every iteration/);
    expect(adviceTitle('new_kind')).toBe('new_kind');
  });
});
