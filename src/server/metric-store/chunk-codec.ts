/**
 * The encoders of chunk.ts's two bit-level codecs and what the decoder (chunk-decode.ts) shares
 * with them: delta-of-delta integers in prefix-coded buckets (timestamps, and the scaled values of
 * DECIMAL chunks) and Gorilla's XOR floats. 64-bit patterns travel as uint32 halves (hi, lo).
 */
import type { BitWriter } from './bitstream.js';

export class ChunkError extends Error {
  override name = 'ChunkError';
}

/** The previous integer and interval of a delta-of-delta sequence. */
export interface IntState {
  prev: number;
  delta: number;
}

/** The previous value's bit pattern and XOR window (leading -1: no window yet). */
export interface XorState {
  hi: number;
  lo: number;
  leading: number;
  trailing: number;
}

/**
 * Payload widths of the buckets '10', '110', '1110', '11110' (two's complement, k bits hold
 * [-2^(k-1), 2^(k-1)-1]); '11111' is followed by the raw 64-bit float pattern of the absolute
 * value. At most 27 bits, so prefix and payload fit one 32-bit read. Tuned on the bench's data
 * (bench/metric-chunks.mjs): a few ms of scrape jitter fits the first time bucket, a missed 15 s
 * scrape the third; a counter's varying increments mostly the first two value buckets.
 */
export const TIME_WIDTHS = [4, 8, 16, 24];
export const VALUE_WIDTHS = [6, 11, 20, 27];

/** DECIMAL chunks store value * 10^scale as integers; scale at most MAX_SCALE. */
export const MAX_SCALE = 12;
export const POW10 = Array.from({ length: MAX_SCALE + 1 }, (_, k) => 10 ** k);

/** Indexes of a float64's halves in a Uint32Array view, whatever the platform's byte order. */
const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
export const LO = LITTLE ? 0 : 1;
export const HI = LITTLE ? 1 : 0;

const scratch = new Float64Array(1);
const scratchBits = new Uint32Array(scratch.buffer);

/**
 * v * 10^scale when that integer, divided back, gives exactly v (so the decoder's division
 * restores the same bits); NaN otherwise (NaN, infinities, -0, too many digits). The decoder
 * applies the same test to raw values.
 */
export function scaled(v: number, scale: number): number {
  const div = POW10[scale];
  const m = Math.round(v * div);
  return Number.isSafeInteger(m) && m / div === v && !(m === 0 && 1 / v < 0) ? m : NaN;
}

/** The smallest scale at which v is exactly representable, or -1. */
export function scaleOf(v: number): number {
  for (let k = 0; k <= MAX_SCALE; k++) if (!Number.isNaN(scaled(v, k))) return k;
  return -1;
}

/**
 * Writes the integer `x` as a delta of delta, or NaN for a value outside the integer sequence:
 * that one is written as its raw pattern hi:lo and leaves the state as it was. Timestamps pass
 * hi = lo = 0 and get their own pattern written when they escape.
 */
export function putInt(
  w: BitWriter,
  x: number,
  hi: number,
  lo: number,
  s: IntState,
  timestamp: boolean,
  widths: readonly number[],
): void {
  const integer = !Number.isNaN(x);
  if (integer) {
    const dod = x - s.prev - s.delta;
    // Exact only if the decoder's arithmetic gives x back; huge jumps may round, so check.
    if (dod === 0 && s.prev + s.delta === x) {
      w.writeBit(0);
      s.prev = x;
      return;
    }
    for (let b = 0; b < 4; b++) {
      const k = widths[b];
      const half = 1 << (k - 1);
      if (dod >= -half && dod < half && s.prev + (s.delta + dod) === x) {
        w.write((((1 << (b + 2)) - 2) << k) | (dod & ((1 << k) - 1)), b + 2 + k); // '10', '110', ...
        s.delta += dod;
        s.prev = x;
        return;
      }
    }
  }
  if (timestamp) {
    scratch[0] = x;
    hi = scratchBits[HI];
    lo = scratchBits[LO];
  }
  w.write(0x1f, 5);
  w.write(hi, 32);
  w.write(lo, 32);
  if (integer) {
    s.delta = x - s.prev;
    s.prev = x;
  }
}

/** Count of trailing zero bits of a non-zero uint32. */
function ctz(v: number): number {
  return 31 - Math.clz32(v & -v);
}

export function writeXor(w: BitWriter, hi: number, lo: number, s: XorState): void {
  const xh = (hi ^ s.hi) >>> 0;
  const xl = (lo ^ s.lo) >>> 0;
  s.hi = hi;
  s.lo = lo;
  if (xh === 0 && xl === 0) {
    w.writeBit(0);
    return;
  }
  let leading = xh !== 0 ? Math.clz32(xh) : 32 + Math.clz32(xl);
  const trailing = xl !== 0 ? ctz(xl) : 32 + ctz(xh);
  if (leading > 31) leading = 31;
  let sig: number;
  let shift: number;
  if (s.leading >= 0 && leading >= s.leading && trailing >= s.trailing) {
    w.write(0b10, 2);
    sig = 64 - s.leading - s.trailing;
    shift = s.trailing;
  } else {
    s.leading = leading;
    s.trailing = trailing;
    sig = 64 - leading - trailing;
    shift = trailing;
    w.write(0b11, 2);
    w.write(leading, 5);
    w.write(sig & 63, 6);
  }
  if (shift === 0) w.write64(xh, xl, sig);
  else if (shift < 32) w.write64(xh >>> shift, (xl >>> shift) | (xh << (32 - shift)), sig);
  else w.write64(0, xh >>> (shift - 32), sig);
}

/** Bits the values would take as DECIMAL at `scale` (what putInt would write). */
export function decimalBits(values: Float64Array, scale: number): number {
  let bits = 0;
  let prev = 0;
  let delta = 0;
  for (let i = 0; i < values.length; i++) {
    const m = scaled(values[i], scale);
    if (Number.isNaN(m)) {
      bits += 69;
      continue;
    }
    const dod = m - prev - delta;
    delta = m - prev;
    prev = m;
    if (dod === 0) bits += 1;
    else {
      let b = 0;
      while (b < 4 && !(Math.abs(dod) < 1 << (VALUE_WIDTHS[b] - 1))) b++;
      bits += b < 4 ? b + 2 + VALUE_WIDTHS[b] : 69;
    }
  }
  return bits;
}

/** Bits the values would take as XOR (what writeXor would write). */
export function xorBits(values: Float64Array): number {
  const raw = new Uint32Array(values.buffer, values.byteOffset, values.length * 2);
  const s: XorState = { hi: 0, lo: 0, leading: -1, trailing: 0 };
  let bits = 64;
  for (let i = 1; i < values.length; i++) {
    const xh = (raw[2 * i + HI] ^ raw[2 * i - 2 + HI]) >>> 0;
    const xl = (raw[2 * i + LO] ^ raw[2 * i - 2 + LO]) >>> 0;
    if (xh === 0 && xl === 0) {
      bits += 1;
      continue;
    }
    const leading = Math.min(31, xh !== 0 ? Math.clz32(xh) : 32 + Math.clz32(xl));
    const trailing = xl !== 0 ? ctz(xl) : 32 + ctz(xh);
    if (s.leading >= 0 && leading >= s.leading && trailing >= s.trailing) bits += 66 - s.leading - s.trailing;
    else {
      s.leading = leading;
      s.trailing = trailing;
      bits += 77 - leading - trailing;
    }
  }
  return bits;
}
