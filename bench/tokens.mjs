// Token endpoint throughput: POST /oauth/token with the client_credentials and refresh_token grants,
// and GET /api/v1/auth/validate with a Bearer token, on the embedded database and on PostgreSQL.
import { randomBytes, scrypt } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAIN, load, pgAdmin, pgDatabaseUrl, spawnUntilReady, table } from './lib.mjs';

const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 10);
const WARMUP_SECONDS = 2;
/** Concurrent connections (autocannon) or workers (refresh loop) for the two grants. */
const GRANT_CONNECTIONS = Number(process.env.BENCH_TOKEN_CONNECTIONS ?? 10);
/** autocannon connections for validation, as in the HTTP throughput bench. */
const VALIDATE_CONNECTIONS = 50;

const CLIENT_ID = 'bench-admin';
const CLIENT_SECRET = 'bench-admin-secret-0123456789';
const CLIENT_CREDENTIALS = JSON.stringify({
  grant_type: 'client_credentials',
  client_id: CLIENT_ID,
  client_secret: CLIENT_SECRET,
});
const SERVICE_ENV = {
  BOOTSTRAP_CLIENT_ID: CLIENT_ID,
  BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET,
  RATE_LIMIT_REQUESTS: '0',
  AUTH_FAILURE_LIMIT: '100000',
  LOG_LEVEL: 'warn',
};

/** One JSON POST on a keep-alive agent: the status and the parsed body (undefined if not JSON). */
function postJson(agent, url, body) {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          let json;
          try {
            json = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode, json });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function issueToken(agent, url) {
  const res = await postJson(agent, `${url}/oauth/token`, CLIENT_CREDENTIALS);
  if (res.status !== 200 || typeof res.json?.refresh_token !== 'string') {
    throw new Error(`client_credentials answered ${res.status}: ${JSON.stringify(res.json)}`);
  }
  return res.json;
}

/** Nearest-rank percentile of sorted values. */
const percentile = (sorted, q) => sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] ?? NaN;

/**
 * Closed-loop refresh chains: `chains.length` workers, each redeeming its own current refresh token
 * and going on with the one in the answer, for `seconds`. `chains` is updated in place, so a
 * measured run can follow a warm-up. A worker whose chain breaks starts a new one with a
 * client_credentials call (not counted as a refresh).
 */
