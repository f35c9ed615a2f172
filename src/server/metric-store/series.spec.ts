import { describe, expect, it } from 'vitest';
import { isStaleMarker, staleMarker, STALE_NAN_BITS } from './series.js';

describe('stale markers', () => {
  it('survive as numbers in arrays and typed arrays, and differ from an ordinary NaN', () => {
    const marker = staleMarker();
    expect(isStaleMarker(marker)).toBe(true);
    expect(isStaleMarker([1, marker][1])).toBe(true);
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
});
