/**
 * The encoding side of remote-write.ts, for tests and benchmarks: a `WriteRequest` as Prometheus
 * sends it (protobuf, snappy block compressed). Values are written as their exact bit patterns.
 */
import snappy from 'snappyjs';
import { ByteWriter } from './bytes.js';
import type { MetricMetadata } from './metadata.js';
import { REMOTE_WRITE_TYPES } from './metadata.js';
import { setStale, staleFlags, type Label } from './series.js';

export interface WriteRequestSeries {
  /** Written in this order, unchecked: tests send invalid ones on purpose. */
  labels: readonly Label[];
  timestamps: Float64Array | readonly number[];
  values: Float64Array | readonly number[];
}

const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * The values' bit patterns as they are, except stale markers, which JS holds with the quiet bit set
 * (series.ts): those get Prometheus's exact StaleNaN back, as a real sender writes it.
 */
function valueBytes(values: Float64Array | readonly number[]): Uint8Array {
  // A Float64Array's bytes are copied as they are (other NaN payloads too); numbers go through JS.
  const copy =
    values instanceof Float64Array
      ? new Float64Array(values.buffer.slice(values.byteOffset, values.byteOffset + values.byteLength))
      : Float64Array.from(values);
  const stale = staleFlags(copy);
  if (stale !== null) for (let i = 0; i < copy.length; i++) if (stale[i] === 1) setStale(copy, i);
  return new Uint8Array(copy.buffer);
}

/** Field tag, then a length-delimited message built by `fill`. */
function message(out: ByteWriter, field: number, fill: (w: ByteWriter) => void): void {
  const inner = new ByteWriter(64);
  fill(inner);
  out.uvarint((field << 3) | 2);
  out.blob(inner.bytes.subarray(0, inner.length));
}

function string(out: ByteWriter, field: number, value: string): void {
  out.uvarint((field << 3) | 2);
  out.string(value);
}

/** int64 as protobuf writes it: negative numbers as ten-byte two's complement. */
function int64(out: ByteWriter, value: number): void {
  if (value >= 0) return out.uvarint(value);
  let hi = Math.floor(value / 2 ** 32) >>> 0;
  let lo = (value - Math.floor(value / 2 ** 32) * 2 ** 32) >>> 0;
  for (let i = 0; i < 9; i++) {
    out.byte((lo & 0x7f) | 0x80);
    lo = ((lo >>> 7) | (hi << 25)) >>> 0;
    hi >>>= 7;
  }
  out.byte(lo & 1);
}

export function encodeWriteRequestProto(
  series: readonly WriteRequestSeries[],
  metadata: readonly MetricMetadata[] = [],
) {
  const out = new ByteWriter(256);
  for (const s of series) {
    const bytes = valueBytes(s.values);
    message(out, 1, (ts) => {
      for (const l of s.labels)
        message(ts, 1, (w) => {
          string(w, 1, l.name);
          string(w, 2, l.value);
        });
      for (let i = 0; i < s.timestamps.length; i++)
        message(ts, 2, (w) => {
          w.uvarint((1 << 3) | 1);
          for (let k = 0; k < 8; k++) w.byte(bytes[i * 8 + (LITTLE ? k : 7 - k)]);
          w.uvarint((2 << 3) | 0);
          int64(w, s.timestamps[i]);
        });
    });
  }
  for (const m of metadata)
    message(out, 3, (w) => {
      w.uvarint((1 << 3) | 0);
      w.uvarint(REMOTE_WRITE_TYPES.indexOf(m.type));
      string(w, 2, m.metric);
      string(w, 4, m.help);
      string(w, 5, m.unit);
    });
  return out.finish();
}

/** A remote write body: the request's protobuf, snappy block compressed. */
export function encodeWriteRequest(
  series: readonly WriteRequestSeries[],
  metadata: readonly MetricMetadata[] = [],
) {
  return snappy.compress(encodeWriteRequestProto(series, metadata));
}
