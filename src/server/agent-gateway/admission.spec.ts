import { describe, expect, it } from 'vitest';
import { Admission } from './admission.js';

describe('Admission', () => {
  it('lets `limit` in at once and the rest in arrival order, each release passing one turn', async () => {
    const admission = new Admission(2);
    const order: number[] = [];
    const releases = await Promise.all([admission.acquire(), admission.acquire()]);
    const later = [3, 4, 5].map((n) => admission.acquire().then((release) => (order.push(n), release)));
    await Promise.resolve();
    expect(order).toEqual([]);
    expect(admission.queued).toBe(3);
    releases[0]();
    releases[0](); // twice is once
    const third = await later[0];
    expect(order).toEqual([3]);
    expect(admission.queued).toBe(2);
    releases[1]();
    third();
    await Promise.all(later);
    expect(order).toEqual([3, 4, 5]);
    expect(admission.queued).toBe(0);
  });
});
