import { describe, expect, it } from 'vitest';
import { FixedWindowCounter } from './rate-limiter.js';

describe('FixedWindowCounter', () => {
  it('allows `limit` events per window, then tells how long to wait', () => {
    let now = 1_000_000;
    const counter = new FixedWindowCounter(3, 60_000, 100, () => now);
    expect([counter.hit('a'), counter.hit('a'), counter.hit('a')]).toEqual([0, 0, 0]);
    expect(counter.retryAfter('a')).toBe(60);
    expect(counter.hit('a')).toBe(60);
    now += 30_500;
    expect(counter.retryAfter('a')).toBe(30);
    expect(counter.retryAfter('b')).toBe(0);
    now += 30_000;
    expect(counter.retryAfter('a')).toBe(0);
    expect(counter.hit('a')).toBe(0);
  });

  it('stays within maxKeys, dropping expired windows first, then the oldest', () => {
    let now = 0;
    const counter = new FixedWindowCounter(1, 1000, 3, () => now);
    counter.hit('old');
    now = 2000;
    counter.hit('x');
    counter.hit('y');
    counter.hit('z');
    expect(counter.size).toBe(3);
    for (let i = 0; i < 50; i++) counter.hit(`flood-${i}`);
    expect(counter.size).toBeLessThanOrEqual(3);
  });
});
