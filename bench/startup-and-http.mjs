// Start-up to ready (PostgreSQL, fresh embedded, reopened embedded) and /health/live throughput
// against a bare node:http server measured in the same run with the same load tool.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ADMIN_URL,
  BENCH_ADMIN,
  MAIN,
  benchToken,
  load,
  median,
  pgAdmin as admin,
  spawnUntilReady,
  table,
} from './lib.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 10);

async function startupOnce(env) {
  const svc = await spawnUntilReady(MAIN, env, '/health/ready');
  const code = await svc.stop();
  if (code !== 0) throw new Error(`service exited ${code} on SIGTERM`);
  return svc.readyMs;
}

export async function startupBench() {
  const results = { pgFresh: [], pgMigrated: [], embeddedFresh: [], embeddedReopen: [] };
  for (let i = 0; i < RUNS; i++) {
    const name = `bench_${Date.now().toString(36)}_${i}`;
    await admin(`CREATE DATABASE ${name}`);
    const url = new URL(ADMIN_URL);
    url.pathname = `/${name}`;
    const dataDir = mkdtempSync(join(tmpdir(), 'so-bench-'));
    try {
      results.pgFresh.push(await startupOnce({ DATABASE_URL: url.toString(), DATA_DIR: dataDir }));
      results.pgMigrated.push(await startupOnce({ DATABASE_URL: url.toString(), DATA_DIR: dataDir }));
      const embeddedDir = mkdtempSync(join(tmpdir(), 'so-bench-emb-'));
      results.embeddedFresh.push(await startupOnce({ DATA_DIR: embeddedDir }));
      results.embeddedReopen.push(await startupOnce({ DATA_DIR: embeddedDir }));
      rmSync(embeddedDir, { recursive: true, force: true });
    } finally {
      await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  const row = (label, values, aim) => [
    label,
    median(values).toFixed(0),
    Math.min(...values).toFixed(0),
    Math.max(...values).toFixed(0),
    aim,
  ];
  return table(
    `Start-up to ready (spawn until /health/ready answers 200; ${RUNS} runs)`,
    ['database', 'median ms', 'min ms', 'max ms', 'aim'],
    [
      row('PostgreSQL, empty database (migrations run)', results.pgFresh, '-'),
      row('PostgreSQL, migrated database', results.pgMigrated, '≤ 2000'),
      row('embedded, fresh data directory', results.embeddedFresh, '-'),
      row('embedded, reopened', results.embeddedReopen, '≤ 3500'),
    ],
  );
}

const SERVICE_ENV = (dataDir) => ({
  DATA_DIR: dataDir,
  BOOTSTRAP_CLIENT_ID: BENCH_ADMIN.id,
  BOOTSTRAP_CLIENT_SECRET: BENCH_ADMIN.secret,
  RATE_LIMIT_REQUESTS: '0',
});

const bearer = async (url) => `Bearer ${await benchToken(url, 'orchestrator:read')}`;

/**
 * User + system CPU seconds a process has used (/proc/<pid>/stat): per request, a figure other
 * processes on a shared machine do not move, as they move req/s.
 */
function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

export async function liveThroughputBench() {
  const dataDir = mkdtempSync(join(tmpdir(), 'so-bench-live-'));
  const rows = [];
  const measured = {};
  const cpuPerRequest = {};
  const BARE_NEST = 'bare NestJS + Express, /api/v1/orchestrator/info';
  const INFO = 'stack-orchestrator, /api/v1/orchestrator/info (Bearer token)';
  for (const [label, script, env, path] of [
    [
      'bare node:http, /health/live',
      new URL('./bare-http.mjs', import.meta.url).pathname,
      {},
      '/health/live',
    ],
    ['stack-orchestrator, /health/live', MAIN, SERVICE_ENV(dataDir), '/health/live'],
    // The framework's ceiling and a route through the whole pipeline, token verification included
    // (what every API call pays), one right after the other.
    [BARE_NEST, new URL('./bare-nest.mjs', import.meta.url).pathname, {}, '/api/v1/orchestrator/info'],
    [INFO, MAIN, SERVICE_ENV(dataDir), '/api/v1/orchestrator/info'],
  ]) {
    // The bare NestJS application has no probe: it is ready when its one route answers.
    const svc = await spawnUntilReady(script, env, label === BARE_NEST ? path : '/health/live');
    const headers =
      script === MAIN && path.startsWith('/api/') ? { authorization: await bearer(svc.url) } : {};
    await load(`${svc.url}${path}`, { duration: 2, headers }); // warm-up
    const load1 = loadavg()[0];
    const cpuBefore = cpuSeconds(svc.child.pid);
    const r = await load(`${svc.url}${path}`, { duration: LOAD_SECONDS, headers });
    const cpuUs = ((cpuSeconds(svc.child.pid) - cpuBefore) / r.requests.total) * 1e6;
    await svc.stop();
    measured[label] = r.requests.average;
    cpuPerRequest[label] = cpuUs;
    rows.push([
      label,
      r.requests.average.toFixed(0),
      r.latency.p50,
      r.latency.p99,
      r.non2xx + r.errors,
      cpuUs.toFixed(0),
      `${load1.toFixed(1)} → ${loadavg()[0].toFixed(1)}`,
    ]);
    if (r.non2xx + r.errors > 0) {
      console.error(`warning: ${label}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
      process.exitCode = 1;
    }
  }
  rmSync(dataDir, { recursive: true, force: true });
  const percent = (a, b) => `${((measured[a] / measured[b]) * 100).toFixed(0)} %`;
  // The same ratio from CPU time: the baseline's CPU per request over the service's.
  const cpuRatio = (a, b) => `${((cpuPerRequest[b] / cpuPerRequest[a]) * 100).toFixed(0)} %`;
  rows.push([
    '/health/live: service / bare node:http',
    percent('stack-orchestrator, /health/live', 'bare node:http, /health/live'),
    '',
    '',
    'aim ≥ 50 %',
    cpuRatio('stack-orchestrator, /health/live', 'bare node:http, /health/live'),
    '',
  ]);
  rows.push([
    '/info with a token: service / bare NestJS',
    percent(INFO, BARE_NEST),
    '',
    '',
    'aim ≥ 60 %',
    cpuRatio(INFO, BARE_NEST),
    '',
  ]);
  return table(
    `HTTP throughput, autocannon 50 connections, ${LOAD_SECONDS} s after a 2 s warm-up`,
    [
      'server and route',
      'req/s (mean)',
      'p50 ms',
      'p99 ms',
      'errors',
      'server CPU µs/request',
      'load avg (1 min) before → after',
    ],
    rows,
  );
}
