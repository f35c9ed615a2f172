// Idle memory: RSS of a freshly started service 15 s after it is ready (and again at 60 s), nothing
// else running against it, one row per database (embedded PGlite on a fresh data directory, then
// PostgreSQL on a fresh database), each also with MEMORY_TRIM_INTERVAL=0 (the allocator's free memory
// kept, as before the trim). RSS and the anonymous part come from /proc/<pid>/status and smaps_rollup.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_ADMIN, MAIN, pgAdmin, pgDatabaseUrl, spawnUntilReady, table } from './lib.mjs';

const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 15);
/** A second sample this long after ready (0: none): a trim's effect may not last. */
const LATER_SECONDS = Number(process.env.BENCH_IDLE_LATER_SECONDS ?? 60);

const kib = (text, field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
const mib = (k) => (k / 1024).toFixed(0);

async function idleOnce(label, env, nodeArgs = []) {
  const dataDir = mkdtempSync(join(tmpdir(), 'so-bench-idle-'));
  try {
    const svc = await spawnUntilReady(
      MAIN,
      {
        DATA_DIR: dataDir,
        AGENT_PORT: '0',
        BOOTSTRAP_CLIENT_ID: BENCH_ADMIN.id,
        BOOTSTRAP_CLIENT_SECRET: BENCH_ADMIN.secret,
        ...env,
      },
      '/health/ready',
      60_000,
      nodeArgs,
    );
    await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
    const pid = svc.child.pid;
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const load1 = loadavg()[0].toFixed(1);
    let later = '-';
    if (LATER_SECONDS > IDLE_SECONDS) {
      await new Promise((r) => setTimeout(r, (LATER_SECONDS - IDLE_SECONDS) * 1000));
      later = mib(kib(readFileSync(`/proc/${pid}/status`, 'utf8'), 'VmRSS'));
    }
    const peak = mib(kib(readFileSync(`/proc/${pid}/status`, 'utf8'), 'VmHWM'));
    await svc.stop();
    return [label, mib(kib(status, 'VmRSS')), mib(kib(rollup, 'Anonymous')), later, peak, load1];
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function idleMemoryBench() {
  const noTrim = { MEMORY_TRIM_INTERVAL: '0' };
  const rows = [
    await idleOnce('embedded (PGlite), fresh data directory', {}),
    await idleOnce('embedded (PGlite), fresh data directory, MEMORY_TRIM_INTERVAL=0', noTrim),
    // What the embedded database's own vacuum pass (the first 5 s after start) costs in memory.
    await idleOnce('embedded (PGlite), fresh data directory, EMBEDDED_VACUUM_INTERVAL=0', {
      EMBEDDED_VACUUM_INTERVAL: '0',
    }),
  ];
  for (const [label, env] of [
    ['PostgreSQL, fresh database', {}],
    ['PostgreSQL, fresh database, MEMORY_TRIM_INTERVAL=0', noTrim],
  ]) {
    const name = `bench_idle_${Date.now().toString(36)}`;
    await pgAdmin(`CREATE DATABASE ${name}`);
    try {
      rows.push(await idleOnce(label, { ...env, DATABASE_URL: pgDatabaseUrl(name) }));
    } finally {
      await pgAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  }
  if (process.env.BENCH_IDLE_LIFTOFF) {
    rows.push(await idleOnce('embedded (PGlite), node --liftoff-only', {}, ['--liftoff-only']));
  }
  return table(
    `Idle memory, ${IDLE_SECONDS} s after /health/ready (aim for the embedded database: ≤ 250 MiB)`,
    [
      'database',
      `RSS MiB at ${IDLE_SECONDS} s`,
      `anonymous MiB at ${IDLE_SECONDS} s`,
      `RSS MiB at ${LATER_SECONDS} s`,
      'peak RSS (VmHWM) MiB',
      `load avg (1 min) at ${IDLE_SECONDS} s`,
    ],
    rows,
  );
}
