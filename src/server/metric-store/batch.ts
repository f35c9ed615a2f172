/**
 * The write-ahead batch (docs/metric-store-design.md, "Durability at acknowledgement"): one write
 * request's samples as one byte string, stored before the write is acknowledged and folded into
 * per-series chunks later. Samples are grouped by series, sorted by time (the later of two writes
 * at one time wins) and chunk-encoded; the label sets travel along, their strings in one table.
 *
 * Layout: "MSB" version:u8, seriesCount, sampleCount, [minT (varint), maxT-minT], then
 * snappy-compressed (block format): stringCount, strings (length-prefixed UTF-8), per series:
 * labelCount, (name, value) string indexes, chunk (length-prefixed, chunk.ts). Unsigned varints
 * unless noted. Snappy halves a typical request (shared timestamps, similar values and indexes).
 */
import snappy from 'snappyjs';
import { ByteReader, ByteWriter, FormatError } from './bytes.js';
import { ChunkError, decodeChunk, encodeChunk } from './chunk.js';
import { labelsKey } from './labels.js';
import type { LabelSet, SeriesSamples } from './series.js';

const MAGIC = [0x4d, 0x53, 0x42]; // "MSB"
const VERSION = 1;

export class BatchError extends Error {
  override name = 'BatchError';
}

export interface BatchSeries extends SeriesSamples {
  /** labelsKey(labels). */
  key: string;
}

export interface EncodedBatch {
  bytes: Uint8Array;
  seriesCount: number;
  sampleCount: number;
  /** Time range of the samples; 0 and -1 when there are none. */
  minT: number;
  maxT: number;
}

/** Halves of float64 bit patterns: copying through them keeps NaN payloads exactly. */
const bits = (a: Float64Array) => new Uint32Array(a.buffer, a.byteOffset, a.length * 2);

/**
 * One series' samples from several parts, ascending by time, one sample per time: for equal
 * times the later one (in part order, then within a part) wins.
 */
export function mergeSamples(parts: readonly { timestamps: Float64Array; values: Float64Array }[]): {
  timestamps: Float64Array;
  values: Float64Array;
} {
  if (parts.length === 1 && isStrictlyIncreasing(parts[0].timestamps)) return parts[0];
  const n = parts.reduce((sum, p) => sum + p.timestamps.length, 0);
  const ts = new Float64Array(n);
  const vs = new Float64Array(n);
  const vb = bits(vs);
  let at = 0;
  for (const p of parts) {
    ts.set(p.timestamps, at);
    vb.set(bits(p.values).subarray(0, p.timestamps.length * 2), at * 2);
    at += p.timestamps.length;
  }
  // A stable order by time: among equal times, the original (write) order is kept.
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => ts[a] - ts[b] || a - b);
  const outT = new Float64Array(n);
  const outV = new Float64Array(n);
  const ob = bits(outV);
  let m = 0;
  for (let k = 0; k < n; k++) {
    const i = order[k];
    if (m > 0 && outT[m - 1] === ts[i]) m--; // the later write replaces the earlier
    outT[m] = ts[i];
    ob[2 * m] = vb[2 * i];
    ob[2 * m + 1] = vb[2 * i + 1];
    m++;
  }
  return { timestamps: outT.subarray(0, m), values: outV.subarray(0, m) };
}

function isStrictlyIncreasing(ts: Float64Array): boolean {
  for (let i = 1; i < ts.length; i++) if (!(ts[i] > ts[i - 1])) return false;
  return true;
}

