/**
 * An in-memory Queryable for engine tests: series as label sets with sorted samples; select
 * applies the matchers and cuts [mint, maxt]. Test support, not production storage.
 */
import type {
  Label,
  LabelSet,
  Matcher,
  Queryable,
  SeriesSamples,
} from '../../../src/server/metric-store/series.js';
import { compileAnchored } from '../../../src/server/metric-store/promql/regex.js';

export interface MemorySeries {
  labels: Record<string, string>;
  /** [timestamp ms, value] in ascending time order. */
  samples: [number, number][];
}

function matches(m: Matcher, value: string): boolean {
  if (m.type === '=') return value === m.value;
  if (m.type === '!=') return value !== m.value;
  const hit = compileAnchored(m.value).test(value);
  return m.type === '=~' ? hit : !hit;
}

export class MemoryQueryable implements Queryable {
  private readonly series: { labels: LabelSet; t: Float64Array; v: Float64Array }[];
  selects = 0;

  constructor(input: MemorySeries[]) {
    this.series = input.map((s) => {
      const labels: Label[] = Object.entries(s.labels)
        .filter(([, value]) => value !== '')
        .map(([name, value]) => ({ name, value }))
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      return {
        labels,
        t: Float64Array.from(s.samples.map(([t]) => t)),
        v: Float64Array.from(s.samples.map(([, v]) => v)),
      };
    });
  }

  select(matchers: readonly Matcher[], mint: number, maxt: number): Promise<SeriesSamples[]> {
    this.selects++;
    const out: SeriesSamples[] = [];
    for (const s of this.series) {
      const ok = matchers.every((m) => matches(m, s.labels.find((l) => l.name === m.name)?.value ?? ''));
      if (!ok) continue;
      let lo = 0;
      while (lo < s.t.length && s.t[lo] < mint) lo++;
      let hi = lo;
      while (hi < s.t.length && s.t[hi] <= maxt) hi++;
      if (hi > lo) out.push({ labels: s.labels, timestamps: s.t.slice(lo, hi), values: s.v.slice(lo, hi) });
    }
    return Promise.resolve(out);
  }
}
