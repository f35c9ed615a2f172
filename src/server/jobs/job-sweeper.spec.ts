import { describe, expect, it } from 'vitest';
import { POLL_MS } from './job-dispatcher.js';
import { sweepIntervalMs } from './job-sweeper.js';

describe('sweepIntervalMs', () => {
  it('is a second with the default timeouts (30 s to confirm, 10 min to run)', () => {
    expect(sweepIntervalMs(30_000, 600_000)).toBe(1000);
  });

  it('is a quarter of the shorter timeout when that is under four seconds', () => {
    expect(sweepIntervalMs(2_000, 600_000)).toBe(500);
    expect(sweepIntervalMs(30_000, 3_000)).toBe(750);
  });

  it('never runs more often than the dispatcher polls', () => {
    expect(sweepIntervalMs(100, 1_000)).toBe(POLL_MS);
  });
});
