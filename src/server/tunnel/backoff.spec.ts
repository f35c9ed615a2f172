import { describe, expect, it } from 'vitest';
import { backoffDelay, TUNNEL_BACKOFF } from './backoff.js';

const policy = { baseMs: 100, capMs: 1000, jitter: 0.2 };

describe('backoffDelay', () => {
  it('doubles from the base and stops at the cap', () => {
    const middle = () => 0.5; // factor 1: no jitter
    expect([1, 2, 3, 4, 5, 6, 50].map((n) => backoffDelay(n, policy, middle))).toEqual([
      100, 200, 400, 800, 1000, 1000, 1000,
    ]);
  });

  it('jitters within the stated band and never beyond the cap', () => {
    expect(backoffDelay(1, policy, () => 0)).toBe(80);
    expect(backoffDelay(1, policy, () => 0.999999)).toBe(120);
    expect(backoffDelay(10, policy, () => 0.999999)).toBe(1000);
    expect(backoffDelay(10, policy, () => 0)).toBe(800);
  });

  it('treats attempt 0 or below as the first retry', () => {
    expect(backoffDelay(0, policy, () => 0.5)).toBe(100);
    expect(backoffDelay(-3, policy, () => 0.5)).toBe(100);
  });

  it('the tunnel retries within a second at first and at most every 15 s', () => {
    expect(backoffDelay(1, TUNNEL_BACKOFF, () => 1)).toBeLessThanOrEqual(600);
    expect(backoffDelay(100, TUNNEL_BACKOFF, () => 1)).toBe(15_000);
  });
});
