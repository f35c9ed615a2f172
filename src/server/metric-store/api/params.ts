/**
 * Query parameters of the Prometheus HTTP API, parsed as Prometheus 2.42 parses them
 * (web/api/v1/api.go: parseTime, parseDuration, query_range's checks), with its messages, so a
 * client sees the same `bad_data` errors from us as from Prometheus.
 */

import { parseRfc3339 } from '../../common/rfc3339.js';
import { parseDuration as parsePromDuration } from '../promql/lexical.js';

/** A parameter Prometheus would refuse: the API answers 400 `bad_data` with this message. */
export class BadDataError extends Error {
  override readonly name = 'BadDataError';
}

/** Prometheus's minTime and maxTime (math.MinInt64/2 and MaxInt64/2 nanoseconds, in ms), formatted. */
export const MIN_TIME_MS = -9223372036854;
export const MAX_TIME_MS = 9223372036854;
const MIN_TIME_TEXT = '-292273086-05-16T16:47:06Z';
const MAX_TIME_TEXT = '292277025-08-18T07:12:54.999999999Z';

/** Prometheus caps a range query at this many steps. */
export const MAX_POINTS_PER_SERIES = 11_000;

const FLOAT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * A time parameter: float seconds since the epoch (ms precision) or RFC 3339; milliseconds. Seconds
 * too large for a double (`1e309`) are refused as Prometheus's ParseFloat refuses them; any other
 * time before minTime or after maxTime is taken as minTime or maxTime (what Prometheus takes for
 * an absent start or end: no sample lies beyond), so no time reaches the store or the engine that
 * they cannot represent exactly.
 */
export function parseTime(text: string): number {
  if (FLOAT.test(text)) {
    const seconds = Number(text);
    if (!Number.isFinite(seconds)) throw new BadDataError(`cannot parse ${quote(text)} to a valid timestamp`);
    const whole = Math.trunc(seconds);
    return clampTime(whole * 1000 + Math.round((seconds - whole) * 1000));
  }
  const ms = parseRfc3339(text);
  if (ms !== undefined) return ms;
  if (text === MIN_TIME_TEXT) return MIN_TIME_MS;
  if (text === MAX_TIME_TEXT) return MAX_TIME_MS;
  throw new BadDataError(`cannot parse ${quote(text)} to a valid timestamp`);
}

/** A duration parameter: float seconds or a Prometheus duration (`1h30m`, `5m`, `250ms`); ms. */
export function parseDuration(text: string): number {
  if (FLOAT.test(text)) {
    const ms = Number(text) * 1000;
    if (Math.abs(ms) * 1e6 > 9.223372036854776e18)
      throw new BadDataError(`cannot parse ${quote(text)} to a valid duration. It overflows int64`);
    return Math.trunc(ms * 1e6) / 1e6;
  }
  const ms = parsePromDuration(text);
  if (typeof ms === 'string') throw new BadDataError(`cannot parse ${quote(text)} to a valid duration`);
  return ms;
}

/** A time in ms within [MIN_TIME_MS, MAX_TIME_MS]. */
export const clampTime = (ms: number): number => Math.min(MAX_TIME_MS, Math.max(MIN_TIME_MS, ms));

/**
 * The `timeout` parameter: a positive duration. Prometheus 2.42 takes zero or a negative timeout
 * and answers 503 at once; that is the client's mistake, so here it is a 400.
 */
export function parseTimeout(text: string): number {
  const ms = parseDuration(text);
  if (!(ms > 0)) throw new BadDataError(`timeout must be greater than zero, got ${quote(text)}`);
  return ms;
}

/**
 * A text parameter that may reach the database (a metric name, a label name or value): no NUL
 * (PostgreSQL's text cannot hold it) and no lone UTF-16 surrogate (no UTF-8 for it).
 */
export function checkText(text: string): string {
  if (text.includes('\0')) throw new BadDataError(`${quote(text)} contains a NUL character`);
  if (LONE_SURROGATE.test(text)) throw new BadDataError(`${quote(text)} is not valid UTF-8`);
  return text;
}

/** Wraps a parameter's failure as Prometheus's invalidParamError does. */
export function param<T>(name: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (err instanceof BadDataError)
      throw new BadDataError(`invalid parameter ${quote(name)}: ${err.message}`);
    throw err;
  }
}

export interface RangeParams {
  start: number;
  end: number;
  step: number;
}

/** query_range's start, end and step, with Prometheus's order of checks and messages. */
export function parseRange(form: Record<string, string | undefined>): RangeParams {
  const start = param('start', () => parseTime(form.start ?? ''));
  const end = param('end', () => parseTime(form.end ?? ''));
  param('end', () => {
    if (end < start) throw new BadDataError('end timestamp must not be before start time');
  });
  const step = param('step', () => {
    const value = parseDuration(form.step ?? '');
    if (value <= 0)
      throw new BadDataError(
        'zero or negative query resolution step widths are not accepted. Try a positive integer',
      );
    return value;
  });
  if (Math.floor((end - start) / step) > MAX_POINTS_PER_SERIES)
    throw new BadDataError(
      'exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)',
    );
  return { start, end, step };
}

/** An optional time parameter (`time` of an instant query): `now` when absent or empty. */
export function parseOptionalTime(name: string, value: string | undefined, now: number): number {
  return value === undefined || value === '' ? now : param(name, () => parseTime(value));
}

/** Go's %q for the ASCII text clients send: quotes and backslashes escaped. */
const quote = (text: string): string => JSON.stringify(text);
