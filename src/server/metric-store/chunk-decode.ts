/**
 * The chunk decoder (format in chunk.ts), written for speed: the body is copied once into
 * big-endian 32-bit words, every field is read by peeking 32 bits at a bit position, and the
 * codec state lives in locals. Bit patterns are written through a uint32 view of the values.
 */
import {
  ChunkError,
  HI,
  LO,
  POW10,
  scaled,
  TIME_WIDTHS,
  VALUE_WIDTHS,
  type IntState,
  type XorState,
} from './chunk-codec.js';

export interface BodyInfo {
  decimal: boolean;
  scale: number;
  count: number;
  minT: number;
  /** Byte offset and end of the bit stream in `chunk`. */
  start: number;
  end: number;
}

export interface DecodeState {
  bitLength: number;
  t: IntState;
  v: IntState;
  x: XorState;
}

/** Reused across calls: the body as words, with zero words after it so peeks never go out of range. */
let words = new Uint32Array(1024);
const PAD_WORDS = 6;

function loadWords(chunk: Uint8Array, start: number, end: number): void {
  const n = (end - start + 3) >>> 2;
  if (words.length < n + PAD_WORDS) words = new Uint32Array(Math.max(words.length * 2, n + PAD_WORDS));
  const w = words;
  let p = start;
  let i = 0;
  for (; p + 4 <= end; p += 4, i++)
    w[i] = (chunk[p] << 24) | (chunk[p + 1] << 16) | (chunk[p + 2] << 8) | chunk[p + 3];
  if (p < end) {
    let last = 0;
    for (let k = 0; k < 4; k++) last = (last << 8) | (p + k < end ? chunk[p + k] : 0);
    w[i++] = last;
  }
  for (let k = 0; k < PAD_WORDS; k++) w[i + k] = 0;
}

/** The 32 bits at bit position p of the loaded words (V8 inlines this). */
function peek(w: Uint32Array, p: number): number {
  const off = p & 31;
  const q = p >>> 5;
  return off === 0 ? w[q] | 0 : (w[q] << off) | (w[q + 1] >>> (32 - off));
}

const scratch = new Float64Array(1);
const scratchBits = new Uint32Array(scratch.buffer);

/** Decodes info.count samples into ts/vs from `offset`; returns the final codec state. */
export function decodeBody(
  chunk: Uint8Array,
  info: BodyInfo,
  ts: Float64Array,
  vs: Float64Array,
  offset: number,
): DecodeState {
  loadWords(chunk, info.start, info.end);
  const w = words;
  const raw = new Uint32Array(vs.buffer, vs.byteOffset, vs.length * 2);
  const limit = (info.end - info.start) * 8;
  const div = POW10[info.scale];
  const decimal = info.decimal;
  const n = info.count;
  let p = 0; // bit position
  let t = info.minT;
  let tDelta = 0;
  let v = 0;
  let vDelta = 0;
  let xh = 0;
  let xl = 0;
  let leading = -1;
  let trailing = 0;
  for (let i = 0; i < n; i++) {
    const at = offset + i;
    // ---- timestamp: delta of delta (none for the first sample). The bucket decode is written out
    // here and for DECIMAL values below on purpose: a helper would have to return two numbers
    // from the hottest loop. ----
    if (i > 0) {
      const prevT = t;
      const bits = peek(w, p);
      const ones = Math.min(5, Math.clz32(~bits));
      if (ones < 5) {
        if (ones === 0) p += 1;
        else {
          tDelta += (bits << (ones + 1)) >> (32 - TIME_WIDTHS[ones - 1]);
          p += ones + 1 + TIME_WIDTHS[ones - 1];
        }
        t += tDelta;
      } else {
        scratchBits[HI] = peek(w, p + 5);
        scratchBits[LO] = peek(w, p + 37);
        p += 69;
        t = scratch[0];
        tDelta = t - prevT;
      }
      if (!(t > prevT)) throw new ChunkError('chunk is corrupt: times do not increase');
    }
    ts[at] = t;
    // ---- value ----
    const bits = peek(w, p);
    if (decimal) {
      const ones = Math.min(5, Math.clz32(~bits));
      if (ones < 5) {
        if (ones === 0) p += 1;
        else {
          vDelta += (bits << (ones + 1)) >> (32 - VALUE_WIDTHS[ones - 1]);
          p += ones + 1 + VALUE_WIDTHS[ones - 1];
        }
        v += vDelta;
        vs[at] = div === 1 ? v : v / div;
      } else {
        raw[2 * at + HI] = peek(w, p + 5);
        raw[2 * at + LO] = peek(w, p + 37);
        p += 69;
        // A raw value joins the integer sequence when it is exactly representable in it.
        const m = scaled(vs[at], info.scale);
        if (!Number.isNaN(m)) {
          vDelta = m - v;
          v = m;
        }
      }
    } else if (i === 0) {
      xh = bits;
      xl = peek(w, p + 32);
      p += 64;
      raw[2 * at + HI] = xh;
      raw[2 * at + LO] = xl;
    } else {
      if (bits >>> 31 === 1) {
        // '1': a new XOR; '11' carries its own window.
        let sig: number;
        if (((bits >>> 30) & 1) === 1) {
          leading = (bits >>> 25) & 31;
          sig = (bits >>> 19) & 63 || 64;
          trailing = 64 - leading - sig;
          if (trailing < 0) throw new ChunkError('chunk is corrupt: XOR window beyond 64 bits');
          p += 13;
        } else {
          if (leading < 0) throw new ChunkError('chunk is corrupt: XOR window reused before one was set');
          sig = 64 - leading - trailing;
          p += 2;
        }
        const a = peek(w, p);
        let h = 0;
        let l: number;
        if (sig <= 32) l = a >>> (32 - sig);
        else {
          h = a >>> (64 - sig);
          l = peek(w, p + sig - 32);
        }
        p += sig;
        if (trailing === 0) {
          xh ^= h;
          xl ^= l;
        } else if (trailing < 32) {
          xh ^= (h << trailing) | (l >>> (32 - trailing));
          xl ^= l << trailing;
        } else xh ^= l << (trailing - 32);
      } else p += 1;
      raw[2 * at + HI] = xh;
      raw[2 * at + LO] = xl;
    }
    if (p > limit) throw new ChunkError('chunk is truncated');
  }
  return {
    bitLength: p,
    t: { prev: t, delta: tDelta },
    v: { prev: v, delta: vDelta },
    x: { hi: xh >>> 0, lo: xl >>> 0, leading, trailing },
  };
}
