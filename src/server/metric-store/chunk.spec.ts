import { describe, expect, it } from 'vitest';
import { bitDifference, floatsFromBits, Random } from '../../../test/support/random.js';
import {
  ChunkAppender,
  ChunkEncoding,
  ChunkError,
  chooseEncoding,
  decodeChunk,
  decodeChunkInto,
  encodeChunk,
  MAX_ABS_TIMESTAMP,
  readChunkHeader,
} from './chunk.js';
import { isStaleMarker, STALE_NAN_BITS } from './series.js';

/** Every encoding, DECIMAL at several scales. */
const ENCODINGS: [ChunkEncoding, number][] = [
  [ChunkEncoding.XOR, 0],
  [ChunkEncoding.DECIMAL, 0],
  [ChunkEncoding.DECIMAL, 2],
  [ChunkEncoding.DECIMAL, 12],
];

/** Every value class with a distinct bit pattern: NaN payloads, signed zeros, infinities, subnormals. */
const SPECIAL = floatsFromBits([
  STALE_NAN_BITS,
  0x7ff0000000000001n, // signalling NaN
  0x7ff8000000000000n,
  0xfff8000000000000n, // negative NaN
  0x7fffffffffffffffn,
  0xffffffffffffffffn,
  0x0000000000000000n,
  0x8000000000000000n, // -0
  0x7ff0000000000000n,
  0xfff0000000000000n,
  0x0000000000000001n, // smallest subnormal
  0x800fffffffffffffn,
  0x7fefffffffffffffn, // largest finite
  0x4340000000000000n, // 2^53
  0x433fffffffffffffn, // 2^53 - 1
  0xc33fffffffffffffn,
  0x3ff0000000000000n,
  0x3ff0000000000001n,
]);

function roundTrip(ts: Float64Array, vs: Float64Array, encoding?: [ChunkEncoding, number]): Uint8Array {
  const chunk = encodeChunk(ts, vs, ...(encoding ?? []));
  const out = decodeChunk(chunk);
  expect(bitDifference(out.timestamps, ts)).toBeUndefined();
  expect(bitDifference(out.values, vs)).toBeUndefined();
  const header = readChunkHeader(chunk);
  expect(header.count).toBe(ts.length);
  if (ts.length > 0) expect([header.minT, header.maxT]).toEqual([ts[0], ts[ts.length - 1]]);
  return chunk;
}

/** Random series of one of several shapes, all timestamps increasing. */
function randomSeries(rnd: Random, n: number): { ts: Float64Array; vs: Float64Array } {
  const ts = new Float64Array(n);
  const vs = new Float64Array(n);
  const step = rnd.pick([1, 15_000, 60_000, 2 ** 31, 2 ** 40]);
  let t = rnd.pick([0, -1e12, 1.7e12, -MAX_ABS_TIMESTAMP, MAX_ABS_TIMESTAMP - n * 2 ** 41]);
  const shape = rnd.int(0, 6);
  let v = rnd.pick([0, 1e6, -3, 2 ** 52]);
  for (let i = 0; i < n; i++) {
    t += rnd.next() < 0.1 ? rnd.int(1, step * 5) : Math.max(1, step + rnd.int(-5, 5));
    ts[i] = Math.min(t, MAX_ABS_TIMESTAMP);
    if (ts[i] <= (ts[i - 1] ?? -Infinity)) ts[i] = ts[i - 1] + 1;
    if (shape === 0) v += rnd.int(0, 300);
    else if (shape === 1) v += rnd.normal();
    else if (shape === 2 && rnd.next() < 0.01) v = rnd.int(-1e9, 1e9);
    if (shape === 3) rnd.bitsFloat(vs, i);
    else if (shape === 4) vs[i] = SPECIAL[rnd.int(0, SPECIAL.length - 1)];
    else if (shape === 5) vs[i] = rnd.next() < 0.2 ? rnd.normal() : rnd.int(-1e3, 1e3) * 2 ** rnd.int(0, 40);
    else if (shape === 6) vs[i] = Math.round(rnd.normal() * 1e4) / 10 ** rnd.int(0, 14);
    else vs[i] = v;
  }
  for (let i = 1; i < n; i++) if (ts[i] <= ts[i - 1]) throw new Error('generator bug');
  return { ts, vs };
}

