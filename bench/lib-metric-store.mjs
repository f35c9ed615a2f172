// Helpers of bench/metric-store.mjs: the data set, remote write bodies and their sending, range
// queries, process CPU time and memory, the store's size in PostgreSQL.
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { encodeWriteRequest } from '../dist/server/metric-store/remote-write-encode.js';
import { median, random } from './lib.mjs';

export const SCRAPE_MS = 15_000;
export const DAY_MS = 86_400_000;

/**
 * Shapes by series number modulo 20: 70 % counters, 30 % gauges, as node_exporter-like targets
 * give (each `next` returns the value after `prev`).
 */
const SHAPES = [
  ...Array(6).fill(['counter_requests', (r, prev) => prev + Math.round(150 + 25 * (r() + r() + r() - 1.5))]),
  ...Array(3).fill(['counter_bytes', (r, prev) => prev + Math.round(1e6 * (0.5 + r()))]),
  // Seconds with two decimals (node_cpu_seconds_total), kept exact as hundredths.
  ...Array(3).fill(['counter_seconds', (r, prev) => (Math.round(prev * 100) + Math.round(150 * r())) / 100]),
  ...Array(2).fill(['counter_slow', (r, prev) => prev + (r() < 0.05 ? 1 : 0)]),
  ...Array(3).fill([
    'gauge_percent',
    (r, prev) => Math.round(Math.max(0, Math.min(100, prev + (r() - 0.5) * 8)) * 100) / 100,
  ]),
  ...Array(2).fill(['gauge_float', (r, prev) => prev + (r() - 0.5) * 3.7]),
  ['gauge_constant', (r, prev) => prev],
];

/**
 * `series` series of `x` over [start, start + span), one sample every 15 s at a per-series offset
 * (Prometheus aligns a target's scrape timestamps, so no jitter), labels instance, job (10 jobs), kind.
 */
export function dataset(series, start, span) {
  const n = Math.floor(span / SCRAPE_MS);
  return Array.from({ length: series }, (_, i) => {
    const r = random(i + 1);
    const [kind, next] = SHAPES[i % SHAPES.length];
    const t = new Float64Array(n);
    const v = new Float64Array(n);
    const phase = Math.floor((i * SCRAPE_MS) / series);
    let value = kind === 'gauge_percent' ? 50 : kind === 'gauge_constant' ? 16 : Math.floor(r() * 1e6);
    for (let k = 0; k < n; k++) {
      t[k] = start + phase + k * SCRAPE_MS;
      v[k] = value = next(r, value);
    }
    const labels = [
      { name: '__name__', value: 'x' },
      { name: 'instance', value: `i${i}` },
      { name: 'job', value: `job${i % 10}` },
      { name: 'kind', value: kind },
    ];
    return { labels, t, v };
  });
}

/**
 * Remote write bodies as Prometheus's sharded queue sends them: each series belongs to one of
 * `shards` shards; bodies[shard][w] holds that shard's series with their samples w*perSeries ..
 * (w+1)*perSeries - 1.
 */
export function bodies(data, shards, perSeries) {
  const windows = Math.ceil(data[0].t.length / perSeries);
  return Array.from({ length: shards }, (_, shard) => {
    const mine = data.filter((_, i) => i % shards === shard);
    return Array.from({ length: windows }, (_, w) =>
      Buffer.from(
        encodeWriteRequest(
          mine.map((s) => ({
            labels: s.labels,
            timestamps: s.t.subarray(w * perSeries, (w + 1) * perSeries),
            values: s.v.subarray(w * perSeries, (w + 1) * perSeries),
          })),
        ),
      ),
    );
  });
}

/** How many windows a shard may run ahead of the slowest (Prometheus refuses samples an hour older than its newest). */
const MAX_LAG = 2;

/**
 * Sends each shard's bodies in order, one request in flight per shard, the first `windows` of
 * each; every answer must be 204. Resolves with the wall time and request latencies.
 */
