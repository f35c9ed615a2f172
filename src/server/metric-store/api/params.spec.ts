import { describe, expect, it } from 'vitest';
import {
  BadDataError,
  checkText,
  MAX_TIME_MS,
  MIN_TIME_MS,
  parseDuration,
  parseOptionalTime,
  parseRange,
  parseTime,
  parseTimeout,
} from './params.js';

// Messages as Prometheus 2.42 (Debian's package, on this machine) answers them for the same input.
const refused = (form: Record<string, string>) => {
  try {
    parseRange(form);
  } catch (err) {
    expect(err).toBeInstanceOf(BadDataError);
    return (err as Error).message;
  }
  throw new Error('accepted');
};

describe('Prometheus API parameters', () => {
  it('times: float seconds to the millisecond, or RFC 3339', () => {
    expect(parseTime('1.5')).toBe(1500);
    expect(parseTime('1.0005')).toBe(1000);
    expect(parseTime('-2.25')).toBe(-2250);
    expect(parseTime('1e3')).toBe(1_000_000);
    expect(parseTime('2020-01-01T00:00:01.5Z')).toBe(Date.UTC(2020, 0, 1, 0, 0, 1, 500));
    expect(parseTime('2020-01-01T02:00:00+02:00')).toBe(Date.UTC(2020, 0, 1));
    expect(parseTime('2020-01-01T00:00:00.123456789Z')).toBe(Date.UTC(2020, 0, 1, 0, 0, 0, 123));
    expect(() => parseTime('2020-02-30T00:00:00Z')).toThrow(
      'cannot parse "2020-02-30T00:00:00Z" to a valid timestamp',
    );
    expect(() => parseTime('2020-01-01t00:00:00Z')).toThrow(BadDataError);
    expect(() => parseTime('')).toThrow('cannot parse "" to a valid timestamp');
  });

  it('durations: float seconds or Prometheus units in order', () => {
    expect(parseDuration('15')).toBe(15_000);
    expect(parseDuration('0.25')).toBe(250);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('1y2w3d4h5m6s7ms')).toBe(
      365 * 86_400_000 + 14 * 86_400_000 + 3 * 86_400_000 + 4 * 3_600_000 + 5 * 60_000 + 6000 + 7,
    );
    expect(() => parseDuration('5m1h')).toThrow('cannot parse "5m1h" to a valid duration');
    expect(() => parseDuration('1e30')).toThrow(
      'cannot parse "1e30" to a valid duration. It overflows int64',
    );
  });

  it('query_range: the checks and messages of Prometheus, in its order', () => {
    expect(parseRange({ start: '0', end: '60', step: '15s' })).toEqual({
      start: 0,
      end: 60_000,
      step: 15_000,
    });
    expect(refused({ start: '1', end: '0', step: '1' })).toBe(
      'invalid parameter "end": end timestamp must not be before start time',
    );
    expect(refused({ start: 'x', end: '1', step: '1' })).toBe(
      'invalid parameter "start": cannot parse "x" to a valid timestamp',
    );
    expect(refused({ start: '0', end: '1', step: '0' })).toBe(
      'invalid parameter "step": zero or negative query resolution step widths are not accepted. Try a positive integer',
    );
    expect(refused({ start: '0', end: '1', step: '-1' })).toContain('zero or negative');
    expect(refused({ start: '0', end: '100000', step: '1' })).toBe(
      'exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)',
    );
    expect(refused({ start: '0', end: '1', step: '1x' })).toBe(
      'invalid parameter "step": cannot parse "1x" to a valid duration',
    );
    expect(refused({ start: '0', end: '1' })).toBe(
      'invalid parameter "step": cannot parse "" to a valid duration',
    );
  });

  it('an instant query without time is evaluated now', () => {
    expect(parseOptionalTime('time', undefined, 42)).toBe(42);
    expect(parseOptionalTime('time', '', 42)).toBe(42);
    expect(parseOptionalTime('time', '10', 42)).toBe(10_000);
    expect(() => parseOptionalTime('time', 'soon', 42)).toThrow(
      'invalid parameter "time": cannot parse "soon" to a valid timestamp',
    );
  });

  it('times too large for a double are refused; far ones are clamped to minTime and maxTime', () => {
    // Prometheus's ParseFloat refuses 1e309 (out of range); these reached SQL as "NaN" or "1e+43".
    expect(() => parseTime('1e309')).toThrow('cannot parse "1e309" to a valid timestamp');
    expect(() => parseTime('-1e309')).toThrow(BadDataError);
    expect(parseTime('9999999999999999999999999999999999999999')).toBe(MAX_TIME_MS);
    expect(parseTime('-9999999999999999999999999999999999999999')).toBe(MIN_TIME_MS);
    expect(parseTime('9223372036.854')).toBe(MAX_TIME_MS);
    expect(parseTime('9223372036.855')).toBe(MAX_TIME_MS);
    expect(parseTime('-292273086-05-16T16:47:06Z')).toBe(MIN_TIME_MS);
    expect(parseRange({ start: '-1e40', end: '-1e40', step: '1' })).toEqual({
      start: MIN_TIME_MS,
      end: MIN_TIME_MS,
      step: 1000,
    });
    expect(refused({ start: '0', end: '1e309', step: '1' })).toBe(
      'invalid parameter "end": cannot parse "1e309" to a valid timestamp',
    );
  });

  it('timeout: a positive duration (zero or negative is a 400, not a 503)', () => {
    expect(parseTimeout('10s')).toBe(10_000);
    expect(parseTimeout('0.5')).toBe(500);
    expect(() => parseTimeout('0')).toThrow('timeout must be greater than zero, got "0"');
    expect(() => parseTimeout('-1')).toThrow(BadDataError);
    expect(() => parseTimeout('0s')).toThrow(BadDataError);
  });

  it('text that may reach the database: no NUL, valid UTF-8', () => {
    expect(checkText('up{job="é😀"}')).toBe('up{job="é😀"}');
    expect(() => checkText('a\0b')).toThrow('"a\\u0000b" contains a NUL character');
    expect(() => checkText('\ud800')).toThrow('is not valid UTF-8');
    expect(() => checkText('x\udc00')).toThrow(BadDataError);
  });
});
