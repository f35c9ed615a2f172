// `node bench/main.mjs enroll`: what enrolling a node costs the service. One service on PostgreSQL
// per run; the agents' keys and CSRs are made before the clock starts (they cost the bench about
// 8 ms each with @peculiar/x509, which would otherwise share the cores with the service), then
// POST /workers/enroll with a pre-approved join token, `BENCH_ENROLL_CONCURRENCY` in flight: each
// answer carries the worker's signed certificate. Reported: enrollments per second, latency, and
// the CPU the service and its PostgreSQL backends spent per enrollment.
// `BENCH_ENROLL_BASE_MAIN` (another build's service entry, e.g. a worktree of an earlier commit)
// runs alternately with this one, for a side-by-side in one run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { newKeyAndCsr } from '../dist/agent/identity.js';
import { ADMIN_URL, MAIN, pgAdmin, pgDatabaseUrl, spawnUntilReady, table } from './lib.mjs';
import {
  CLK_TCK,
  adminToken,
  json,
  enroll,
  pgBackendTicks,
  pgTicksBetween,
  processTicks,
  serviceEnv,
} from './lib-agents.mjs';

const env = process.env;
const COUNT = Number(env.BENCH_ENROLL_COUNT ?? 1000);
const CONCURRENCY = Number(env.BENCH_ENROLL_CONCURRENCY ?? 16);
const REPEAT = Number(env.BENCH_ENROLL_REPEAT ?? 2);
const BASE_MAIN = env.BENCH_ENROLL_BASE_MAIN;

const log = (...args) => console.error(`[enroll ${new Date().toISOString().slice(11, 19)}]`, ...args);

async function run(main, keys) {
  const database = `bench_enroll_${process.pid}_${Date.now()}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-enroll-'));
  await pgAdmin(`CREATE DATABASE ${database}`);
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  let svc;
  try {
    svc = await spawnUntilReady(
      main,
      serviceEnv({ databaseUrl: pgDatabaseUrl(database), dataDir, heartbeat: '10s' }),
      '/health/ready',
    );
    const token = await adminToken(svc.url);
    const jt = await json(`${svc.url}/api/v1/orchestrator/join-tokens`, {
      method: 'POST',
      token,
      body: { pre_approved: true, ttl: '24h' },
    });
    if (jt.status !== 201) throw new Error(`join token: ${jt.status}`);
    const ticks0 = processTicks(svc.child.pid);
    const pg0 = await pgBackendTicks(client, database);
    const r = await enroll(svc.url, jt.body.token, 0, keys.length, {
      concurrency: CONCURRENCY,
      keys,
      attempts: 1,
      prefix: 'bench-enroll',
    });
    const serviceMs = ((processTicks(svc.child.pid) - ticks0) / CLK_TCK) * 1000;
    const pgMs = (pgTicksBetween(pg0, await pgBackendTicks(client, database)) / CLK_TCK) * 1000;
    return {
      seconds: r.seconds,
      rate: keys.length / r.seconds,
      p50: r.p50,
      p99: r.p99,
      serviceMs: serviceMs / keys.length,
      pgMs: pgMs / keys.length,
    };
  } finally {
    await svc?.stop();
    await client.end();
    await pgAdmin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function enrollBench() {
  log(`making ${COUNT} keys and CSRs`);
  const keys = [];
  for (let i = 0; i < COUNT; i++) keys.push(await newKeyAndCsr(`bench-enroll-${i}`));
  const builds = [
    { label: 'this build', main: MAIN },
    ...(BASE_MAIN ? [{ label: BASE_MAIN, main: BASE_MAIN }] : []),
  ];
  const rows = [];
  for (let round = 1; round <= REPEAT; round++)
    for (const build of round % 2 === 1 ? builds : [...builds].reverse()) {
      const r = await run(build.main, keys);
      log(
        `${build.label}, run ${round}: ${r.rate.toFixed(0)}/s, ${r.serviceMs.toFixed(1)} ms service CPU each`,
      );
      rows.push([
        build.label,
        String(round),
        String(COUNT),
        r.seconds.toFixed(1),
        r.rate.toFixed(0),
        `${r.p50.toFixed(0)} / ${r.p99.toFixed(0)}`,
        r.serviceMs.toFixed(1),
        r.pgMs.toFixed(1),
      ]);
    }
  return `${table(
    `Enrollment: POST /workers/enroll with a pre-approved join token, ${CONCURRENCY} in flight, CSRs made beforehand (PostgreSQL)`,
    ['service', 'run', 'enrollments', 's', 'per s', 'p50 / p99 ms', 'service CPU ms each', 'PG CPU ms each'],
    rows,
  )}\nCPU in ms of one core per enrollment (the service process, and its PostgreSQL backends).\n`;
}
