/**
 * An in-memory Queryable for the engine's unit tests: series as label sets with sorted samples;
 * select applies the matchers with production's matchers.ts (what the store's select runs) and
 * cuts [mint, maxt]. The samples are test support, not production storage.
 */
import type { LabelSet, Matcher, Queryable, SeriesSamples } from '../../../src/server/metric-store/series.js';
import { canonicalLabels } from '../../../src/server/metric-store/labels.js';
import { compileMatcher, matchesAll } from '../../../src/server/metric-store/matchers.js';

export interface MemorySeries {
  labels: Record<string, string>;
  /** [timestamp ms, value] in ascending time order. */
  samples: [number, number][];
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
        v: Float64Array.from(s.samples.map(([, v]) => v)),
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
