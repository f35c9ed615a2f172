import { describe, expect, it } from 'vitest';
import { formatTimestamp, formatValue } from './format.js';

// Go's strconv.FormatFloat(v, 'f', -1, 64), as Prometheus writes sample values.
describe('Prometheus value formatting', () => {
  it('writes shortest round-trip digits without an exponent', () => {
    expect(formatValue(1)).toBe('1');
    expect(formatValue(0.1)).toBe('0.1');
    expect(formatValue(-2.5)).toBe('-2.5');
    expect(formatValue(1e21)).toBe('1000000000000000000000');
    expect(formatValue(1.5e22)).toBe('15000000000000000000000');
    expect(formatValue(1e-7)).toBe('0.0000001');
    expect(formatValue(-1.25e-8)).toBe('-0.0000000125');
    expect(formatValue(5e-324)).toBe(`0.${'0'.repeat(323)}5`);
    expect(formatValue(1.7976931348623157e308)).toBe(`17976931348623157${'0'.repeat(292)}`);
    expect(formatValue(-0)).toBe('-0');
  });

  it('writes NaN and the infinities as Prometheus does', () => {
    expect(formatValue(NaN)).toBe('NaN');
    expect(formatValue(Infinity)).toBe('+Inf');
    expect(formatValue(-Infinity)).toBe('-Inf');
  });

  it('timestamps are seconds', () => {
    expect(formatTimestamp(1500)).toBe(1.5);
    expect(formatTimestamp(1_577_836_800_000)).toBe(1_577_836_800);
    expect(formatTimestamp(-1)).toBe(-0.001);
  });
});
