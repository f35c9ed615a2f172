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
 * `count`, when given, is told each series' sample count as the series is read, before the next is
 * decoded; it throws to stop the read (the engine's sample limit). A Queryable may leave it uncalled.
 */
export interface Queryable {
  select(
    matchers: readonly Matcher[],
    mint: number,
    maxt: number,
    count?: (samples: number) => void,
  ): Promise<SeriesSamples[]>;
}

/** Prometheus's stale marker: a NaN with this exact bit pattern (value.StaleNaN). */
export const STALE_NAN_BITS = 0x7ff0000000000002n;

/** The NaN payload that marks staleness, whatever the quiet and sign bits. */
const PAYLOAD_MASK = 0x0007ffffffffffffn;
const STALE_PAYLOAD = STALE_NAN_BITS & PAYLOAD_MASK;

const bits = new DataView(new ArrayBuffer(8));

/**
 * The stale marker as a JS number, for a value that goes straight into a Float64Array (or to
 * isStaleMarker). V8 sets the quiet bit of a signalling NaN when it becomes a number
 * (0x7ff8000000000002), so staleness is recognised by the payload, and writers put STALE_NAN_BITS
 * back on the wire. The payload does not survive every path a number can take: a plain array or
 * an object field may hold a canonical NaN instead (Array.from(float64Array) always does; other
 * paths only as the engine's code for them changes tier). So sample values travel in Float64Arrays
 * only, are moved as bit patterns where they are reordered (store/merge.ts), and are tested for
 * staleness from their bits (staleFlags).
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

const STALE_LO = Number(STALE_PAYLOAD & 0xffffffffn);
const STALE_HI = Number(STALE_PAYLOAD >> 32n);
const EXPONENT_HI = 0x7ff00000;
const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const [LO, HI] = LITTLE ? [0, 1] : [1, 0];

/**
 * Which values are stale markers, read from their bit patterns (no value becomes a number on the
 * way); null when none is.
 */
export function staleFlags(values: Float64Array): Uint8Array | null {
  const words = new Uint32Array(values.buffer, values.byteOffset, values.length * 2);
  let flags: Uint8Array | null = null;
  for (let i = 0; i < values.length; i++) {
    const hi = words[2 * i + HI];
    if ((hi & EXPONENT_HI) !== EXPONENT_HI || words[2 * i + LO] !== STALE_LO || (hi & 0x7ffff) !== STALE_HI)
      continue;
    (flags ??= new Uint8Array(values.length))[i] = 1;
  }
  return flags;
}

/** Sets values[i] to Prometheus's exact stale marker pattern. */
export function setStale(values: Float64Array, i: number): void {
  const words = new Uint32Array(values.buffer, values.byteOffset + i * 8, 2);
  words[HI] = Number(STALE_NAN_BITS >> 32n);
  words[LO] = STALE_LO;
}
