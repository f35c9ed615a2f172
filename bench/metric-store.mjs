// The metric store against a real Prometheus 2.42 on the same machine, one run: remote write
// ingestion (ours on PostgreSQL and on the embedded database, Prometheus's receiver fed the same
// bodies), bytes per sample at rest after compaction, and query_range latency on the same 24 h.
// `npm run build` first; `node bench/main.mjs metric-store`. Needs /usr/bin/prometheus and PostgreSQL.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import {
  DAY_MS,
  STORE_TABLES,
  bodies,
  compare,
  cpuSeconds,
  dataset,
  load1,
  peakRssMiB,
  pgCpu,
  pgCpuDelta,
  sendAll,
  storeSizes,
  timedQuery,
} from './lib-metric-store.mjs';
import { prometheusBlocks, prometheusSettled, startPrometheus } from './lib-prometheus.mjs';
import {
  BENCH_ADMIN,
  MAIN,
  benchToken,
  freePort,
  pgAdmin,
  pgDatabaseUrl,
  spawnUntilReady,
  table,
} from './lib.mjs';

const env = process.env;
const SERIES = Number(env.BENCH_MS_SERIES ?? 1000);
const SHARDS = Number(env.BENCH_MS_SHARDS ?? 4);
/** Samples per series in one request: 40 is 10 minutes of 15 s scrapes. */
const PER_SERIES = Number(env.BENCH_MS_PER_SERIES ?? 40);
/** Windows (of PER_SERIES samples) written to the embedded database: 24 is 4 h. */
const EMBEDDED_WINDOWS = Number(env.BENCH_MS_EMBEDDED_WINDOWS ?? 24);
const QUERY_RUNS = Number(env.BENCH_MS_QUERY_RUNS ?? 5);
/** Node flags for the service, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` (written when it exits). */
const SERVICE_NODE_ARGS = (env.BENCH_MS_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function startService(extra) {
  return spawnUntilReady(
    MAIN,
    {
      AGENT_PORT: String(await freePort()),
      BOOTSTRAP_CLIENT_ID: BENCH_ADMIN.id,
      BOOTSTRAP_CLIENT_SECRET: BENCH_ADMIN.secret,
      RATE_LIMIT_REQUESTS: '0',
      TUNNEL_STUN_SERVERS: 'none',
      // The service stores its own /metrics too; once an hour keeps that out of the figures.
      METRICS_SCRAPE_INTERVAL: '1h',
      ...extra,
    },
    '/health/ready',
    60_000,
    SERVICE_NODE_ARGS,
  );
}

const perSample = (name, samples, bytes, how) => [name, samples, bytes, (bytes / samples).toFixed(2), how];

/** One ingestion row: wall-clock rate, latencies, CPU seconds per million samples of each process. */
function ingestRow(name, samples, sent, cpu, loadBefore) {
  const perMillion = (s) => ((s / samples) * 1e6).toFixed(1);
  return [
    name,
    samples,
    sent.seconds.toFixed(1),
    Math.round(samples / sent.seconds),
    `${sent.p50.toFixed(0)} / ${sent.p99.toFixed(0)}`,
    cpu.map(perMillion).join(' + '),
    `${loadBefore} → ${load1()}`,
  ];
}

export async function metricStoreBench() {
  const end = Math.floor(Date.now() / 60_000) * 60_000 - 60_000;
  const start = end - DAY_MS;
  const data = dataset(SERIES, start, DAY_MS);
  const total = data.reduce((n, s) => n + s.t.length, 0);
  const shardBodies = bodies(data, SHARDS, PER_SERIES);
  const windows = shardBodies[0].length;
  const bodyBytes = shardBodies.flat().reduce((n, b) => n + b.length, 0);
  const out = [
    `## Metric store against Prometheus 2.42`,
    '',
    `${SERIES} series × 24 h at 15 s = ${total} samples; ${SHARDS} shards of ${SERIES / SHARDS} series, ` +
      `one request in flight per shard, ${PER_SERIES} samples a series per request ` +
      `(${(SERIES / SHARDS) * PER_SERIES} samples, ${(bodyBytes / shardBodies.flat().length / 1024).toFixed(0)} KiB a body). ` +
      `Load average at start ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}.`,
    '',
  ];
  const ingest = [];
  const queries = [];
  const prom = await startPrometheus();
  const dbName = `bench_ms_${process.pid}`;
  await pgAdmin(`CREATE DATABASE ${dbName}`);
  const dataDir = mkdtempSync(join(tmpdir(), 'so-bench-ms-'));
  const embeddedDir = mkdtempSync(join(tmpdir(), 'so-bench-ms-embedded-'));
  let svc;
  const db = new pg.Client({ connectionString: pgDatabaseUrl(dbName) });
  try {
    // 1. Prometheus's receiver, the whole day.
    let loadBefore = load1();
    let cpu0 = cpuSeconds(prom.child.pid);
    const promSent = await sendAll(`${prom.url}/api/v1/write`, shardBodies, {}, windows);
    ingest.push(
      ingestRow(
        'Prometheus 2.42 receiver (WAL, not fsynced)',
        total,
        promSent,
        [cpuSeconds(prom.child.pid) - cpu0],
        loadBefore,
      ),
    );
    const settleSeconds = await prometheusSettled(prom.url);
    const blocks = prometheusBlocks(prom.data);

    // 2. Ours on PostgreSQL, the whole day; then compaction until no batch is left.
    svc = await startService({ DATABASE_URL: pgDatabaseUrl(dbName), DATA_DIR: dataDir });
    await db.connect();
    const token = await benchToken(svc.url, 'metrics:write metrics:read');
    const auth = { authorization: `Bearer ${token}` };
    loadBefore = load1();
    cpu0 = cpuSeconds(svc.child.pid);
    const pg0 = await pgCpu(db);
    const ourSent = await sendAll(`${svc.url}/prometheus/api/v1/write`, shardBodies, auth, windows);
    const ingestCpu = [cpuSeconds(svc.child.pid) - cpu0, pgCpuDelta(pg0, await pgCpu(db))];
    ingest.push(ingestRow('ours, PostgreSQL (committed, fsync on)', total, ourSent, ingestCpu, loadBefore));
    // The service folds each closed window (its end over METRICS_OOO_WINDOW, 10 min, ago) once its
    // batches have settled; the open window stays in batch rows, as in Prometheus's head.
    const compactStarted = performance.now();
    const closedBefore = Math.floor((Date.now() - 600_000) / 7_200_000) * 7_200_000;
    while (
      Number(
        (await db.query(`SELECT count(*) AS n FROM metric_batches WHERE max_t < $1`, [closedBefore])).rows[0]
          .n,
      ) > 0
    ) {
      if (performance.now() - compactStarted > 300_000)
        throw new Error('compaction not done within 5 minutes');
      await sleep(250);
    }
    const compactSeconds = (performance.now() - compactStarted) / 1000;
    const atCompaction = await storeSizes(db);
    // The service vacuums its tables at most once a minute after deleting rows: wait for that one.
    await sleep(65_000);
    const asLeft = await storeSizes(db);
    await db.query(`VACUUM FULL ${STORE_TABLES.join(', ')}`);
    const vacuumed = await storeSizes(db);
    if (asLeft.samples + asLeft.batchSamples < total)
      throw new Error(
        `chunks and batches hold ${asLeft.samples + asLeft.batchSamples} samples, ${total} written`,
      );

    const rssBeforeQueries = peakRssMiB(svc.child.pid);
    // 3. The same queries on both, alternating, after one warm-up each.
    const params = (query) => ({ query, start: String(start / 1000), end: String(end / 1000), step: '60' });
    // A few-millisecond query's wall time on shared cores is mostly scheduling: more runs.
    for (const [label, query, runs] of [
      [`sum by (job) (rate(x[5m])), ${SERIES} series`, 'sum by (job) (rate(x[5m]))', QUERY_RUNS],
      ['rate(x{instance="i7"}[5m]), one series', 'rate(x{instance="i7"}[5m])', QUERY_RUNS * 5],
    ]) {
      try {
        queries.push([
          label,
          ...(await compare(
            `${svc.url}/prometheus/api/v1/query_range`,
            auth,
            `${prom.url}/api/v1/query_range`,
            params(query),
            runs,
          )),
        ]);
      } catch (err) {
        queries.push([label, '-', '-', String(err.message).slice(0, 120), '-', '-', '-', load1()]);
      }
    }
    const peakRss = peakRssMiB(svc.child.pid);
    await svc.stop();
    svc = undefined;

    // 4. Ours on the embedded database: the first EMBEDDED_WINDOWS windows.
    svc = await startService({ DATA_DIR: embeddedDir });
    const embeddedAuth = { authorization: `Bearer ${await benchToken(svc.url, 'metrics:write')}` };
    loadBefore = load1();
    cpu0 = cpuSeconds(svc.child.pid);
    const embeddedSent = await sendAll(
      `${svc.url}/prometheus/api/v1/write`,
      shardBodies,
      embeddedAuth,
      EMBEDDED_WINDOWS,
    );
    const embeddedSamples = EMBEDDED_WINDOWS * PER_SERIES * SERIES;
    ingest.push(
      ingestRow(
        `ours, embedded (PGlite), first ${(EMBEDDED_WINDOWS * PER_SERIES) / 240} h`,
        embeddedSamples,
        embeddedSent,
        [cpuSeconds(svc.child.pid) - cpu0],
        loadBefore,
      ),
    );

    out.push(
      table(
        'Remote write ingestion (one run)',
        [
          'receiver',
          'samples',
          's',
          'samples/s',
          'request p50 / p99 ms',
          'CPU s per M samples (server + PG backends)',
          'load 1 min',
        ],
        ingest,
      ),
      table(
        'Bytes per sample at rest',
        ['store', 'samples', 'bytes', 'B/sample', 'how'],
        [
          perSample(
            'ours, chunk data of closed windows (sum octet_length)',
            asLeft.samples,
            asLeft.data,
            `${asLeft.chunks} chunks, closed windows folded ${compactSeconds.toFixed(1)} s after the last ack`,
          ),
          perSample(
            'ours, open window in batch rows (sum octet_length)',
            asLeft.batchSamples,
            asLeft.batchData,
            "samples after the last closed window, and the service's own scrapes",
          ),
          perSample(
            'ours, store tables when the closed windows were folded',
            atCompaction.samples + atCompaction.batchSamples,
            atCompaction.tables,
            `pg_total_relation_size: ${atCompaction.split}`,
          ),
          perSample(
            "ours, store tables as left, after the service's own VACUUM",
            asLeft.samples + asLeft.batchSamples,
            asLeft.tables,
            `pg_total_relation_size: ${asLeft.split}`,
          ),
          perSample(
            'ours, store tables after VACUUM FULL',
            vacuumed.samples + vacuumed.batchSamples,
            vacuumed.tables,
            vacuumed.split,
          ),
          perSample(
            'Prometheus, chunk files of its blocks',
            blocks.samples,
            blocks.chunkBytes,
            `${blocks.count} blocks after head compaction (settled ${settleSeconds.toFixed(0)} s); rest in the head`,
          ),
          perSample(
            'Prometheus, whole blocks (chunks, index, meta)',
            blocks.samples,
            blocks.bytes,
            'the same blocks',
          ),
          perSample(
            'Prometheus, whole data dir (blocks, head, WAL)',
            total,
            blocks.total,
            'every sample written',
          ),
        ],
      ),
      table(
        'query_range over 24 h at a 60 s step, after a warm-up each, alternating',
        [
          'query',
          'series',
          'runs',
          'ours ms median (best)',
          'Prometheus ms median (best)',
          'ratio of medians',
          'max rel. difference',
          'load 1 min',
        ],
        queries,
      ),
      `Service peak RSS (VmHWM, PostgreSQL run): ${rssBeforeQueries} MiB after ingestion and compaction, ${peakRss} MiB after the queries.\n`,
    );
    return out.join('\n');
  } finally {
    await svc?.stop();
    await db.end().catch(() => undefined);
    await prom.stop();
    await pgAdmin(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(embeddedDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await metricStoreBench());
