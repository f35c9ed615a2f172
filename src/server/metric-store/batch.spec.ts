import { describe, expect, it } from 'vitest';
import { bitDifference, floatsFromBits, Random } from '../../../test/support/random.js';
import { batchInfo, BatchError, decodeBatch, encodeBatch, mergeSamples } from './batch.js';
import { labelsFromRecord, labelsKey } from './labels.js';
import { isStaleMarker, STALE_NAN_BITS, type SeriesSamples } from './series.js';

const STALE = floatsFromBits([STALE_NAN_BITS])[0];

function samples(labels: Record<string, string>, ts: number[], vs: number[] | Float64Array): SeriesSamples {
  return {
    labels: labelsFromRecord(labels),
    timestamps: Float64Array.from(ts),
    values: Float64Array.from(vs),
  };
}

/** What a batch must hold: per key, time → where the winning value is (the last write). */
function expected(input: SeriesSamples[]): Map<string, Map<number, [Float64Array, number]>> {
  const out = new Map<string, Map<number, [Float64Array, number]>>();
  for (const s of input) {
    const key = labelsKey(s.labels);
    const series = out.get(key) ?? new Map<number, [Float64Array, number]>();
    out.set(key, series);
    s.timestamps.forEach((t, i) => series.set(t, [s.values, i]));
  }
  return out;
}

/** The values at those places, copied bit for bit. */
function valuesAt(places: [Float64Array, number][]): Float64Array {
  const out = new Float64Array(places.length);
  const halves = new Uint32Array(out.buffer);
  places.forEach(([from, i], k) =>
    halves.set(new Uint32Array(from.buffer, from.byteOffset + i * 8, 2), 2 * k),
  );
  return out;
}

describe('write-ahead batches', () => {
  it('round-trip random requests: grouped by series, sorted, later writes winning, bits exact (seeded)', () => {
    const rnd = new Random(11);
    for (let round = 0; round < 150; round++) {
      const input: SeriesSamples[] = [];
      for (let k = rnd.int(0, 30); k > 0; k--) {
        const labels = { __name__: rnd.pick(['up', 'req_total', 'x']), job: rnd.pick(['a', 'b', 'ü"\n']) };
        const n = rnd.int(0, 20);
        const ts = Array.from({ length: n }, () => 1.7e12 + rnd.int(0, 50) * 1000);
        const vs = new Float64Array(n);
        for (let i = 0; i < n; i++) {
          if (rnd.next() < 0.2) rnd.bitsFloat(vs, i);
          else vs[i] = rnd.next() < 0.1 ? STALE : rnd.int(0, 100);
        }
        input.push(samples(labels, ts, vs));
      }
      const batch = encodeBatch(input);
      const decoded = decodeBatch(batch.bytes);
      const want = expected(input.filter((s) => s.timestamps.length > 0));
      expect(decoded.map((s) => s.key).sort()).toEqual([...want.keys()].sort());
      let count = 0;
      for (const s of decoded) {
        expect(labelsKey(s.labels)).toBe(s.key);
        const series = want.get(s.key)!;
        const times = [...series.keys()].sort((x, y) => x - y);
        expect(Array.from(s.timestamps)).toEqual(times);
        expect(bitDifference(s.values, valuesAt(times.map((t) => series.get(t)!)))).toBeUndefined();
        count += times.length;
      }
      const info = batchInfo(batch.bytes);
      expect(info).toEqual({
        seriesCount: decoded.length,
        sampleCount: count,
        minT: batch.minT,
        maxT: batch.maxT,
      });
      if (count > 0) {
        expect(batch.minT).toBe(Math.min(...decoded.map((s) => s.timestamps[0])));
        expect(batch.maxT).toBe(Math.max(...decoded.map((s) => s.timestamps[s.timestamps.length - 1])));
      }
    }
  });

  it('keeps the stale marker and lets the later of two writes at one time win', () => {
    const first = samples({ __name__: 'up' }, [2000, 1000], [1, 2]);
    const second = samples({ __name__: 'up' }, [2000, 3000], [STALE, 4]);
    const [series] = decodeBatch(encodeBatch([first, second]).bytes);
    expect(Array.from(series.timestamps)).toEqual([1000, 2000, 3000]);
    expect(series.values[0]).toBe(2);
    expect(isStaleMarker(series.values[1])).toBe(true);
    expect(series.values[2]).toBe(4);
    const merged = mergeSamples([{ timestamps: Float64Array.of(5, 5, 5), values: Float64Array.of(1, 2, 3) }]);
    expect(Array.from(merged.values)).toEqual([3]);
  });

  it('encodes an empty request, and stores a request of many single-sample series compactly', () => {
    const empty = encodeBatch([]);
    expect(decodeBatch(empty.bytes)).toEqual([]);
    expect(batchInfo(empty.bytes)).toEqual({ seriesCount: 0, sampleCount: 0, minT: 0, maxT: -1 });
    const many = Array.from({ length: 1000 }, (_, i) =>
      samples(
        {
          __name__: 'node_cpu_seconds_total',
          cpu: String(i % 8),
          mode: `m${i}`,
          instance: 'h:9100',
          job: 'node',
        },
        [1.7e12],
        [i * 10],
      ),
    );
    const batch = encodeBatch(many);
    // Label strings shared by all series are stored once, and snappy folds what the chunks repeat.
    expect(batch.bytes.length / 1000).toBeLessThan(20);
  });

  it('refuses bytes that are not a whole batch with a BatchError', () => {
    const { bytes } = encodeBatch([samples({ __name__: 'up', job: 'x' }, [1, 2, 3], [1, 2, 3])]);
    for (let cut = 0; cut < bytes.length; cut++)
      expect(() => decodeBatch(bytes.subarray(0, cut))).toThrow(BatchError);
    expect(() => decodeBatch(Uint8Array.of(1, 2, 3, 4))).toThrow(/not a metric batch/);
    expect(() => decodeBatch(Uint8Array.of(0x4d, 0x53, 0x42, 9))).toThrow(/version 9/);
    expect(() => decodeBatch(Uint8Array.from([...bytes, 0]))).toThrow(BatchError);
    const rnd = new Random(5);
    for (let round = 0; round < 2000; round++) {
      const junk = bytes.slice();
      junk[rnd.int(4, junk.length - 1)] = rnd.int(0, 255);
      try {
        decodeBatch(junk);
      } catch (err) {
        expect(err).toBeInstanceOf(BatchError);
      }
    }
    expect(() => encodeBatch([samples({ __name__: 'up' }, [0.5], [1])])).toThrow(
      /series \{__name__="up"\}: timestamp 0.5/,
    );
  });
});