describe('chunk encoding', () => {
  it('round-trips seeded random series of every shape, in both encodings, bit for bit', () => {
    const rnd = new Random(14);
    for (let round = 0; round < 300; round++) {
      const { ts, vs } = randomSeries(rnd, rnd.int(0, 400));
      for (const encoding of [...ENCODINGS, undefined]) roundTrip(ts, vs, encoding);
    }
  });

  it('keeps every special float pattern, the stale marker read from bytes included', () => {
    const ts = Float64Array.from(SPECIAL, (_, i) => 1000 * i);
    for (const encoding of ENCODINGS) {
      roundTrip(ts, SPECIAL, encoding);
      const out = decodeChunk(encodeChunk(ts, SPECIAL, ...encoding));
      expect(isStaleMarker(out.values[0])).toBe(true);
      expect(isStaleMarker(out.values[2])).toBe(false);
    }
  });

  it('handles irregular intervals, huge gaps, negative and extreme times, single and empty chunks', () => {
    const cases = [
      [0],
      [-5],
      [MAX_ABS_TIMESTAMP],
      [-MAX_ABS_TIMESTAMP, MAX_ABS_TIMESTAMP],
      [-MAX_ABS_TIMESTAMP, -MAX_ABS_TIMESTAMP + 1, 0, 1, MAX_ABS_TIMESTAMP - 1, MAX_ABS_TIMESTAMP],
      [1, 2, 4, 8, 16, 2 ** 20, 2 ** 30, 2 ** 40, 2 ** 41, 2 ** 41 + 1, 2 ** 50],
      [1.7e12, 1.7e12 + 15_000, 1.7e12 + 30_001, 1.7e12 + 45_000, 1.7e12 + 3_600_000, 1.7e12 + 3_615_000],
      [],
    ];
    for (const times of cases) {
      const ts = Float64Array.from(times);
      const vs = Float64Array.from(times, (_, i) => i * 7);
      for (const encoding of ENCODINGS) roundTrip(ts, vs, encoding);
    }
  });

  it('compresses a regular counter to a few bits a sample and constants to about two', () => {
    const n = 480;
    const ts = Float64Array.from({ length: n }, (_, i) => 1.7e12 + 15_000 * i);
    const counter = Float64Array.from({ length: n }, (_, i) => 1000 + 150 * i);
    const constant = new Float64Array(n).fill(42.5);
    expect(encodeChunk(ts, counter).length).toBeLessThan(n / 2);
    expect(encodeChunk(ts, constant).length).toBeLessThan(n / 3);
  });

  it('chooses DECIMAL at the smallest exact scale for integers and short decimals, XOR otherwise', () => {
    const decimal = (scale: number) => ({ encoding: ChunkEncoding.DECIMAL, scale });
    const xor = { encoding: ChunkEncoding.XOR, scale: 0 };
    expect(chooseEncoding(Float64Array.of(1, 2, 3, 2 ** 52))).toEqual(decimal(0));
    expect(chooseEncoding(Float64Array.of(1, 2.5, 3))).toEqual(decimal(1));
    expect(chooseEncoding(Float64Array.of(12.34, 0.1, 99.99, 7))).toEqual(decimal(2));
    expect(chooseEncoding(Float64Array.of(1, Math.PI, 3))).toEqual(xor);
    expect(chooseEncoding(Float64Array.of(-0))).toEqual(xor);
    expect(chooseEncoding(new Float64Array(0))).toEqual(xor);
    // One stale marker among sixteen integers is written raw, not a reason to give up DECIMAL.
    const withMarker = Float64Array.from({ length: 17 }, (_, i) => i);
    withMarker[16] = floatsFromBits([STALE_NAN_BITS])[0];
    expect(chooseEncoding(withMarker)).toEqual(decimal(0));
  });

  it('refuses timestamps that do not increase, are not integers or are out of range', () => {
    const one = Float64Array.of(1, 1);
    expect(() => encodeChunk(Float64Array.of(5, 5), one)).toThrow(/must increase/);
    expect(() => encodeChunk(Float64Array.of(5, 4), one)).toThrow(ChunkError);
    expect(() => encodeChunk(Float64Array.of(0.5), Float64Array.of(1))).toThrow(/integer/);
    expect(() => encodeChunk(Float64Array.of(NaN), Float64Array.of(1))).toThrow(/integer/);
    expect(() => encodeChunk(Float64Array.of(MAX_ABS_TIMESTAMP + 2), Float64Array.of(1))).toThrow(/range/);
    expect(() => encodeChunk(Float64Array.of(1), Float64Array.of(1, 2))).toThrow(/differ/);
  });
});

