/**
 * The date functions (UTC): without an argument they read the evaluation time, with one they read
 * each sample's value as seconds since the epoch through Go's int64 conversion (go-time.ts).
 */
import { EMPTY_LABELS } from '../../labels.js';
import { dropMetricName } from '../labels.js';
import { goDate, goInt64, type GoDate } from './go-time.js';
import type { InstantFunction } from './instant.js';

const PARTS: [string, keyof GoDate][] = [
  ['minute', 'minute'],
  ['hour', 'hour'],
  ['day_of_week', 'weekday'],
  ['day_of_month', 'day'],
  ['day_of_year', 'yday'],
  ['days_in_month', 'daysInMonth'],
  ['month', 'month'],
  ['year', 'year'],
];

function dateFunction(part: keyof GoDate): InstantFunction {
  return (vectors, _call, ts) => {
    // enh.Ts / 1000: integer division of the millisecond time.
    if (vectors.length === 0)
      return [{ metric: EMPTY_LABELS, v: goDate(BigInt(Math.trunc(ts / 1000)))[part], t: ts }];
    return vectors[0].map((s) => ({
      metric: dropMetricName(s.metric),
      v: goDate(goInt64(s.v))[part],
      t: s.t,
    }));
  };
}

export function dateFunctions(): [string, InstantFunction][] {
  return PARTS.map(([name, part]) => [name, dateFunction(part)]);
}