export async function sendAll(url, shardBodies, headers, windows) {
  const done = shardBodies.map(() => 0);
  let waiting = [];
  const latencies = [];
  const started = performance.now();
  await Promise.all(
    shardBodies.map(async (list, shard) => {
      for (let w = 0; w < windows; w++) {
        while (Math.min(...done) < w - MAX_LAG) await new Promise((r) => waiting.push(r));
        const t0 = performance.now();
        const res = await fetch(url, {
          method: 'POST',
          body: list[w],
          headers: {
            'content-type': 'application/x-protobuf',
            'content-encoding': 'snappy',
            'x-prometheus-remote-write-version': '0.1.0',
            ...headers,
          },
        });
        const text = await res.text();
        if (res.status !== 204)
          throw new Error(`remote write to ${url}: ${res.status} ${text.slice(0, 300)}`);
        latencies.push(performance.now() - t0);
        done[shard] = w + 1;
        const wake = waiting;
        waiting = [];
        wake.forEach((f) => f());
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return {
    seconds: (performance.now() - started) / 1000,
    p50: median(latencies),
    p99: latencies[Math.ceil(latencies.length * 0.99) - 1],
  };
}

/** User + system CPU seconds of a process so far (Linux /proc, 100 ticks a second). */
export function cpuSeconds(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0; // exited
  }
}

/** Times a range query (POST form) to completion of the body; returns ms and the parsed result. */
export async function timedQuery(url, headers, params) {
  const t0 = performance.now();
  const res = await fetch(url, { method: 'POST', headers, body: new URLSearchParams(params) });
  const text = await res.text();
  const ms = performance.now() - t0;
  const body = JSON.parse(text);
  if (res.status !== 200 || body.status !== 'success')
    throw new Error(`${url} ${params.query}: ${res.status} ${text.slice(0, 300)}`);
  return { ms, result: body.data.result };
}

/** The largest relative difference between two matrix results (same series by labels, same steps). */
export function maxRelativeDifference(a, b) {
  const key = (m) => JSON.stringify(Object.entries(m).sort());
  const other = new Map(b.map((s) => [key(s.metric), s.values]));
  if (a.length !== b.length) return Infinity;
  let worst = 0;
  for (const s of a) {
    const values = other.get(key(s.metric));
    if (values === undefined || values.length !== s.values.length) return Infinity;
    s.values.forEach(([t, v], i) => {
      if (values[i][0] !== t) worst = Infinity;
      const x = Number(v);
      const y = Number(values[i][1]);
      if (x !== y) worst = Math.max(worst, Math.abs(x - y) / Math.max(Math.abs(x), Math.abs(y)));
    });
  }
  return worst;
}

/** VmHWM of a process, MiB. */
export const peakRssMiB = (pid) =>
  Math.round(Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024);

/** CPU seconds so far of the backends serving the current database, by pid. */
export async function pgCpu(db) {
  const { rows } = await db.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`);
  return new Map(rows.map((r) => [r.pid, cpuSeconds(r.pid)]));
}

/** CPU seconds the database's backends used between two pgCpu readings (new backends in full). */
export function pgCpuDelta(before, after) {
  let sum = 0;
  for (const [pid, s] of after) sum += s - (before.get(pid) ?? 0);
  return sum;
}

export const STORE_TABLES = ['metric_series', 'metric_batches', 'metric_chunks', 'metric_metadata'];

/**
 * Chunks of series `x`: count, samples, bytes; the batches still waiting (the open window): samples,
 * bytes; and the store's tables on disk, in all and each.
 */
export async function storeSizes(db) {
  const { rows } = await db.query(
    `SELECT count(*)::int AS chunks, coalesce(sum(c.samples), 0)::bigint AS samples,
            coalesce(sum(octet_length(c.data)), 0)::bigint AS data,
            (SELECT sum(pg_total_relation_size(t)) FROM unnest($1::regclass[]) AS t)::bigint AS tables,
            (SELECT coalesce(sum(samples), 0) FROM metric_batches)::bigint AS batch_samples,
            (SELECT coalesce(sum(octet_length(data)), 0) FROM metric_batches)::bigint AS batch_data
       FROM metric_chunks c JOIN metric_series s ON s.id = c.series_id WHERE s.metric_name = 'x'`,
    [STORE_TABLES],
  );
  const each = await db.query(
    `SELECT t::text AS name, pg_total_relation_size(t) AS bytes FROM unnest($1::regclass[]) AS t`,
    [STORE_TABLES],
  );
  const mib = (b) => (Number(b) / 2 ** 20).toFixed(1);
  return {
    chunks: rows[0].chunks,
    samples: Number(rows[0].samples),
    data: Number(rows[0].data),
    tables: Number(rows[0].tables),
    batchSamples: Number(rows[0].batch_samples),
    batchData: Number(rows[0].batch_data),
    split: each.rows.map((r) => `${r.name.replace('metric_', '')} ${mib(r.bytes)}`).join(', ') + ' MiB',
  };
}

/** The one-minute load average, one decimal. */
export const load1 = () => loadavg()[0].toFixed(1);

/**
 * The same range query on both, alternating, `runs` times after a warm-up each: series, median
 * (best) of each, ratio of the medians, agreement, load.
 */
export async function compare(ourUrl, auth, promUrl, params, runs) {
  const ours = [];
  const theirs = [];
  let a;
  let b;
  for (let run = 0; run <= runs; run++) {
    a = await timedQuery(ourUrl, auth, params);
    b = await timedQuery(promUrl, {}, params);
    if (run === 0) continue;
    ours.push(a.ms);
    theirs.push(b.ms);
  }
  const diff = maxRelativeDifference(a.result, b.result);
  const cell = (ms) => `${median(ms).toFixed(0)} (${Math.min(...ms).toFixed(0)})`;
  return [
    a.result.length,
    runs,
    cell(ours),
    cell(theirs),
    `${(median(ours) / median(theirs)).toFixed(1)}x`,
    diff === 0 ? 'identical' : diff.toExponential(1),
    load1(),
  ];
}
