// Memory per connected agent (issue 18, item 4): one service on PostgreSQL, N agents enrolled, then
// the service's memory after two full GCs with none of them connected, and again with all N
// connected (real mutual TLS, one grpc-js client and connection each, heartbeats every 10 s, in a
// forked load process). The difference over N, split into the V8 heap (JS objects: grpc-js streams,
// the session maps), memory outside the heap that Node accounts for (`external`: Buffers, array
// buffers) and the rest of the resident anonymous memory (native: OpenSSL's TLS state and buffers,
// nghttp2 sessions, libuv handles, malloc overhead).
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAIN, pgAdmin, pgDatabaseUrl, spawnUntilReady, table } from './lib.mjs';
import { fork } from 'node:child_process';
import { connect as tlsConnect } from 'node:tls';
import { connect as h2Connect } from 'node:http2';
import { adminToken, enroll, IpcChild, json, serviceEnv, sleep } from './lib-agents.mjs';
import { certificates } from './agent-memory-floor.mjs';
import { heaptrackRecorder, heldBySite } from './lib-heaptrack.mjs';

const env = process.env;
const STEPS = (env.BENCH_MEMORY_AGENTS ?? '2000,5000')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const SETTLE_S = Number(env.BENCH_MEMORY_SETTLE_S ?? 30);
const PROBE_MODULE = new URL('./agents-probe.mjs', import.meta.url).pathname;
const log = (...args) => console.error(`[agent-memory ${new Date().toISOString().slice(11, 19)}]`, ...args);
const KiB = 1024;
// A directory: each server runs under heaptrack, killed while its connections are up, and the bench
// adds a table of the native memory each connection holds, by allocation site (lib-heaptrack.mjs).
const HEAPTRACK_DIR = env.BENCH_MEMORY_HEAPTRACK_DIR;
/** What each connection of the burst floors uploads once. */
const BURST_BYTES = 256 * 1024;
// When set (bytes), the service gets a last step: every agent uploads one heartbeat that large.
const SERVICE_BURST_BYTES = Number(env.BENCH_MEMORY_BURST_BYTES ?? 0);

async function snapshot(pid, file) {
  const before = existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0;
  process.kill(pid, 'SIGWINCH');
  for (;;) {
    await sleep(200);
    const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
    if (lines.length > before) return JSON.parse(lines.at(-1));
  }
}

/** The columns of one row: memory after N connections against the same process with none. */
function row(label, n, base, m, previous = { n: 0, m: base }) {
  const per = (k) => (m[k] - base[k]) / n / KiB;
  const step = (m.rssAnon - previous.m.rssAnon) / (n - previous.n) / KiB;
  const rssAnon = per('rssAnon');
  const heap = per('heapUsed');
  const external = per('external');
  const committed = per('heapTotal');
  return [
    label,
    n,
    (m.rss / 2 ** 20).toFixed(0),
    per('rss').toFixed(1),
    rssAnon.toFixed(1),
    step.toFixed(1),
    heap.toFixed(1),
    external.toFixed(1),
    (committed - heap).toFixed(1),
    (rssAnon - committed - external).toFixed(1),
  ];
}

/**
 * A bare Node server (bench/agent-memory-floor.mjs) holding `n` client connections from this
 * process: mutual TLS 1.3 only, or HTTP/2 over it with one open request stream each (as an agent's
 * Connect stream is one).
 */
