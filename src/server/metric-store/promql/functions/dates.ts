/**
 * The date functions (UTC): without an argument they read the evaluation time, with one they read
 * each sample's value as seconds since the epoch (truncated, as Go's int64 conversion does).
 */
import { dropMetricName, EMPTY_LABELS } from '../labels.js';
import type { InstantFunction } from './instant.js';

function dayOfYear(d: Date): number {
  return (d.getTime() - Date.UTC(d.getUTCFullYear(), 0, 1)) / 86_400_000 + 1;
}

const PARTS: [string, (d: Date) => number][] = [
  ['minute', (d) => d.getUTCMinutes()],
  ['hour', (d) => d.getUTCHours()],
  ['day_of_week', (d) => d.getUTCDay()],
  ['day_of_month', (d) => d.getUTCDate()],
  ['day_of_year', (d) => Math.floor(dayOfYear(d))],
  ['days_in_month', (d) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate()],
  ['month', (d) => d.getUTCMonth() + 1],
  ['year', (d) => d.getUTCFullYear()],
];

function dateFunction(part: (d: Date) => number): InstantFunction {
  return (vectors, _call, ts) => {
    if (vectors.length === 0)
      return [{ metric: EMPTY_LABELS, v: part(new Date(Math.trunc(ts / 1000) * 1000)), t: ts }];
    return vectors[0].map((s) => {
      const d = new Date(Math.trunc(s.v) * 1000);
      return { metric: dropMetricName(s.metric), v: Number.isNaN(d.getTime()) ? NaN : part(d), t: s.t };
    });
  };
}

export function dateFunctions(): [string, InstantFunction][] {
  return PARTS.map(([name, part]) => [name, dateFunction(part)]);
}
