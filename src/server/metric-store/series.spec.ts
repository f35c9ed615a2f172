import { describe, expect, it } from 'vitest';
import { isStaleMarker, setStale, staleFlags, staleMarker, STALE_NAN_BITS } from './series.js';

/** Float64Array of these exact bit patterns. */
const fromBits = (patterns: bigint[]): Float64Array => new Float64Array(BigUint64Array.from(patterns).buffer);
const bitsOf = (values: Float64Array): bigint[] => [
  ...new BigUint64Array(values.buffer, values.byteOffset, values.length),
];

const ONE = 0x3ff0000000000000n;
const QUIET_NAN = 0x7ff8000000000000n;

describe('stale markers', () => {
  it('as numbers: recognised by the payload, whatever the quiet bit; an ordinary NaN is not one', () => {
    const marker = staleMarker();
    expect(isStaleMarker(marker)).toBe(true);
    expect(isStaleMarker(new Float64Array([marker])[0])).toBe(true);
    expect(isStaleMarker(NaN)).toBe(false);
    expect(isStaleMarker(0 / 0)).toBe(false);
    expect(isStaleMarker(Infinity)).toBe(false);
    expect(isStaleMarker(1)).toBe(false);
  });

  it('the wire pattern read from bytes is a stale marker', () => {
    const view = new DataView(new ArrayBuffer(8));
    view.setBigUint64(0, STALE_NAN_BITS, true);
    expect(isStaleMarker(view.getFloat64(0, true))).toBe(true);
  });

  it('a plain array does not keep the payload on every path: why values stay in Float64Arrays', () => {
    // V8 stores a NaN into a double array canonically on some paths; Array.from of a Float64Array
    // is one that always does. The store's own paths move values as bits (store/merge.ts).
    const [copied] = Array.from(fromBits([STALE_NAN_BITS]));
    expect(Number.isNaN(copied)).toBe(true);
    expect(isStaleMarker(copied)).toBe(false);
  });

  it('staleFlags reads markers from the bits: quiet or not, either sign; not other NaNs', () => {
    const values = fromBits([
      ONE,
      STALE_NAN_BITS,
      STALE_NAN_BITS | 0x0008000000000000n, // quiet bit set, as V8 leaves a number
      STALE_NAN_BITS | 0x8000000000000000n, // sign bit
      QUIET_NAN,
      0x7ff0000000000003n, // another payload
      0x0000000000000002n, // the payload's bits without the exponent: a tiny number
      0x7ff0000100000002n, // the payload's low word with more above it
    ]);
    expect([...staleFlags(values)!]).toEqual([0, 1, 1, 1, 0, 0, 0, 0]);
    expect(staleFlags(fromBits([ONE, QUIET_NAN]))).toBeNull();
    expect(staleFlags(new Float64Array(0))).toBeNull();
    // A view into a larger buffer reads its own elements.
    expect([...staleFlags(values.subarray(1, 3))!]).toEqual([1, 1]);
  });

  it('setStale writes Prometheus’s exact pattern, in a view at an offset too', () => {
    const values = fromBits([ONE, ONE, ONE]);
    setStale(values.subarray(1), 1);
    expect(bitsOf(values)).toEqual([ONE, ONE, STALE_NAN_BITS]);
  });
});
