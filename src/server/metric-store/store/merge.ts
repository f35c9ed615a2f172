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
  const all = concat(parts);
  return clip(inSequence(parts) ? all : sortSamples(all), mint, maxt);
}

/**
 * The samples in time order, one per timestamp: of equal timestamps the last one given wins. The
 * values move as bit patterns, never as numbers, so a stale marker stays one (series.ts).
 */
export function sortSamples(s: Samples): Samples {
  const n = s.timestamps.length;
  const times = s.timestamps;
  const order: number[] = [];
  for (let i = 0; i < n; i++) order.push(i);
  order.sort((a, b) => times[a] - times[b] || a - b);
  let unique = 0;
  for (let k = 0; k < n; k++)
    if (k + 1 === n || times[order[k + 1]] !== times[order[k]]) order[unique++] = order[k];
  const timestamps = new Float64Array(unique);
  const values = new Float64Array(unique);
  const from = new Uint32Array(s.values.buffer, s.values.byteOffset, n * 2);
  const to = new Uint32Array(values.buffer);
  for (let k = 0; k < unique; k++) {
    const i = order[k];
    timestamps[k] = times[i];
    to[2 * k] = from[2 * i];
    to[2 * k + 1] = from[2 * i + 1];
  }
  return { timestamps, values };
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

/** The parts one after the other (the one part itself when there is one). */
export function concat(parts: readonly Samples[]): Samples {
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
