// Shared helpers for the benchmarks: child services, readiness polling, load, tables.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import autocannon from 'autocannon';
import pg from 'pg';

// The service as `npm start` runs it: the bundle (src/server/build/bundle-server.ts).
// BENCH_SERVICE_MAIN runs another entry of the same build instead (`dist/server/main.js`, the
// modules tsc wrote), for a before/after of the bundle itself.
export const MAIN = process.env.BENCH_SERVICE_MAIN
  ? new URL(process.env.BENCH_SERVICE_MAIN, `file://${process.cwd()}/`).pathname
  : new URL('../dist/server/bundle/main.mjs', import.meta.url).pathname;

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * Spawns a node script with env (and node flags, e.g. `--cpu-prof`, which NODE_OPTIONS refuses);
 * resolves when `readyPath` answers 200, with the elapsed ms.
 */
export async function spawnUntilReady(script, env, readyPath, timeoutMs = 60_000, nodeArgs = []) {
  const port = await freePort();
  const started = process.hrtime.bigint();
  const child = spawn(process.execPath, [...nodeArgs, script], {
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}`);
    try {
      const res = await fetch(`${url}${readyPath}`);
      await res.arrayBuffer();
      if (res.status === 200) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`${script} not ready within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
  const readyMs = Number(process.hrtime.bigint() - started) / 1e6;
  const stop = () =>
    new Promise((resolve) => {
      if (child.exitCode !== null) return resolve(child.exitCode);
      child.once('exit', (code) => resolve(code));
      child.kill('SIGTERM');
    });
  return { url, readyMs, stop, child };
}

/** autocannon; other options (`method`, `headers`, `body`, ...) are passed through. */
export function load(url, { connections = 50, duration = 10, pipelining = 1, ...options } = {}) {
  return new Promise((resolve, reject) => {
    autocannon({ url, connections, duration, pipelining, ...options }, (err, result) =>
      err ? reject(err) : resolve(result),
    );
  });
}

export const ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Runs one statement on the PostgreSQL maintenance database (CREATE/DROP DATABASE). */
export async function pgAdmin(sql) {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** The URL of database `name` on the PostgreSQL server of ADMIN_URL. */
export function pgDatabaseUrl(name) {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

export const median = (values) => {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

export function table(title, headers, rows) {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => `| ${cells.map((c, i) => String(c).padEnd(widths[i])).join(' | ')} |`;
  return [
    `### ${title}`,
    '',
    line(headers),
    `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`,
    ...rows.map(line),
    '',
  ].join('\n');
}

/** The bootstrap admin the benchmarks start their services with. */
export const BENCH_ADMIN = { id: 'bench-admin', secret: 'bench-admin-secret-0123456789' };

/** An access token of BENCH_ADMIN for `scope`, by client credentials. */
export async function benchToken(url, scope) {
  const res = await fetch(`${url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      grant_type: 'client_credentials',
      client_id: BENCH_ADMIN.id,
      client_secret: BENCH_ADMIN.secret,
      scope,
    }),
  });
  if (res.status !== 200) throw new Error(`token request failed: ${res.status}`);
  return (await res.json()).access_token;
}

/**
 * The least CPU time (user + system, seconds) `fn` took over `rounds` runs: on a shared machine
 * other processes' work does not count against it, as wall time would.
 */
export function bestCpuSeconds(fn, rounds = 7) {
  let best = Infinity;
  for (let round = 0; round < rounds; round++) {
    const start = process.cpuUsage();
    fn();
    const used = process.cpuUsage(start);
    best = Math.min(best, (used.user + used.system) / 1e6);
  }
  return best;
}

/** mulberry32: a seeded generator, so every run measures the same data. */
export function random(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), s | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}
