/**
 * The metric store against a real Prometheus 2.42, end to end: the same generated data is
 * remote-written to Prometheus and to our POST /prometheus/api/v1/write, and every corpus query is
 * asked of both HTTP APIs, instant at several times and as a range query; the answers (HTTP status,
 * result type, series, timestamps, values, error types) must agree (compare.ts). Our data is read
 * back from both storage forms: the first 90 minutes are compacted into chunks, the next 90 are
 * compacted into the chunks already holding part of their two-hour window, the last hour stays in
 * batch rows (the test holds the maintenance lease so nothing compacts behind its back).
 */
import { fileURLToPath } from 'node:url';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FOLD_EVERYTHING } from '../../src/server/metric-store/store/compactor.js';
import { Maintenance } from '../../src/server/metric-store/store/maintenance.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { holdMaintenanceLease } from '../support/maintenance-lease.js';
import { differences, normalize, type Normalized } from '../support/promql-diff/compare.js';
import { loadCorpus } from '../support/promql-diff/corpus.js';
import { generate, SPAN, T0 } from '../support/promql-diff/data.js';
import { remoteWrite } from '../support/promql-diff/remote-write.js';
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
/** Where our writes are compacted: after each of these (from T0) but the last. */
const STAGES = [90 * MIN, 180 * MIN, SPAN];

const seconds = (ms: number): string => (ms / 1000).toFixed(3);
/** What Prometheus answered, by kind: so a run shows the corpus is not all errors or empty answers. */
const answers = { series: 0, empty: 0, errors: new Map<string, number>() };

function tally(n: Normalized): void {
  if (n.status === 'error') answers.errors.set(n.errorType!, (answers.errors.get(n.errorType!) ?? 0) + 1);
  else if (n.series.length > 0) answers.series++;
  else answers.empty++;
}

type Path = 'query' | 'query_range';

describe('the metric store against Prometheus 2.42 (PromQL over HTTP)', () => {
  let prometheus: PrometheusServer;
  let t: TestApp;
  let auth: string;

  /** Our HTTP API, asked as Prometheus is (a POST form). */
  async function ours(path: Path, params: Record<string, string>): Promise<Normalized> {
    const response = await fetch(`${t.url}/prometheus/api/v1/${path}`, {
      method: 'POST',
      body: new URLSearchParams(params),
      headers: { Authorization: auth },
    });
    return normalize({ status: response.status, body: await response.json() });
  }

  const theirs = async (path: Path, params: Record<string, string>): Promise<Normalized> =>
    normalize(await prometheus.query(path, params));

  beforeAll(async () => {
    const data = generate();
    prometheus = await PrometheusServer.start();
    await prometheus.write(data, T0, T0 + SPAN);
    // The data is from 2023: a retention long enough to keep it all.
    t = await startTestApp({ env: { METRICS_RETENTION: '3650d', RATE_LIMIT_REQUESTS: '0' } });
    auth = await t.adminAuth();
    // Only the test compacts: batches stay batches until it says.
    await holdMaintenanceLease(t.app);
    const maintenance = t.app.get(Maintenance);
    let from = T0;
    for (const [i, stage] of STAGES.entries()) {
      await remoteWrite(`${t.url}/prometheus/api/v1/write`, { Authorization: auth }, data, from, T0 + stage);
      if (i < STAGES.length - 1) await maintenance.compactAll(FOLD_EVERYTHING);
      from = T0 + stage;
    }
  });

  afterAll(async () => {
    console.info(
      `Prometheus answered ${answers.series} with series, ${answers.empty} empty, errors:`,
      answers.errors,
    );
    await prometheus?.stop();
    await t?.close();
  });

  it('talks to Prometheus 2.42, has a corpus of at least 300 queries, reads chunks and batches', async () => {
    expect(await prometheus.version()).toMatch(/^2\.42\./);
    expect(corpus.length).toBeGreaterThanOrEqual(300);
    const db = t.app.get(DataSource);
    const count = async (table: string): Promise<number> =>
      Number((await db.query<{ n: string }[]>(`SELECT count(*) AS n FROM ${table}`))[0].n);
    expect(await count('metric_chunks')).toBeGreaterThan(0);
    expect(await count('metric_batches')).toBeGreaterThan(0);
  });

  it('tells different answers apart (the comparison can fail)', async () => {
    const time = seconds(INSTANT_TIMES[0]);
    const rate = await theirs('query', { query: 'rate(http_requests_total[5m])', time });
    const irate = await ours('query', { query: 'irate(http_requests_total[5m])', time });
    expect(differences(rate, irate, false)).not.toEqual([]);
    const up = await theirs('query', { query: 'up', time });
    const upOrNot = await ours('query', { query: 'up{job!="db"}', time });
    expect(differences(up, upOrNot, false)).not.toEqual([]);
    const bad = await ours('query', { query: 'up +', time });
    expect(differences(up, bad, false)).not.toEqual([]);
    // The same error type under another HTTP status is a difference too.
    expect(differences({ ...bad, http: 422 }, bad, false)).not.toEqual([]);
  });

  it.each(corpus.map((c) => [`${c.line}: ${c.query}`, c] as const))('%s', async (_name, entry) => {
    const asks: { what: string; path: Path; params: Record<string, string> }[] = [];
    if (entry.instant)
      for (const time of INSTANT_TIMES)
        asks.push({
          what: `instant @${time}`,
          path: 'query',
          params: { query: entry.query, time: seconds(time) },
        });
    if (entry.range)
      asks.push({
        what: 'range',
        path: 'query_range',
        params: {
          query: entry.query,
          start: seconds(RANGE.start),
          end: seconds(RANGE.end),
          step: String(entry.step / 1000),
        },
      });
    // Both servers, every time, at once: a handful of requests in flight.
    const answered = await Promise.all(
      asks.map(async (a) => ({
        ...a,
        answers: await Promise.all([theirs(a.path, a.params), ours(a.path, a.params)]),
      })),
    );
    const problems: string[] = [];
    for (const {
      what,
      path,
      answers: [expected, actual],
    } of answered) {
      tally(expected);
      if (entry.expectError && expected.status !== 'error') problems.push(`prometheus accepted it (${what})`);
      const ordered = entry.ordered && path === 'query';
      for (const d of differences(expected, actual, ordered)) problems.push(`${what}: ${d}`);
    }
    expect(problems).toEqual([]);
  });
});
