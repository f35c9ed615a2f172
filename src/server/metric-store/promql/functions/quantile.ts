/**
 * Quantiles as Prometheus 2.42 computes them: `quantile` (aggregation and quantile_over_time,
 * linear interpolation between ranks) and `bucketQuantile` (histogram_quantile over classic
 * cumulative buckets, with coalescing and monotonicity repair).
 */

/** NaN sorts first, as vectorByValueHeap's Less has it. */
function byValue(a: number, b: number): number {
  if (Number.isNaN(a)) return Number.isNaN(b) ? 0 : -1;
  if (Number.isNaN(b)) return 1;
  return a - b;
}

export function quantile(q: number, values: number[]): number {
  if (values.length === 0) return NaN;
  if (q < 0) return -Infinity;
  if (q > 1) return Infinity;
  const sorted = [...values].sort(byValue);
  const n = sorted.length;
  const rank = q * (n - 1);
  const lower = Math.max(0, Math.floor(rank));
  const upper = Math.min(n - 1, lower + 1);
  const weight = rank - Math.floor(rank);
  return sorted[lower] * (1 - weight) + sorted[upper] * weight;
}

export interface Bucket {
  upperBound: number;
  count: number;
}

export function bucketQuantile(q: number, input: Bucket[]): number {
  if (Number.isNaN(q)) return NaN;
  if (q < 0) return -Infinity;
  if (q > 1) return Infinity;
  const sorted = [...input].sort((a, b) => a.upperBound - b.upperBound);
  if (sorted[sorted.length - 1].upperBound !== Infinity) return NaN;
  const buckets = coalesce(sorted);
  ensureMonotonic(buckets);
  if (buckets.length < 2) return NaN;
  const observations = buckets[buckets.length - 1].count;
  if (observations === 0) return NaN;
  let rank = q * observations;
  // sort.Search (a binary search) over all but the +Inf bucket for a count reaching the rank.
  let b = 0;
  for (let j = buckets.length - 1; b < j;) {
    const h = (b + j) >>> 1;
    if (!(buckets[h].count >= rank)) b = h + 1;
    else j = h;
  }
  if (b === buckets.length - 1) return buckets[buckets.length - 2].upperBound;
  if (b === 0 && buckets[0].upperBound <= 0) return buckets[0].upperBound;
  let bucketStart = 0;
  const bucketEnd = buckets[b].upperBound;
  let count = buckets[b].count;
  if (b > 0) {
    bucketStart = buckets[b - 1].upperBound;
    count -= buckets[b - 1].count;
    rank -= buckets[b - 1].count;
  }
  return bucketStart + (bucketEnd - bucketStart) * (rank / count);
}

function coalesce(buckets: Bucket[]): Bucket[] {
  const out: Bucket[] = [];
  let last = { ...buckets[0] };
  for (const b of buckets.slice(1)) {
    if (b.upperBound === last.upperBound) last.count += b.count;
    else {
      out.push(last);
      last = { ...b };
    }
  }
  out.push(last);
  return out;
}

function ensureMonotonic(buckets: Bucket[]): void {
  let max = -Infinity;
  for (const b of buckets) {
    if (b.count > max) max = b.count;
    else if (b.count < max) b.count = max;
  }
}
