/** One series' samples, timestamps ascending. */
export interface Samples {
  timestamps: Float64Array;
  values: Float64Array;
}

/**
 * Merges parts of one series (each ascending) into one ascending run inside [mint, maxt], one
 * sample per timestamp: on equal timestamps the later part wins (a later write replaces a value).
 * Parts that follow one another without overlap, the usual case, are only copied.
 */
export function mergeSamples(parts: readonly Samples[], mint: number, maxt: number): Samples {
  if (inSequence(parts)) return clip(concat(parts), mint, maxt);
  const order: { t: number; v: number; part: number }[] = [];
  parts.forEach((p, part) => {
    for (let i = 0; i < p.timestamps.length; i++) order.push({ t: p.timestamps[i], v: p.values[i], part });
  });
  order.sort((a, b) => a.t - b.t || a.part - b.part);
  const timestamps: number[] = [];
  const values: number[] = [];
  for (let i = 0; i < order.length; i++) {
    if (i + 1 < order.length && order[i + 1].t === order[i].t) continue;
    timestamps.push(order[i].t);
    values.push(order[i].v);
  }
  return clip({ timestamps: Float64Array.from(timestamps), values: Float64Array.from(values) }, mint, maxt);
}

function inSequence(parts: readonly Samples[]): boolean {
  let last = -Infinity;
  for (const p of parts) {
    const n = p.timestamps.length;
    if (n === 0) continue;
    if (p.timestamps[0] <= last) return false;
    last = p.timestamps[n - 1];
  }
  return true;
}

function concat(parts: readonly Samples[]): Samples {
  if (parts.length === 1) return parts[0];
  const total = parts.reduce((n, p) => n + p.timestamps.length, 0);
  const timestamps = new Float64Array(total);
  const values = new Float64Array(total);
  let at = 0;
  for (const p of parts) {
    timestamps.set(p.timestamps, at);
    values.set(p.values, at);
    at += p.timestamps.length;
  }
  return { timestamps, values };
}

/** The samples inside [mint, maxt], as views (no copy). */
function clip(s: Samples, mint: number, maxt: number): Samples {
  const from = lowerBound(s.timestamps, mint);
  const to = lowerBound(s.timestamps, maxt + 1);
  if (from === 0 && to === s.timestamps.length) return s;
  return { timestamps: s.timestamps.subarray(from, to), values: s.values.subarray(from, to) };
}

/** First index whose timestamp is >= t. */
export function lowerBound(timestamps: Float64Array, t: number): number {
  let lo = 0;
  let hi = timestamps.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (timestamps[mid] < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
