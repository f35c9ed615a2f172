import { describe, expect, it } from 'vitest';
import { Batcher } from './batcher.js';

/** A `run` whose batches the test finishes by hand. */
function controlled() {
  const batches: { keys: number[]; finish: (err?: Error) => void }[] = [];
  const run = (keys: number[]) =>
    new Promise<string[]>((resolve, reject) => {
      batches.push({ keys, finish: (err) => (err ? reject(err) : resolve(keys.map((k) => `v${k}`))) });
    });
  return { batches, run };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('Batcher', () => {
  it('starts a lone call at once; calls made while the batches run go together into the next, up to max', async () => {
    const { batches, run } = controlled();
    const batcher = new Batcher(run, { concurrency: 1, max: 3 });
    const first = batcher.call(1);
    expect(batches.map((b) => b.keys)).toEqual([[1]]);
    const later = [2, 3, 4, 5].map((k) => batcher.call(k));
    await tick();
    expect(batches).toHaveLength(1);
    batches[0].finish();
    expect(await first).toBe('v1');
    await tick();
    expect(batches.map((b) => b.keys)).toEqual([[1], [2, 3, 4]]);
    batches[1].finish();
    await tick();
    expect(batches.map((b) => b.keys)).toEqual([[1], [2, 3, 4], [5]]);
    batches[2].finish();
    expect(await Promise.all(later)).toEqual(['v2', 'v3', 'v4', 'v5']);
  });

  it('runs up to `concurrency` batches at once', async () => {
    const { batches, run } = controlled();
    const batcher = new Batcher(run, { concurrency: 2, max: 10 });
    const calls = [1, 2, 3, 4].map((k) => batcher.call(k));
    expect(batches.map((b) => b.keys)).toEqual([[1], [2]]);
    batches[1].finish();
    await tick();
    expect(batches.map((b) => b.keys)).toEqual([[1], [2], [3, 4]]);
    batches[0].finish();
    batches[2].finish();
    expect(await Promise.all(calls)).toEqual(['v1', 'v2', 'v3', 'v4']);
  });

  it('fails every call of a failed batch, and goes on with the next', async () => {
    const { batches, run } = controlled();
    const batcher = new Batcher(run, { concurrency: 1, max: 10 });
    const first = batcher.call(1);
    const [second, third] = [2, 3].map((k) => batcher.call(k));
    batches[0].finish();
    await first;
    await tick();
    batches[1].finish(new Error('connection lost'));
    await expect(second).rejects.toThrow('connection lost');
    await expect(third).rejects.toThrow('connection lost');
    const fourth = batcher.call(4);
    expect(batches.at(-1)!.keys).toEqual([4]);
    batches.at(-1)!.finish();
    expect(await fourth).toBe('v4');
  });
});
