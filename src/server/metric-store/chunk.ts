/**
 * One series' samples compressed Gorilla-style (docs/metric-store-design.md, "Chunks").
 *
 * Layout: header `encoding:u8, [scale:u8 if DECIMAL], count:uvarint, minT:varint,
 * maxT-minT:uvarint`, then a big-endian bit stream with, per sample, the timestamp (none for the
 * first: it is minT) and the value.
 * - Timestamps: delta-of-delta in prefix-coded buckets ('0' = same interval); anything wider than
 *   the widest bucket, or not exactly reproducible in float arithmetic, is written as the raw
 *   64-bit pattern of the absolute time.
 * - Values, XOR: the first as 64 raw bits, then Gorilla's XOR with the previous value's bit
 *   pattern ('0' same, '10' inside the previous window, '11' + 5-bit leading zeros + 6-bit
 *   length + bits).
 * - Values, DECIMAL (counters, counts, gauges with a few decimals): v * 10^scale as an integer,
 *   delta-of-delta coded like timestamps. A value without such an exact form (stale marker, any
 *   NaN, -0, more digits) is written as its raw 64 bits and leaves the integer sequence alone.
 * Every float64 bit pattern round-trips exactly: values travel as two uint32 halves of their bit
 * pattern, and a scaled integer is used only when dividing it back gives the very same float.
 * Timestamps must be integers with |t| <= MAX_ABS_TIMESTAMP, strictly increasing (callers sort).
 */
import { BitWriter } from './bitstream.js';
import { ByteReader, ByteWriter, FormatError } from './bytes.js';
import { decodeBody } from './chunk-decode.js';
import {
  ChunkError,
  decimalBits,
  HI,
  LO,
  MAX_SCALE,
  putInt,
  scaled,
  scaleOf,
  TIME_WIDTHS,
  VALUE_WIDTHS,
  writeXor,
  xorBits,
  type IntState,
  type XorState,
} from './chunk-codec.js';

export { ChunkError };

export enum ChunkEncoding {
  XOR = 1,
  DECIMAL = 2,
}

/** Timestamps beyond ±2^52 ms (142,000 years) are refused, so header varints stay exact. */
export const MAX_ABS_TIMESTAMP = 2 ** 52;

export interface ChunkHeader {
  encoding: ChunkEncoding;
  /** DECIMAL: values are stored as value * 10^scale. */
  scale: number;
  count: number;
  minT: number;
  maxT: number;
  /** Where the bit stream starts. */
  bodyOffset: number;
}

/** Headers are written here and copied out: finish() then allocates only its result. */
const scratchHeader = new ByteWriter(32);

/** Appends samples to a chunk in order; finish() gives the bytes and the appender stays usable. */
export class ChunkAppender {
  private count = 0;
  private minT = 0;
  private readonly t: IntState = { prev: 0, delta: 0 };
  private readonly v: IntState = { prev: 0, delta: 0 };
  private readonly x: XorState = { hi: 0, lo: 0, leading: -1, trailing: 0 };

  constructor(
    readonly encoding: ChunkEncoding = ChunkEncoding.XOR,
    readonly scale = 0,
    private readonly bits = new BitWriter(),
  ) {
    if (!Number.isInteger(scale) || scale < 0 || scale > MAX_SCALE)
      throw new ChunkError(`bad scale ${scale}`);
  }

  get samples(): number {
    return this.count;
  }

  /** The newest timestamp; -Infinity when empty. */
  get maxT(): number {
    return this.count === 0 ? -Infinity : this.t.prev;
  }

  /**
   * Continues an existing chunk. Costs one decode (to recover the codec state and the exact bit
   * length) and a copy of its bytes; nothing is re-encoded.
   */
  static resume(chunk: Uint8Array): ChunkAppender {
    const header = readChunkHeader(chunk);
    const state = decodeInto(
      chunk,
      header,
      new Float64Array(header.count),
      new Float64Array(header.count),
      0,
    );
    const bits = BitWriter.resume(chunk.subarray(header.bodyOffset), state.bitLength);
    const appender = new ChunkAppender(header.encoding, header.scale, bits);
    appender.count = header.count;
    appender.minT = header.minT;
    Object.assign(appender.t, state.t);
    Object.assign(appender.v, state.v);
    Object.assign(appender.x, state.x);
    return appender;
  }

  /** Appends samples [start, end) of the arrays, reading the values' raw bit patterns. */
  appendFrom(timestamps: Float64Array, values: Float64Array, start = 0, end = timestamps.length): this {
    if (values.length < end) throw new ChunkError('fewer values than timestamps');
    const raw = new Uint32Array(values.buffer, values.byteOffset, values.length * 2);
    const w = this.bits;
    const decimal = this.encoding === ChunkEncoding.DECIMAL;
    for (let i = start; i < end; i++) {
      const t = timestamps[i];
      const hi = raw[2 * i + HI];
      const lo = raw[2 * i + LO];
      if (!Number.isInteger(t) || Math.abs(t) > MAX_ABS_TIMESTAMP)
        throw new ChunkError(`timestamp ${t} is not an integer millisecond time within range`);
      if (this.count === 0) {
        this.minT = t;
        this.t.prev = t;
        this.t.delta = 0;
      } else {
        if (!(t > this.t.prev)) throw new ChunkError(`timestamps must increase: ${t} after ${this.t.prev}`);
        putInt(w, t, 0, 0, this.t, true, TIME_WIDTHS);
      }
      if (decimal) putInt(w, scaled(values[i], this.scale), hi, lo, this.v, false, VALUE_WIDTHS);
      else if (this.count === 0) {
        w.write(hi, 32);
        w.write(lo, 32);
        this.x.hi = hi;
        this.x.lo = lo;
      } else writeXor(w, hi, lo, this.x);
      this.count++;
    }
    return this;
  }