describe('chunk appender', () => {
  it('resumes a chunk and produces the same bytes as encoding everything at once', () => {
    const rnd = new Random(7);
    for (let round = 0; round < 200; round++) {
      const { ts, vs } = randomSeries(rnd, rnd.int(1, 300));
      const encoding = rnd.pick(ENCODINGS);
      const whole = encodeChunk(ts, vs, ...encoding);
      let cut = 0;
      let chunk = new ChunkAppender(...encoding).finish();
      while (cut < ts.length) {
        const next = Math.min(ts.length, cut + rnd.int(1, 50));
        chunk = ChunkAppender.resume(chunk).appendFrom(ts, vs, cut, next).finish();
        cut = next;
      }
      expect(Buffer.from(chunk).equals(whole)).toBe(true);
    }
  });

  it('appends single samples and refuses one that is not newer', () => {
    const app = new ChunkAppender(ChunkEncoding.DECIMAL).append(10, 1).append(20, 2.5);
    expect(app.samples).toBe(2);
    expect(app.maxT).toBe(20);
    expect(() => app.append(20, 3)).toThrow(/must increase/);
    const out = decodeChunk(app.finish());
    expect(Array.from(out.values)).toEqual([1, 2.5]);
  });
});

describe('chunk decoding', () => {
  it('decodes into larger arrays at an offset', () => {
    const ts = Float64Array.of(1, 2, 3);
    const vs = Float64Array.of(4, 5, 6);
    const outT = new Float64Array(5);
    const outV = new Float64Array(5);
    expect(decodeChunkInto(encodeChunk(ts, vs), outT, outV, 2)).toBe(3);
    expect(Array.from(outT)).toEqual([0, 0, 1, 2, 3]);
    expect(Array.from(outV)).toEqual([0, 0, 4, 5, 6]);
    expect(() => decodeChunkInto(encodeChunk(ts, vs), outT, outV, 3)).toThrow(/room/);
  });

  it('answers a ChunkError for truncated, lying or random bytes, never another failure', () => {
    const rnd = new Random(99);
    const { ts, vs } = randomSeries(rnd, 200);
    for (const encoding of ENCODINGS) {
      const chunk = encodeChunk(ts, vs, ...encoding);
      for (let cut = 0; cut < chunk.length - 1; cut++) {
        expect(() => decodeChunk(chunk.subarray(0, cut))).toThrow(ChunkError);
      }
    }
    // A header claiming four billion samples over a ten-byte body is refused before allocating.
    expect(() => decodeChunk(Uint8Array.of(1, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0, 1, 2, 3))).toThrow(
      /truncated/,
    );
    expect(() => decodeChunk(Uint8Array.of(9, 1, 0, 0))).toThrow(/encoding/);
    expect(() => decodeChunk(Uint8Array.of(2, 13, 1, 0, 0))).toThrow(/scale/);
    for (let round = 0; round < 2000; round++) {
      const junk = Uint8Array.from({ length: rnd.int(0, 64) }, () => rnd.int(0, 255));
      junk[0] = rnd.pick([1, 2]);
      try {
        decodeChunk(junk);
      } catch (err) {
        expect(err).toBeInstanceOf(ChunkError);
      }
    }
  });
});
