// Array parameters as PostgreSQL array literals, built here rather than by the pg driver. The
// driver quotes and escapes each element with two regular expressions: for the dispatcher's claim,
// which names every live worker (10,000 ids and their owners four times a second, and at every
// round), that was a few per cent of the service's time (docs/benchmarks.md, "Reconnect storm").
// Pass the result where the statement casts it (`$1::uuid[]`, `$2::text[]`).

import { isUuid } from '../common/ids.js';

/** `{id,id,...}` for ids that are UUIDs (they need no quoting); throws on anything else. */
export function uuidArray(ids: readonly string[]): string {
  for (const id of ids) if (!isUuid(id)) throw new Error(`not a UUID: ${JSON.stringify(id)}`);
  return `{${ids.join(',')}}`;
}

/** `{"a","b",...}`: each distinct value quoted and escaped once, however often it repeats. */
export function textArray(values: readonly string[]): string {
  const quoted = new Map<string, string>();
  const parts = values.map((value) => {
    let q = quoted.get(value);
    if (q === undefined) {
      q = `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
      quoted.set(value, q);
    }
    return q;
  });
  return `{${parts.join(',')}}`;
}
