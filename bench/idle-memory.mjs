// Idle memory: RSS of a freshly started service 15 s after it is ready (and again at 60 s), nothing
// else running against it, one row per database (embedded PGlite on a fresh data directory, then
// PostgreSQL on a fresh database), each also with MEMORY_TRIM_INTERVAL=0 (the allocator's free memory
// kept, as before the trim). RSS and the anonymous part come from /proc/<pid>/status and smaps_rollup.
// BENCH_IDLE_RUNS (3) rounds, each starting every row's service once in turn: a row gives the median
// of its runs and their range (one run's figure moved by 30 MiB from one run to the next).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_ADMIN, MAIN, pgAdmin, pgDatabaseUrl, spawnUntilReady, table } from './lib.mjs';

const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 15);
/** A second sample this long after ready (0: none): a trim's effect may not last. */
const LATER_SECONDS = Number(process.env.BENCH_IDLE_LATER_SECONDS ?? 60);

const kib = (text, field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);

async function idleOnce(env, nodeArgs = []) {
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
    const load1 = loadavg()[0];
    let later = NaN;
    if (LATER_SECONDS > IDLE_SECONDS) {
      await new Promise((r) => setTimeout(r, (LATER_SECONDS - IDLE_SECONDS) * 1000));
      later = kib(readFileSync(`/proc/${pid}/status`, 'utf8'), 'VmRSS');
    }
    const peak = kib(readFileSync(`/proc/${pid}/status`, 'utf8'), 'VmHWM');
    await svc.stop();
    // KiB, as /proc gives them.
    return { rss: kib(status, 'VmRSS'), anonymous: kib(rollup, 'Anonymous'), later, peak, load1 };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** One sample of `row`: its own fresh data directory, or its own fresh PostgreSQL database. */
async function sample(row) {
  if (!row.postgres) return idleOnce(row.env, row.nodeArgs);
  const name = `bench_idle_${Date.now().toString(36)}`;
  await pgAdmin(`CREATE DATABASE ${name}`);
  try {
    return await idleOnce({ ...row.env, DATABASE_URL: pgDatabaseUrl(name) }, row.nodeArgs);
  } finally {
    await pgAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** `median (min-max)` in MiB of figures in KiB (a single run: the figure alone). */
function spread(values) {
  const xs = values.filter((v) => !Number.isNaN(v)).map((k) => k / 1024);
  if (xs.length === 0) return '-';
  const m = median(xs).toFixed(0);
  return xs.length === 1 ? m : `${m} (${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)})`;
}

export async function idleMemoryBench() {
  const runs = Math.max(1, Number(process.env.BENCH_IDLE_RUNS ?? 3));
  const noTrim = { MEMORY_TRIM_INTERVAL: '0' };
  const rows = [
    { label: 'embedded (PGlite), fresh data directory', env: {} },
    { label: 'embedded (PGlite), fresh data directory, MEMORY_TRIM_INTERVAL=0', env: noTrim },
    // What the embedded database's own vacuum pass costs in memory (a start that created the
    // database skips the pass after start; the interval at 0 turns the periodic one off too).
    {
      label: 'embedded (PGlite), fresh data directory, EMBEDDED_VACUUM_INTERVAL=0',
      env: { EMBEDDED_VACUUM_INTERVAL: '0' },
    },
    { label: 'PostgreSQL, fresh database', env: {}, postgres: true },
    { label: 'PostgreSQL, fresh database, MEMORY_TRIM_INTERVAL=0', env: noTrim, postgres: true },
  ];
  if (process.env.BENCH_IDLE_LIFTOFF) {
    rows.push({ label: 'embedded (PGlite), node --liftoff-only', env: {}, nodeArgs: ['--liftoff-only'] });
  }
  const later = LATER_SECONDS > IDLE_SECONDS;
  const samples = rows.map(() => []);
  for (let run = 0; run < runs; run++)
    for (const [i, row] of rows.entries()) samples[i].push(await sample(row));
  return table(
    `Idle memory, ${IDLE_SECONDS} s after /health/ready, median of ${runs} run${runs > 1 ? 's' : ''} (range) (aim for the embedded database: ≤ 250 MiB)`,
    [
      'database',
      `RSS MiB at ${IDLE_SECONDS} s`,
      `anonymous MiB at ${IDLE_SECONDS} s`,
      ...(later ? [`RSS MiB at ${LATER_SECONDS} s`] : []),
      'peak RSS (VmHWM) MiB',
      `load avg (1 min) at ${IDLE_SECONDS} s`,
    ],
    rows.map((row, i) => {
      const of = (field) => spread(samples[i].map((x) => x[field]));
      const loads = samples[i].map((x) => x.load1);
      return [
        row.label,
        of('rss'),
        of('anonymous'),
        ...(later ? [of('later')] : []),
        of('peak'),
        [...new Set([Math.min(...loads), Math.max(...loads)].map((l) => l.toFixed(1)))].join('-'),
      ];
    }),
  );
}