async function refreshLoop(url, chains, seconds) {
  const agent = new Agent({ keepAlive: true, maxSockets: chains.length });
  const latencies = [];
  let ok = 0;
  let non2xx = 0;
  let errors = 0;
  const started = performance.now();
  const end = started + seconds * 1000;
  await Promise.all(
    chains.map(async (_, i) => {
      while (performance.now() < end) {
        const body = JSON.stringify({ grant_type: 'refresh_token', refresh_token: chains[i] });
        const t0 = performance.now();
        let res;
        try {
          res = await postJson(agent, `${url}/oauth/token`, body);
        } catch {
          errors++;
        }
        if (res) latencies.push(performance.now() - t0);
        if (res?.status === 200 && typeof res.json?.refresh_token === 'string') {
          ok++;
          chains[i] = res.json.refresh_token;
          continue;
        }
        if (res) non2xx++;
        chains[i] = (await issueToken(agent, url)).refresh_token;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return {
    rps: ok / elapsed,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    non2xx,
    errors,
  };
}

/**
 * Reference: scrypt alone with the service's parameters (src/server/common/secrets.ts), `concurrency`
 * hashes in flight on libuv's thread pool, in this process, while no service runs.
 */
async function scryptLoop(concurrency, seconds) {
  const salt = randomBytes(16);
  const options = { N: 16384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };
  const hash = () =>
    new Promise((resolve, reject) =>
      scrypt(CLIENT_SECRET, salt, 32, options, (err) => (err ? reject(err) : resolve())),
    );
  const latencies = [];
  const started = performance.now();
  const end = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        await hash();
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const single = performance.now();
  await hash();
  return {
    rps: latencies.length / elapsed,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    single: performance.now() - single,
    non2xx: 0,
    errors: 0,
  };
}

const ms = (v) => (v < 10 ? v.toFixed(1) : v.toFixed(0));
const fromAutocannon = (r) => ({
  rps: r.requests.average,
  p50: r.latency.p50,
  p99: r.latency.p99,
  non2xx: r.non2xx,
  errors: r.errors, // timeouts included
});

/** The three measurements against one running service. */
async function measure(url) {
  const agent = new Agent({ keepAlive: true });
  const results = {};
  try {
    const tokenUrl = `${url}/oauth/token`;
    const post = {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: CLIENT_CREDENTIALS,
    };
    await load(tokenUrl, { ...post, connections: GRANT_CONNECTIONS, duration: WARMUP_SECONDS });
    results.clientCredentials = fromAutocannon(
      await load(tokenUrl, { ...post, connections: GRANT_CONNECTIONS, duration: LOAD_SECONDS }),
    );

    const chains = [];
    for (let i = 0; i < GRANT_CONNECTIONS; i++) chains.push((await issueToken(agent, url)).refresh_token);
    await refreshLoop(url, chains, WARMUP_SECONDS);
    results.refresh = await refreshLoop(url, chains, LOAD_SECONDS);

    const { access_token: accessToken } = await issueToken(agent, url);
    const validate = {
      connections: VALIDATE_CONNECTIONS,
      headers: { authorization: `Bearer ${accessToken}` },
    };
    const validateUrl = `${url}/api/v1/auth/validate`;
    await load(validateUrl, { ...validate, duration: WARMUP_SECONDS });
    results.validate = fromAutocannon(await load(validateUrl, { ...validate, duration: LOAD_SECONDS }));
  } finally {
    agent.destroy();
  }
  return results;
}

async function runService(env) {
  const svc = await spawnUntilReady(MAIN, { ...SERVICE_ENV, ...env }, '/health/ready');
  let results;
  try {
    results = await measure(svc.url);
  } finally {
    const code = await svc.stop();
    if (results && code !== 0) throw new Error(`service exited ${code} on SIGTERM`);
  }
  return results;
}

export async function tokensBench() {
  await scryptLoop(GRANT_CONNECTIONS, WARMUP_SECONDS);
  const reference = await scryptLoop(GRANT_CONNECTIONS, LOAD_SECONDS);
  const runs = [];

  const embeddedDir = mkdtempSync(join(tmpdir(), 'so-bench-tokens-'));
  try {
    runs.push(['embedded (PGlite)', await runService({ DATA_DIR: embeddedDir })]);
  } finally {
    rmSync(embeddedDir, { recursive: true, force: true });
  }

  const name = `bench_tokens_${Date.now().toString(36)}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'so-bench-tokens-pg-'));
  try {
    await pgAdmin(`CREATE DATABASE ${name}`);
    runs.push(['PostgreSQL', await runService({ DATABASE_URL: pgDatabaseUrl(name), DATA_DIR: dataDir })]);
  } finally {
    await pgAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    rmSync(dataDir, { recursive: true, force: true });
  }

  const rows = [
    [
      '-',
      `scrypt alone (N=2^14, r=8, p=1; one hash ${ms(reference.single)} ms)`,
      `${GRANT_CONNECTIONS} in flight`,
      reference.rps.toFixed(0),
      ms(reference.p50),
      ms(reference.p99),
      '-',
      '-',
    ],
  ];
  let failed = 0;
  for (const [database, r] of runs) {
    for (const [operation, tool, m] of [
      [
        'POST /oauth/token, client_credentials',
        `autocannon, ${GRANT_CONNECTIONS} conn.`,
        r.clientCredentials,
      ],
      ['POST /oauth/token, refresh_token', `${GRANT_CONNECTIONS} chained workers`, r.refresh],
      ['GET /api/v1/auth/validate', `autocannon, ${VALIDATE_CONNECTIONS} conn.`, r.validate],
    ]) {
      failed += m.non2xx + m.errors;
      rows.push([database, operation, tool, m.rps.toFixed(0), ms(m.p50), ms(m.p99), m.non2xx, m.errors]);
    }
  }
  if (failed > 0) {
    console.error(`tokens bench: ${failed} non-2xx answers or errors; the figures are not valid`);
    process.exitCode = 1;
  }
  return table(
    `Tokens, ${LOAD_SECONDS} s measured after a ${WARMUP_SECONDS} s warm-up`,
    ['database', 'operation', 'load', 'req/s (mean)', 'p50 ms', 'p99 ms', 'non-2xx', 'errors'],
    rows,
  );
}
