import type { DataSource } from 'typeorm';
import { describe, expect, it } from 'vitest';
import { encodeChunk } from '../chunk.js';
import { SampleStore, sqlRange } from './sample-store.js';

/** A database holding chunk rows only (no batches), recording the parameters of each query. */
function database(chunks: { series_id: string; data: Buffer }[]): {
  source: DataSource;
  params: unknown[][];
} {
  const params: unknown[][] = [];
  const query = (sql: string, values: unknown[]) => {
    params.push(values);
    for (const value of values)
      if (typeof value === 'number' && !Number.isSafeInteger(value))
        return Promise.reject(new Error(`invalid input syntax for type bigint: "${String(value)}"`));
    return Promise.resolve(sql.includes('FROM metric_chunks') ? chunks : []);
  };
  return { source: { query } as unknown as DataSource, params };
}

const chunk = (id: number, n: number) => ({
  series_id: String(id),
  data: Buffer.from(
    encodeChunk(
      Float64Array.from({ length: n }, (_, i) => 1000 * i),
      Float64Array.from({ length: n }, (_, i) => i),
    ),
  ),
});

describe('sample store reads', () => {
  it('takes any time range to whole milliseconds a bigint parameter holds', () => {
    expect(sqlRange(0, 10)).toEqual([0, 10]);
    expect(sqlRange(0.5, 9.5)).toEqual([0, 10]);
    expect(sqlRange(-1e21, 1e43)).toEqual([-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER]);
    expect(sqlRange(-Infinity, Infinity)).toEqual([-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER]);
    expect(sqlRange(NaN, 10)).toBeNull();
    expect(sqlRange(10, NaN)).toBeNull();
    expect(sqlRange(10, 0)).toBeNull();
    expect(sqlRange(1e20, 1e21)).toBeNull();
  });

  it('sends no time to SQL that PostgreSQL would refuse (1e+21, NaN)', async () => {
    const db = database([chunk(1, 10)]);
    const store = new SampleStore(db.source);
    expect((await store.read('o', [1], -1e21, 1e21)).get(1)?.timestamps.length).toBe(10);
    expect((await store.read('o', [1], NaN, 1e21)).size).toBe(0);
    expect((await store.present('o', [1], -1e43, 1e43)).has(1)).toBe(true);
    for (const values of db.params)
      for (const value of values)
        if (typeof value === 'number') expect(Number.isSafeInteger(value)).toBe(true);
  });

  it("decodes one series at a time, telling each one's count before the next is decoded", async () => {
    const store = new SampleStore(database([chunk(1, 100), chunk(2, 100), chunk(3, 100)]).source);
    const counts: number[] = [];
    await store.read('o', [1, 2, 3], 0, 1e9, (n) => counts.push(n));
    expect(counts).toEqual([100, 100, 100]);
    // A limit thrown from the count stops the read there.
    let seen = 0;
    const stop = store.read('o', [1, 2, 3], 0, 1e9, (n) => {
      seen += n;
      if (seen > 150) throw new Error('too many samples');
    });
    await expect(stop).rejects.toThrow('too many samples');
    expect(seen).toBe(200);
  });
});
