import { describe, expect, it } from 'vitest';
import { labelsFromRecord } from './labels.js';
import { SampleBuffer } from './sample-buffer.js';
import { STALE_NAN_BITS } from './series.js';
import type { IncomingSeries, MetricStoreService } from './store/metric-store.service.js';

/** What flush hands the store, copied as it arrives (the buffer's arrays are its own). */
function recorder() {
  const writes: { owner: string; series: { name: string; timestamps: number[]; bits: bigint[] }[] }[] = [];
  const store = {
    write: (owner: string, series: readonly IncomingSeries[]) => {
      writes.push({
        owner,
        series: series.map((s) => {
          const values = s.values as Float64Array;
          return {
            name: s.labels.find((l) => l.name === '__name__')!.value,
            timestamps: [...(s.timestamps as Float64Array)],
            bits: [...new BigUint64Array(values.slice().buffer)],
          };
        }),
      });
      return Promise.resolve({ stored: 0, outOfOrder: 0, tooOld: 0 });
    },
  };
  return { writes, store: store as unknown as MetricStoreService };
}

const bits = (v: number) => new BigUint64Array(Float64Array.of(v).buffer)[0];

describe('SampleBuffer', () => {
  it('holds each series’ samples in order, past its first arrays, and empties on flush', async () => {
    const buffer = new SampleBuffer(1000);
    const a = labelsFromRecord({ __name__: 'a' });
    for (let i = 0; i < 9; i++) buffer.add('o', a, 1000 + i + 0.4, i * 1.5);
    buffer.add('p', labelsFromRecord({ __name__: 'b' }), 5, 7);
    expect(buffer.size).toBe(10);
    const { writes, store } = recorder();
    expect(await buffer.flush(store)).toBe(0);
    expect(writes).toEqual([
      {
        owner: 'o',
        series: [
          {
            name: 'a',
            timestamps: Array.from({ length: 9 }, (_, i) => 1000 + i),
            bits: Array.from({ length: 9 }, (_, i) => bits(i * 1.5)),
          },
        ],
      },
      { owner: 'p', series: [{ name: 'b', timestamps: [5], bits: [bits(7)] }] },
    ]);
    expect(buffer.size).toBe(0);
    const again = recorder();
    await buffer.flush(again.store);
    expect(again.writes).toEqual([]);
  });

  it('a stale marker is written as Prometheus’s exact pattern, after integer samples too', async () => {
    const buffer = new SampleBuffer(1000);
    const up = labelsFromRecord({ __name__: 'up', job: 'x' });
    buffer.add('o', up, 1, 1);
    buffer.add('o', up, 2, 1);
    buffer.addStale('o', up, 3);
    const { writes, store } = recorder();
    await buffer.flush(store);
    expect(writes[0].series[0]).toEqual({
      name: 'up',
      timestamps: [1, 2, 3],
      bits: [bits(1), bits(1), STALE_NAN_BITS],
    });
  });

  it('past maxSamples drops and counts, stale markers included', async () => {
    const buffer = new SampleBuffer(2);
    const s = labelsFromRecord({ __name__: 's' });
    expect(buffer.add('o', s, 1, 1)).toBe(true);
    expect(buffer.add('o', s, 2, 2)).toBe(true);
    expect(buffer.add('o', s, 3, 3)).toBe(false);
    expect(buffer.addStale('o', s, 4)).toBe(false);
    const { writes, store } = recorder();
    expect(await buffer.flush(store)).toBe(2);
    expect(writes[0].series[0].timestamps).toEqual([1, 2]);
  });
});
