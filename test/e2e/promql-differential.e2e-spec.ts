/**
 * The PromQL engine against a real Prometheus 2.42: the same generated data written to
 * Prometheus (remote write) and to an in-memory Queryable, every corpus query run on both,
 * instant at several times and as a range query; the answers must agree (compare.ts).
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { instantQuery, rangeQuery } from '../../src/server/metric-store/promql/index.js';
import { differences, fromEngine, fromPrometheus, type Normalized } from '../support/promql-diff/compare.js';
import { loadCorpus } from '../support/promql-diff/corpus.js';
import { generate, SPAN, T0 } from '../support/promql-diff/data.js';
import { MemoryQueryable } from '../support/promql-diff/memory-queryable.js';
import { PrometheusServer } from '../support/prometheus.js';

const MIN = 60_000;
const corpus = loadCorpus(fileURLToPath(new URL('../fixtures/promql-corpus.txt', import.meta.url)));
/** The first whole minute (since the epoch) in the data: the aligned series' samples sit on minutes. */
const MINUTE = Math.ceil(T0 / MIN) * MIN;
/**
 * Inside the data off any step, on a whole minute, exactly the lookback after the aligned gap's
 * last sample, and just after the data ends (still within the lookback).
 */
const INSTANT_TIMES = [T0 + 63 * MIN + 7_500, MINUTE + 120 * MIN, MINUTE + 105 * MIN, T0 + SPAN + MIN];
/** Steps on whole minutes, from before the data starts to after it ends. */
const RANGE = { start: MINUTE - 5 * MIN, end: MINUTE + SPAN + 10 * MIN };

const seconds = (ms: number): string => (ms / 1000).toFixed(3);
/** What Prometheus answered, by kind: so a run shows the corpus is not all errors or empty answers. */
const answers = { series: 0, empty: 0, errors: new Map<string, number>() };

function tally(n: Normalized): void {
  if (n.status === 'error') answers.errors.set(n.errorType!, (answers.errors.get(n.errorType!) ?? 0) + 1);
  else if (n.series.length > 0) answers.series++;
  else answers.empty++;
}

describe('PromQL engine against Prometheus 2.42', () => {
  let prometheus: PrometheusServer;
  let memory: MemoryQueryable;

  beforeAll(async () => {
    const data = generate();
    memory = new MemoryQueryable(data);
    prometheus = await PrometheusServer.start();
    await prometheus.write(data, T0, T0 + SPAN);
  });

  afterAll(async () => {
    console.info(
      `Prometheus answered ${answers.series} with series, ${answers.empty} empty, errors:`,
      answers.errors,
    );
    await prometheus?.stop();
  });

  it('talks to Prometheus 2.42 and has a corpus of at least 300 queries', async () => {
    expect(await prometheus.version()).toMatch(/^2\.42\./);
    expect(corpus.length).toBeGreaterThanOrEqual(300);
  });

  it('tells different answers apart (the comparison can fail)', async () => {
    const time = seconds(INSTANT_TIMES[0]);
    const rate = fromPrometheus(
      await prometheus.query('query', { query: 'rate(http_requests_total[5m])', time }),
    );
    const irate = await fromEngine(() =>
      instantQuery(memory, 'irate(http_requests_total[5m])', INSTANT_TIMES[0]),
    );
    expect(differences(rate, irate, false)).not.toEqual([]);
    const up = fromPrometheus(await prometheus.query('query', { query: 'up', time }));
    const upOrNot = await fromEngine(() => instantQuery(memory, 'up{job!="db"}', INSTANT_TIMES[0]));
    expect(differences(up, upOrNot, false)).not.toEqual([]);
    const bad = await fromEngine(() => instantQuery(memory, 'up +', INSTANT_TIMES[0]));
    expect(differences(up, bad, false)).not.toEqual([]);
  });

  it.each(corpus.map((c) => [`${c.line}: ${c.query}`, c] as const))('%s', async (_name, entry) => {
    const problems: string[] = [];
    if (entry.instant)
      for (const time of INSTANT_TIMES) {
        const expected = fromPrometheus(
          await prometheus.query('query', { query: entry.query, time: seconds(time) }),
        );
        tally(expected);
        if (entry.expectError && expected.status !== 'error')
          problems.push(`prometheus accepted it at ${time}`);
        const actual = await fromEngine(() => instantQuery(memory, entry.query, time));
        for (const d of differences(expected, actual, entry.ordered)) problems.push(`instant @${time}: ${d}`);
      }
    if (entry.range) {
      const { start, end } = RANGE;
      const expected = fromPrometheus(
        await prometheus.query('query_range', {
          query: entry.query,
          start: seconds(start),
          end: seconds(end),
          step: String(entry.step / 1000),
        }),
      );
      tally(expected);
      const actual = await fromEngine(() => rangeQuery(memory, entry.query, start, end, entry.step));
      for (const d of differences(expected, actual, false)) problems.push(`range: ${d}`);
    }
    expect(problems).toEqual([]);
  });
});
