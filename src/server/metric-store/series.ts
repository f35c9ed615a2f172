/**
 * The metric store's vocabulary, shared by storage, ingestion and the PromQL engine
 * (docs/metrics.md). Times are integer milliseconds since the epoch, as Prometheus keeps them.
 */

/** One label; a label set is sorted by name, names unique, `__name__` is the metric name. */
export interface Label {
  name: string;
  value: string;
}
export type LabelSet = readonly Label[];

export type MatchType = '=' | '!=' | '=~' | '!~';

/** A label matcher as PromQL writes it: regular expressions are fully anchored, as in Prometheus. */
export interface Matcher {
  type: MatchType;
  name: string;
  value: string;
}

/** A series' samples in one time range, timestamps ascending and unique. */
export interface SeriesSamples {
  labels: LabelSet;
  timestamps: Float64Array;
  values: Float64Array;
}

/**
 * What the PromQL engine reads: every series matching all matchers, with its samples in
 * [mint, maxt] (inclusive). Stale markers are kept as values (isStaleMarker); the engine applies them.
 */
export interface Queryable {
  select(matchers: readonly Matcher[], mint: number, maxt: number): Promise<SeriesSamples[]>;
}

/** Prometheus's stale marker: a NaN with this exact bit pattern (value.StaleNaN). */
export const STALE_NAN_BITS = 0x7ff0000000000002n;

/** The NaN payload that marks staleness, whatever the quiet and sign bits. */
const PAYLOAD_MASK = 0x0007ffffffffffffn;
const STALE_PAYLOAD = STALE_NAN_BITS & PAYLOAD_MASK;

const bits = new DataView(new ArrayBuffer(8));

/**
 * The stale marker as a JS number. V8 sets the quiet bit of a signalling NaN when it becomes a
 * number (0x7ff8000000000002), but keeps the payload through arrays, objects and typed arrays, so
 * staleness is recognised by the payload; writers put STALE_NAN_BITS back on the wire.
 */
export function staleMarker(): number {
  bits.setBigUint64(0, STALE_NAN_BITS);
  return bits.getFloat64(0);
}

export function isStaleMarker(value: number): boolean {
  if (!Number.isNaN(value)) return false;
  bits.setFloat64(0, value);
  return (bits.getBigUint64(0) & PAYLOAD_MASK) === STALE_PAYLOAD;
}
