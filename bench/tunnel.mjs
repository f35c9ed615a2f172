// The tunnel: requests/s to one stack service directly, through the ingress (the service's HTTP port
// with the service's Host) and through the relay's public port as well, in one run; then the time
// from the relay coming back (sshd listening again) to status `running`.
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { build } from 'esbuild';
import pg from 'pg';
import { CLIENT_ID, CLIENT_SECRET, adminToken, json, sleep } from './lib-agents.mjs';
import { MAIN, load, median, pgAdmin, pgDatabaseUrl, spawnUntilReady, table } from './lib.mjs';

const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 5);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
/** How long the relay stays down in the slow outage rows; the fast rows restart it at once. */
const OUTAGE_MS = Number(process.env.BENCH_TUNNEL_OUTAGE_MS ?? 5000);
const CONNECTIONS = 50;
const BASE_DOMAIN = 'tunnel.bench';
const SERVICE_HOST = `web-shop.b1.${BASE_DOMAIN}`;
const UPSTREAM_BODY = 'bench-upstream';
const FIXTURE = new URL('../test/fixtures/http-service.mjs', import.meta.url).pathname;

/** The tests' sshd relay (test/support/relay.ts), bundled by esbuild so this script can run it. */
async function loadRelaySupport() {
  const dir = mkdtempSync(join(tmpdir(), 'so-bench-relay-'));
  const outfile = join(dir, 'relay.mjs');
  await build({
    entryPoints: [new URL('../test/support/relay.ts', import.meta.url).pathname],
    bundle: true,
    platform: 'node',
    format: 'esm',
    outfile,
    logLevel: 'error',
  });
  const module = await import(outfile);
  return { ...module, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** GET with a Host header of our choosing (fetch refuses to set Host). */
function getWithHost(url, host) {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { host } }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The stacks, base and service rows a deploy would leave, pointing at the upstream's port. */
async function publish(databaseUrl, upstreamPort) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const stackId = randomUUID();
    await client.query(
      `INSERT INTO stacks (id, owner, name, status, revision, created_at, updated_at)
       VALUES ($1, 'default', 'shop', 'running', 1, now(), now())`,
      [stackId],
    );
    await client.query(`INSERT INTO tunnel_bases (base_id, owner) VALUES ('b1', 'default')`);
    await client.query(
      `INSERT INTO tunnel_services (subdomain, base_id, owner, stack_id, service, target_host, target_port)
       VALUES ($1, 'b1', 'default', $2, 'web', '127.0.0.1', $3)`,
      [`web-shop.b1`, stackId, upstreamPort],
    );
  } finally {
    await client.end();
  }
}

async function measure(label, url, host) {
  const headers = host ? { host } : {};
  await load(url, { connections: CONNECTIONS, duration: 1, headers });
  const r = await load(url, { connections: CONNECTIONS, duration: LOAD_SECONDS, headers });
  return {
    label,
    rps: r.requests.mean,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors,
  };
}

async function waitForState(url, token, wanted, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await json(`${url}/api/v1/tunnel/status`, { token });
    if (res.body.state === wanted) return;
    if (Date.now() > deadline)
      throw new Error(`tunnel not ${wanted} within ${timeoutMs} ms: ${JSON.stringify(res.body)}`);
    await sleep(20);
  }
}

/** Relay stopped, status seen `reconnecting`, `outageMs` more, relay started: ms until `running`. */
async function recovery(relay, url, token, outageMs) {
  await relay.stop();
  await waitForState(url, token, 'reconnecting');
  await sleep(outageMs);
  await relay.start();
  const back = performance.now();
  await waitForState(url, token, 'running');
  return performance.now() - back;
}

export async function tunnelBench() {
  const { startRelay, relayTunnel, cleanup } = await loadRelaySupport();
  const name = `bench_tunnel_${Date.now().toString(36)}`;
  await pgAdmin(`CREATE DATABASE ${name}`);
  const dataDir = mkdtempSync(join(tmpdir(), 'so-bench-tunnel-'));
  const relay = await startRelay();
  const stops = [];
  try {
    const upstream = await spawnUntilReady(FIXTURE, { VERSION: UPSTREAM_BODY }, '/health');
    stops.push(upstream.stop);
    const tunnel = await relayTunnel(relay);
    const publicUrl = tunnel.publicUrl;
    const svc = await spawnUntilReady(
      MAIN,
      {
        DATABASE_URL: pgDatabaseUrl(name),
        DATA_DIR: dataDir,
        AGENT_PORT: '0',
        PUBLIC_URL: 'http://127.0.0.1',
        BOOTSTRAP_CLIENT_ID: CLIENT_ID,
        BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET,
        TUNNEL_STUN_SERVERS: 'none',
        TUNNEL_BASE_DOMAIN: BASE_DOMAIN,
        ...tunnel.env,
      },
      '/health/ready',
    );
    stops.push(svc.stop);
    await publish(pgDatabaseUrl(name), new URL(upstream.url).port);
    const token = await adminToken(svc.url);
    const started = await json(`${svc.url}/api/v1/tunnel/start`, { method: 'POST', token });
    if (started.body.state !== 'running') throw new Error(`tunnel: ${JSON.stringify(started.body)}`);
    // Every path must reach the stack service: the API would answer /version with a 404.
    for (const base of [upstream.url, svc.url, publicUrl]) {
      const res = await getWithHost(`${base}/version`, SERVICE_HOST);
      if (res.status !== 200 || res.body !== UPSTREAM_BODY)
        throw new Error(`${base}: ${res.status} ${res.body}`);
    }

    const rows = [
      await measure('stack service directly', `${upstream.url}/version`),
      await measure('ingress (service HTTP port, Host header)', `${svc.url}/version`, SERVICE_HOST),
      await measure('ingress through the relay (sshd public port)', `${publicUrl}/version`, SERVICE_HOST),
    ];
    const direct = rows[0].rps;
    const throughput = table(
      `Tunnel ingress throughput (${CONNECTIONS} connections, ${LOAD_SECONDS} s after 1 s warm-up, GET /version)`,
      ['path', 'req/s (mean)', 'of direct', 'p50 ms', 'p99 ms', 'non-2xx', 'errors'],
      rows.map((r) => [
        r.label,
        r.rps.toFixed(0),
        `${((100 * r.rps) / direct).toFixed(0)} %`,
        r.p50,
        r.p99,
        r.non2xx,
        r.errors,
      ]),
    );

    const fast = [];
    const slow = [];
    for (let i = 0; i < RUNS; i++) fast.push(await recovery(relay, svc.url, token, 0));
    for (let i = 0; i < RUNS; i++) slow.push(await recovery(relay, svc.url, token, OUTAGE_MS));
    const row = (label, values) => [
      label,
      median(values).toFixed(0),
      Math.min(...values).toFixed(0),
      Math.max(...values).toFixed(0),
    ];
    const recoveryTable = table(
      `Relay back to running (sshd listening again until status says running; ${RUNS} runs each)`,
      ['outage', 'median ms', 'min ms', 'max ms'],
      [
        row('relay restarted as soon as status says reconnecting', fast),
        row(`relay down ${OUTAGE_MS} ms after status says reconnecting`, slow),
      ],
    );
    return `${throughput}\n${recoveryTable}`;
  } finally {
    for (const stop of stops.reverse()) await stop();
    await relay.close();
    await pgAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    rmSync(dataDir, { recursive: true, force: true });
    cleanup();
  }
}

if (process.argv[1] === new URL(import.meta.url).pathname) console.log(await tunnelBench());
