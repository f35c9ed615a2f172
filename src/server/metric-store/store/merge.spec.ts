import { describe, expect, it } from 'vitest';
import { mergeSamples, type Samples } from './merge.js';

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