  /** Appends one sample; a NaN passed as a number may have had its quiet bit set by the engine. */
  append(t: number, v: number): this {
    return this.appendFrom(Float64Array.of(t), Float64Array.of(v));
  }

  finish(): Uint8Array {
    const body = this.bits.finish();
    const head = scratchHeader;
    head.length = 0;
    head.byte(this.encoding);
    if (this.encoding === ChunkEncoding.DECIMAL) head.byte(this.scale);
    head.uvarint(this.count);
    if (this.count > 0) {
      head.varint(this.minT);
      head.uvarint(this.t.prev - this.minT);
    }
    const out = new Uint8Array(head.length + body.length);
    out.set(head.bytes.subarray(0, head.length));
    out.set(body, head.length);
    return out;
  }
}

/**
 * The encoding that takes fewer bits for these values: DECIMAL at the smallest scale that
 * represents nearly all of them exactly (at most one in 16 written raw), or XOR.
 */
export function chooseEncoding(values: Float64Array): { encoding: ChunkEncoding; scale: number } {
  const xor = { encoding: ChunkEncoding.XOR, scale: 0 };
  const allowed = values.length >>> 4;
  let misses = 0;
  let scale = 0;
  for (let i = 0; i < values.length; i++) {
    if (!Number.isNaN(scaled(values[i], scale))) continue;
    const k = scaleOf(values[i]);
    if (k >= 0) scale = Math.max(scale, k);
    else if (++misses > allowed) return xor;
  }
  if (values.length === 0 || decimalBits(values, scale) > xorBits(values)) return xor;
  return { encoding: ChunkEncoding.DECIMAL, scale };
}

export function encodeChunk(
  timestamps: Float64Array,
  values: Float64Array,
  encoding?: ChunkEncoding,
  scale?: number,
): Uint8Array {
  if (timestamps.length !== values.length) throw new ChunkError('timestamps and values differ in length');
  const chosen = encoding === undefined ? chooseEncoding(values) : { encoding, scale: scale ?? 0 };
  return new ChunkAppender(chosen.encoding, chosen.scale).appendFrom(timestamps, values).finish();
}

export function readChunkHeader(chunk: Uint8Array): ChunkHeader {
  try {
    const r = new ByteReader(chunk);
    const encoding = r.byte() as ChunkEncoding;
    if (encoding !== ChunkEncoding.XOR && encoding !== ChunkEncoding.DECIMAL)
      throw new ChunkError(`unknown chunk encoding ${String(encoding)}`);
    const scale = encoding === ChunkEncoding.DECIMAL ? r.byte() : 0;
    if (scale > MAX_SCALE) throw new ChunkError(`chunk scale ${scale} out of range`);
    const count = r.uvarint();
    const minT = count > 0 ? r.varint() : 0;
    const maxT = count > 0 ? minT + r.uvarint() : 0;
    // Every sample after the first takes at least two bits; refuse before allocating for a lie.
    if (count > 1 + (r.remaining * 8) / 2) throw new ChunkError('chunk is truncated');
    return { encoding, scale, count, minT, maxT, bodyOffset: r.pos };
  } catch (err) {
    if (err instanceof FormatError) throw new ChunkError(`chunk header: ${err.message}`);
    throw err;
  }
}

function bodyInfo(chunk: Uint8Array, h: ChunkHeader) {
  return {
    decimal: h.encoding === ChunkEncoding.DECIMAL,
    scale: h.scale,
    count: h.count,
    minT: h.minT,
    start: h.bodyOffset,
    end: chunk.length,
  };
}

export function decodeChunk(chunk: Uint8Array): { timestamps: Float64Array; values: Float64Array } {
  const header = readChunkHeader(chunk);
  const timestamps = new Float64Array(header.count);
  const values = new Float64Array(header.count);
  decodeInto(chunk, header, timestamps, values, 0);
  return { timestamps, values };
}

/** Decodes into the arrays from `offset` (they must have room) and returns the sample count. */
export function decodeChunkInto(
  chunk: Uint8Array,
  timestamps: Float64Array,
  values: Float64Array,
  offset: number,
): number {
  const header = readChunkHeader(chunk);
  if (offset + header.count > timestamps.length || offset + header.count > values.length)
    throw new ChunkError('no room for the chunk');
  decodeInto(chunk, header, timestamps, values, offset);
  return header.count;
}

function decodeInto(
  chunk: Uint8Array,
  header: ChunkHeader,
  ts: Float64Array,
  vs: Float64Array,
  offset: number,
) {
  const state = decodeBody(chunk, bodyInfo(chunk, header), ts, vs, offset);
  if (header.count > 0 && state.t.prev !== header.maxT)
    throw new ChunkError('chunk is corrupt: its last time differs from its header');
  return state;
}
