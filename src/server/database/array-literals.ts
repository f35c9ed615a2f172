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

/**
 * The last array's literal, reused while the next array holds the same values in the same order:
 * the dispatcher's claim names every live worker four times a second, and at 10,000 agents
 * building and checking those literals was 4 % of a core while the fleet stayed the same
 * (docs/benchmarks.md, "Agents"). Comparing is cheap: the values are the same strings each time.
 */
export class LiteralMemo {
  private last: readonly string[] | undefined;
  private literal = '';

  constructor(private readonly build: (values: readonly string[]) => string) {}

  of(values: readonly string[]): string {
    const last = this.last;
    if (last !== undefined && last.length === values.length && values.every((v, i) => v === last[i]))
      return this.literal;
    this.literal = this.build(values);
    this.last = values.slice();
    return this.literal;
  }
}
