/**
 * An in-memory Queryable for the engine's unit tests: series as label sets with sorted samples;
 * select applies the matchers with production's matchers.ts (what the store's select runs) and
 * cuts [mint, maxt]. The samples are test support, not production storage.
 */
import {
  setStale,
  type LabelSet,
  type Matcher,
  type Queryable,
  type SeriesSamples,
} from '../../../src/server/metric-store/series.js';
import { canonicalLabels } from '../../../src/server/metric-store/labels.js';
import { compileMatcher, matchesAll } from '../../../src/server/metric-store/matchers.js';

/**
 * [timestamp ms, value], or [timestamp ms, NaN, 'stale'] for Prometheus's stale marker: a marker held
 * as a number in a plain array may lose its NaN payload (series.ts), so it is written as bits only
 * where the values become a Float64Array (sampleValues).
 */
export type Sample = [t: number, v: number, stale?: 'stale'];

export interface MemorySeries {
  labels: Record<string, string>;
  /** In ascending time order. */
  samples: Sample[];
}

/** The samples' values, stale markers written bit for bit. */
export function sampleValues(samples: readonly Sample[]): Float64Array {
  const values = Float64Array.from(samples, ([, v]) => v);
  samples.forEach(([, , stale], i) => stale === 'stale' && setStale(values, i));
  return values;
}

export class MemoryQueryable implements Queryable {
  private readonly series: { labels: LabelSet; t: Float64Array; v: Float64Array }[];
  selects = 0;

  constructor(input: MemorySeries[]) {
    this.series = input.map((s) => {
      const labels = canonicalLabels(Object.entries(s.labels).map(([name, value]) => ({ name, value })));
      return {
        labels,
        t: Float64Array.from(s.samples.map(([t]) => t)),
        v: sampleValues(s.samples),
      };
    });
  }

  select(matchers: readonly Matcher[], mint: number, maxt: number): Promise<SeriesSamples[]> {
    this.selects++;
    const compiled = matchers.map(compileMatcher);
    const out: SeriesSamples[] = [];
    for (const s of this.series) {
      if (!matchesAll(compiled, s.labels)) continue;
      let lo = 0;
      while (lo < s.t.length && s.t[lo] < mint) lo++;
      let hi = lo;
      while (hi < s.t.length && s.t[hi] <= maxt) hi++;
      if (hi > lo) out.push({ labels: s.labels, timestamps: s.t.slice(lo, hi), values: s.v.slice(lo, hi) });
    }
    return Promise.resolve(out);
  }
}