/** Encodes samples of canonical label sets (labels.ts); the same series may come several times. */
export function encodeBatch(input: Iterable<SeriesSamples>): EncodedBatch {
  const groups = new Map<string, { labels: LabelSet; parts: SeriesSamples[] }>();
  for (const s of input) {
    if (s.values.length < s.timestamps.length) throw new BatchError('fewer values than timestamps');
    if (s.timestamps.length === 0) continue;
    const key = labelsKey(s.labels);
    const group = groups.get(key);
    if (group) group.parts.push(s);
    else groups.set(key, { labels: s.labels, parts: [s] });
  }
  const strings = new Map<string, number>();
  const index = (s: string) => {
    let i = strings.get(s);
    if (i === undefined) strings.set(s, (i = strings.size));
    return i;
  };
  const body = new ByteWriter(1024);
  let sampleCount = 0;
  let minT = Infinity;
  let maxT = -Infinity;
  for (const { labels, parts } of groups.values()) {
    const { timestamps, values } = mergeSamples(parts);
    body.uvarint(labels.length);
    for (const { name, value } of labels) {
      body.uvarint(index(name));
      body.uvarint(index(value));
    }
    try {
      body.blob(encodeChunk(timestamps, values));
    } catch (err) {
      if (err instanceof ChunkError) throw new BatchError(`series ${labelsKey(labels)}: ${err.message}`);
      throw err;
    }
    sampleCount += timestamps.length;
    minT = Math.min(minT, timestamps[0]);
    maxT = Math.max(maxT, timestamps[timestamps.length - 1]);
  }
  if (sampleCount === 0) [minT, maxT] = [0, -1];
  const inner = new ByteWriter(body.length + 16 * strings.size + 16);
  inner.uvarint(strings.size);
  for (const s of strings.keys()) inner.string(s);
  inner.raw(body.bytes.subarray(0, body.length));
  const packed = snappy.compress(inner.bytes.subarray(0, inner.length));
  const out = new ByteWriter(packed.length + 32);
  for (const b of MAGIC) out.byte(b);
  out.byte(VERSION);
  out.uvarint(groups.size);
  out.uvarint(sampleCount);
  if (sampleCount > 0) {
    out.varint(minT);
    out.uvarint(maxT - minT);
  }
  out.raw(packed);
  return { bytes: out.finish(), seriesCount: groups.size, sampleCount, minT, maxT };
}

function readHeader(r: ByteReader): Omit<EncodedBatch, 'bytes'> {
  for (const b of MAGIC) if (r.byte() !== b) throw new BatchError('not a metric batch');
  const version = r.byte();
  if (version !== VERSION) throw new BatchError(`unknown metric batch version ${version}`);
  const seriesCount = r.uvarint();
  const sampleCount = r.uvarint();
  if (sampleCount === 0) return { seriesCount, sampleCount, minT: 0, maxT: -1 };
  const minT = r.varint();
  return { seriesCount, sampleCount, minT, maxT: minT + r.uvarint() };
}

/** The counts and time range without decoding the samples. */
export function batchInfo(bytes: Uint8Array): Omit<EncodedBatch, 'bytes'> {
  try {
    return readHeader(new ByteReader(bytes));
  } catch (err) {
    if (err instanceof FormatError) throw new BatchError(`metric batch: ${err.message}`);
    throw err;
  }
}

/** Our own batches only, so a generous bound on the inflated size is enough of a guard. */
const MAX_INFLATED = 2 ** 30;

function inflate(packed: Uint8Array): Uint8Array {
  try {
    return snappy.uncompress(packed, MAX_INFLATED);
  } catch (err) {
    throw new BatchError(`metric batch: ${(err as Error).message}`);
  }
}

export function decodeBatch(bytes: Uint8Array): BatchSeries[] {
  const outer = new ByteReader(bytes);
  try {
    const header = readHeader(outer);
    const r = new ByteReader(inflate(bytes.subarray(outer.pos)));
    const stringCount = r.uvarint();
    if (stringCount > r.remaining) throw new BatchError('metric batch is truncated');
    const strings = Array.from({ length: stringCount }, () => r.string());
    const string = (i: number) => {
      if (i >= strings.length) throw new BatchError('metric batch is corrupt: string index out of range');
      return strings[i];
    };
    if (header.seriesCount > r.remaining) throw new BatchError('metric batch is truncated');
    const out: BatchSeries[] = [];
    let samples = 0;
    for (let s = 0; s < header.seriesCount; s++) {
      const n = r.uvarint();
      if (n > r.remaining) throw new BatchError('metric batch is truncated');
      const labels = Array.from({ length: n }, () => ({
        name: string(r.uvarint()),
        value: string(r.uvarint()),
      }));
      const { timestamps, values } = decodeChunk(r.blob());
      samples += timestamps.length;
      out.push({ key: labelsKey(labels), labels, timestamps, values });
    }
    if (r.remaining !== 0 || samples !== header.sampleCount)
      throw new BatchError('metric batch is corrupt: counts differ from its header');
    return out;
  } catch (err) {
    if (err instanceof FormatError || err instanceof ChunkError)
      throw new BatchError(`metric batch: ${err.message}`);
    throw err;
  }
}