async function floor(mode, n) {
  const dir = mkdtempSync(join(tmpdir(), 'so-bench-floor-'));
  await certificates(dir);
  const recorder = HEAPTRACK_DIR && heaptrackRecorder(join(HEAPTRACK_DIR, `floor-${mode}.gz`));
  const child = fork(new URL('./agent-memory-floor.mjs', import.meta.url).pathname, ['server', mode, dir], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...env, ...(recorder ? recorder.env : {}) },
  });
  const next = (type) =>
    new Promise((resolve) => child.once('message', (m) => m.type === type && resolve(m)));
  const held = [];
  try {
    const { port } = await next('ready');
    const memory = async () => {
      const reply = next('memory');
      child.kill('SIGWINCH');
      return reply;
    };
    await sleep(1000);
    const base = await memory();
    const tls = {
      ca: readFileSync(join(dir, 'ca.pem')),
      cert: readFileSync(join(dir, 'client.pem')),
      key: readFileSync(join(dir, 'client.key')),
    };
    const one = () =>
      new Promise((resolve, reject) => {
        if (mode.startsWith('tls')) {
          const socket = tlsConnect({ ...tls, host: '127.0.0.1', port }, () => {
            socket.write('hello');
            resolve();
          });
          socket.on('error', reject);
          held.push(socket);
        } else {
          const session = h2Connect(`https://127.0.0.1:${port}`, tls);
          session.on('error', reject);
          const stream = session.request({ ':method': 'POST', ':path': '/x' }, { endStream: false });
          stream.write('hello');
          // A burst: one upload after the welcome, as an agent's scrape or service output is.
          stream.on('response', () =>
            mode.startsWith('h2-burst')
              ? stream.write(Buffer.alloc(BURST_BYTES, 120), () => resolve())
              : resolve(),
          );
          held.push(session);
        }
      });
    for (let i = 0; i < n; i += 50) await Promise.all(Array.from({ length: Math.min(50, n - i) }, one));
    await sleep(SETTLE_S * 1000);
    const m = await memory();
    // Killed with its connections up: what it holds is what heaptrack reports as not freed.
    child.kill('SIGKILL');
    return { base, m, sites: recorder ? await heldBySite(await recorder.done, n) : undefined };
  } finally {
    child.kill('SIGKILL');
    for (const h of held) h.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The native memory per connection by owner and by site, one table per traced server. */
function sitesTables(traced) {
  return traced
    .map(({ label, n, sites }) =>
      table(
        `Native memory still allocated per connection, by allocation site: ${label}, ${n} connections (heaptrack; allocated, not all resident)`,
        ['owner or site', 'KiB per connection'],
        [
          ['all native allocations', sites.total.toFixed(1)],
          ...sites.owners.map(([owner, kib]) => [`owner: ${owner}`, kib.toFixed(1)]),
          ...sites.sites.map(([site, owner, kib]) => [
            `site: \`${site.slice(0, 90)}\` (${owner})`,
            kib.toFixed(1),
          ]),
        ],
      ),
    )
    .join('\n');
}

export async function agentMemoryBench() {
  const floorN = Number(env.BENCH_MEMORY_FLOOR_CONNECTIONS ?? 3000);
  const floors = [];
  const traced = [];
  if (floorN > 0) {
    for (const [mode, label] of [
      ['tls', 'bare node:tls, TLS 1.3 with a client certificate'],
      ['tls-noticket', 'the same without session tickets (SSL_OP_NO_TICKET)'],
      ['h2', 'bare node:http2 over it, one open stream'],
      ['h2-burst', 'the same after one 256 KiB upload on each stream'],
      ['h2-burst-window16', 'the same with a 16 KiB stream window'],
    ]) {
      log(`floor: ${label}, ${floorN} connections`);
      const { base, m, sites } = await floor(mode, floorN);
      floors.push(row(label, floorN, base, m));
      if (sites) traced.push({ label, n: floorN, sites });
    }
  }
  if (STEPS.length === 0) return memoryTables(floors, traced);
  const max = Math.max(...STEPS);
  const database = `bench_agent_memory_${Date.now().toString(36)}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'so-bench-agent-memory-'));
  const memoryFile = join(dataDir, 'memory.jsonl');
  await pgAdmin(`CREATE DATABASE ${database}`);
  let svc;
  const loads = [];
  const rows = [];
  const recorder = HEAPTRACK_DIR && heaptrackRecorder(join(HEAPTRACK_DIR, 'service.gz'));
  try {
    svc = await spawnUntilReady(
      MAIN,
      {
        ...serviceEnv({ databaseUrl: pgDatabaseUrl(database), dataDir, heartbeat: '10s' }),
        BENCH_PROBE_MEMORY_FILE: memoryFile,
        ...(env.BENCH_MEMORY_HEAP_SNAPSHOT_DIR
          ? { BENCH_PROBE_HEAP_SNAPSHOT_DIR: env.BENCH_MEMORY_HEAP_SNAPSHOT_DIR }
          : {}),
        NODE_OPTIONS: `--import=${PROBE_MODULE}`,
        // E.g. '{"MALLOC_ARENA_MAX":"2"}': allocator settings to compare.
        ...JSON.parse(env.BENCH_MEMORY_SERVICE_ENV ?? '{}'),
        ...(recorder ? recorder.env : {}),
      },
      '/health/ready',
      60_000,
      // E.g. '--optimize-for-size': V8 settings to compare.
      (env.BENCH_MEMORY_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean),
    );
    const token = await adminToken(svc.url);
    const info = await json(`${svc.url}/api/v1/orchestrator/info`, { token });
    const jt = await json(`${svc.url}/api/v1/orchestrator/join-tokens`, {
      method: 'POST',
      token,
      body: { pre_approved: true, ttl: '24h' },
    });
    log(`enrolling ${max} agents`);
    const e = await enroll(svc.url, jt.body.token, 0, max);
    await sleep(SETTLE_S * 1000);
    const base = await snapshot(svc.child.pid, memoryFile);
    const load = new IpcChild(new URL('./agents-load.mjs', import.meta.url).pathname, {
      execArgv: ['--max-old-space-size=8192', '--no-deprecation'],
    });
    loads.push(load);
    await load.request({ type: 'init', endpoint: info.body.agent_endpoint, caPem: e.caPem }, 'ready');
    let connected = 0;
    let previous = { n: 0, m: base };
    for (const n of STEPS) {
      const add = e.identities.slice(connected, n);
      log(`connecting ${add.length} more (to ${n})`);
      const r = await load.request({ type: 'connect', agents: add, concurrency: 50 }, 'connected');
      if (r.failed > 0) throw new Error(`${r.failed} agents failed to connect`);
      connected = n;
      await sleep(SETTLE_S * 1000);
      const m = await snapshot(svc.child.pid, memoryFile);
      rows.push(row('the service: grpc-js, agent sessions (PostgreSQL)', n, base, m, previous));
      previous = { n, m };
    }
    if (SERVICE_BURST_BYTES > 0) {
      log(`each agent uploads ${SERVICE_BURST_BYTES} bytes once`);
      const r = await load.request({ type: 'burst', bytes: SERVICE_BURST_BYTES }, 'burst-done');
      if (r.acked < r.sent)
        throw new Error(`${r.sent - r.acked} of ${r.sent} uploads not acknowledged: ${JSON.stringify(r)}`);
      await sleep(SETTLE_S * 1000);
      const m = await snapshot(svc.child.pid, memoryFile);
      const label = `the same after one ${Math.round(SERVICE_BURST_BYTES / 1024)} KiB upload per agent`;
      rows.push(row(label, max, base, m, { n: 0, m: previous.m }));
    }
    if (recorder) {
      // Killed with its agents connected, as the floor servers are.
      svc.child.kill('SIGKILL');
      const sites = await heldBySite(await recorder.done, max);
      traced.push({ label: 'the service (includes what it allocated at start)', n: max, sites });
    }
  } finally {
    for (const l of loads) await l.stop();
    svc?.child.kill('SIGTERM');
    await sleep(1000);
    await pgAdmin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => {});
    rmSync(dataDir, { recursive: true, force: true });
  }
  return memoryTables([...floors, ...rows], traced);
}

/** The memory table, and the allocation sites of each traced server (BENCH_MEMORY_HEAPTRACK_DIR). */
function memoryTables(rows, traced) {
  return (
    table(
      'Memory per connected agent (after two full GCs; KiB per connection over the same process with none)',
      [
        'server',
        'connections',
        'process RSS MiB',
        'RSS KiB/agent',
        'anonymous RSS KiB/agent',
        'anonymous RSS KiB per agent of this step',
        'V8 heap used KiB/agent',
        'external (Buffers) KiB/agent',
        'V8 heap committed, unused KiB/agent',
        'native (TLS, HTTP/2, malloc) KiB/agent',
      ],
      rows,
    ) + (traced.length > 0 ? `\n${sitesTables(traced)}` : '')
  );
}
