import { describe, expect, it } from 'vitest';
import { mergeSamples, sortSamples, type Samples } from './merge.js';

const part = (pairs: [number, number][]): Samples => ({
  timestamps: Float64Array.from(pairs.map(([t]) => t)),
  values: Float64Array.from(pairs.map(([, v]) => v)),
});
const pairs = (s: Samples): [number, number][] => [...s.timestamps].map((t, i) => [t, s.values[i]]);

describe('mergeSamples', () => {
  it('joins parts that follow one another, clipped to the range', () => {
    const merged = mergeSamples(
      [
        part([
          [1, 10],
          [2, 20],
        ]),
        part([
          [3, 30],
          [5, 50],
        ]),
      ],
      2,
      4,
    );
    expect(pairs(merged)).toEqual([
      [2, 20],
      [3, 30],
    ]);
  });

  it('interleaves overlapping parts, the later part winning on equal timestamps', () => {
    const merged = mergeSamples(
      [
        part([
          [1, 1],
          [3, 3],
          [5, 5],
        ]),
        part([
          [2, 20],
          [3, 30],
        ]),
        part([
          [3, 300],
          [6, 600],
        ]),
      ],
      0,
      10,
    );
    expect(pairs(merged)).toEqual([
      [1, 1],
      [2, 20],
      [3, 300],
      [5, 5],
      [6, 600],
    ]);
  });

  it('keeps NaN values and skips empty parts', () => {
    const merged = mergeSamples([part([]), part([[1, NaN]]), part([])], 0, 1);
    expect(merged.timestamps).toEqual(Float64Array.from([1]));
    expect(Number.isNaN(merged.values[0])).toBe(true);
  });
});

describe('sortSamples and the out-of-order merge move values as bits', () => {
  const STALE = 0x7ff0000000000002n;
  const OTHER_NAN = 0x7ff0000000000005n;
  const bits = (v: number): bigint => new BigUint64Array(Float64Array.of(v).buffer)[0];
  const raw = (values: Float64Array): bigint[] => [
    ...new BigUint64Array(values.buffer, values.byteOffset, values.length),
  ];
  /** Samples whose values are these exact bit patterns. */
  const exact = (timestamps: number[], patterns: bigint[]): Samples => ({
    timestamps: Float64Array.from(timestamps),
    values: new Float64Array(BigUint64Array.from(patterns).buffer),
  });

  it('sorts by time, the last of equal timestamps winning, with signalling NaN patterns unchanged', () => {
    const sorted = sortSamples(exact([30, 10, 20, 10], [STALE, bits(1), OTHER_NAN, bits(2)]));
    expect([...sorted.timestamps]).toEqual([10, 20, 30]);
    // As numbers these NaNs would come out with the quiet bit set (0x7ff8...): they must not.
    expect(raw(sorted.values)).toEqual([bits(2), OTHER_NAN, STALE]);
  });

  it('an overlapping merge keeps a stale marker’s exact pattern', () => {
    const merged = mergeSamples(
      [exact([1, 3], [bits(1), STALE]), exact([2, 3, 4], [bits(2), bits(3), OTHER_NAN])],
      0,
      10,
    );
    expect([...merged.timestamps]).toEqual([1, 2, 3, 4]);
    expect(raw(merged.values)).toEqual([bits(1), bits(2), bits(3), OTHER_NAN]);
    const later = mergeSamples([exact([2, 3], [bits(2), bits(3)]), exact([1, 3], [bits(1), STALE])], 0, 10);
    expect(raw(later.values)).toEqual([bits(1), bits(2), STALE]);
  });

  it('many shapes, every marker kept (values never pass through a plain array)', () => {
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let round = 0; round < 2000; round++) {
      const parts = Array.from({ length: 1 + Math.floor(next() * 3) }, () => {
        const n = 1 + Math.floor(next() * 6);
        const start = Math.floor(next() * 10);
        const ts = Array.from({ length: n }, (_, i) => start + i * 2);
        // Integers first (small integers are the engine's cheapest numbers), then a marker.
        return exact(
          ts,
          ts.map((t, i) => (i === n - 1 ? STALE : bits(100 + t))),
        );
      });
      const merged = mergeSamples(parts, -Infinity, Infinity);
      // The last part's last sample is a marker, and the last part wins its timestamp.
      const last = parts[parts.length - 1];
      const t = last.timestamps[last.timestamps.length - 1];
      const at = [...merged.timestamps].indexOf(t);
      expect(raw(merged.values)[at], `round ${round}`).toBe(STALE);
    }
  });
});
