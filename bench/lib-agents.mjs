// Shared by the benchmarks that run simulated agents against a service process (bench/agents.mjs,
// bench/dispatch.mjs): the admin client, HTTP helpers, enrollment of real identities, /proc
// sampling, and a forked helper process driven over IPC.
import { execSync, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { newKeyAndCsr } from '../dist/agent/identity.js';

/** The bootstrap admin client the benchmarks start the service with. */
export const CLIENT_ID = 'bench-admin';
export const CLIENT_SECRET = 'bench-admin-secret-0123456789';

/**
 * What the agent benchmarks start the service with: the bench admin, no rate limit, warnings only,
 * loopback, the agent port chosen by the system; `DATABASE_URL` only when given (else embedded).
 */
export function serviceEnv({ databaseUrl, dataDir, heartbeat }) {
  return {
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    DATA_DIR: dataDir,
    BOOTSTRAP_CLIENT_ID: CLIENT_ID,
    BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET,
    RATE_LIMIT_REQUESTS: '0',
    // The service accepts at most 100000 here (src/server/config/config.ts).
    AUTH_FAILURE_LIMIT: '100000',
    LOG_LEVEL: 'warn',
    HEARTBEAT_INTERVAL: heartbeat,
    AGENT_PORT: '0',
    HOST: '127.0.0.1',
    PUBLIC_URL: 'http://127.0.0.1',
  };
}

export const CLK_TCK = (() => {
  try {
    return Number(execSync('getconf CLK_TCK', { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** Nearest-rank percentile of sorted values. */
export const percentile = (sorted, q) => sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] ?? NaN;

// ---- /proc sampling ----

/** utime + stime of a process (all its threads), in clock ticks; 0 when it is gone. */
export function processTicks(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

export function rssMiB(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** Busy ticks of the whole machine (all CPUs): everything but idle and iowait. */
export function machineBusyTicks() {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = cpu;
  void idle;
  void iowait;
  return user + nice + system + irq + softirq + (steal ?? 0);
}

/** CPU time of this process so far, in clock ticks. */
export function ownTicks() {
  const used = process.cpuUsage();
  return ((used.user + used.system) / 1e6) * CLK_TCK;
}

/** Ticks of each PostgreSQL backend serving `database`, by pid (`client` on any database). */
export async function pgBackendTicks(client, database) {
  const { rows } = await client.query('SELECT pid FROM pg_stat_activity WHERE datname = $1', [database]);
  return new Map(rows.map((r) => [r.pid, processTicks(r.pid)]));
}

/** Ticks the backends of two readings used between them (one that came since counts from then). */
export function pgTicksBetween(before, after) {
  let ticks = 0;
  for (const [pid, t] of after) ticks += Math.max(0, t - (before.get(pid) ?? t));
  return ticks;
}

// ---- HTTP helpers ----

export async function json(url, { method = 'GET', token, body } = {}) {
  const res = await fetch(url, {
    method,
    headers: {
      ...(body ? { 'content-type': 'application/json' } : {}),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = text;
  }
  return { status: res.status, body: parsed };
}

export async function adminToken(url) {
  const res = await json(`${url}/oauth/token`, {
    method: 'POST',
    body: { grant_type: 'client_credentials', client_id: CLIENT_ID, client_secret: CLIENT_SECRET },
  });
  if (res.status !== 200) throw new Error(`token: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.access_token;
}

/**
 * Enrolls `count` agents (`<prefix>-<first + i>`) with a pre-approved join token: key, CSR,
 * POST .../workers/enroll, `concurrency` in flight. Returns their identities and the CA certificate.
 * `keys`: keys and CSRs made beforehand (one per agent), so the clock counts the requests only;
 * `attempts`: tries per agent before it fails the run (1: any refusal does).
 */
export async function enroll(
  url,
  joinToken,
  first,
  count,
  { concurrency = 16, keys, attempts = 3, prefix = 'bench-agent' } = {},
) {
  const out = new Array(count);
  const latencies = [];
  let next = 0;
  let retries = 0;
  let caPem;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) {
        const i = next++;
        const name = `${prefix}-${first + i}`;
        const { keyPem, csrPem } = keys?.[i] ?? (await newKeyAndCsr(name));
        for (let attempt = 1; ; attempt++) {
          const t0 = performance.now();
          const res = await json(`${url}/api/v1/orchestrator/workers/enroll`, {
            method: 'POST',
            body: {
              token: joinToken,
              csr: csrPem,
              hostname: `${name}.bench.local`,
              address: '127.0.0.1',
              os: 'linux',
              arch: 'x64',
              version: 'bench',
              driver: 'process',
              name,
            },
          }).catch((err) => ({ status: 0, body: String(err) }));
          latencies.push(performance.now() - t0);
          if (res.status === 201 || res.status === 200) {
            if (typeof res.body.certificate !== 'string') throw new Error('enrolled without a certificate');
            out[i] = { id: res.body.worker_id, keyPem, certPem: res.body.certificate };
            caPem ??= res.body.ca_certificate;
            break;
          }
          if (attempt >= attempts)
            throw new Error(`enroll ${name}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
          retries++;
          await sleep(500);
        }
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return {
    identities: out,
    caPem,
    seconds: (performance.now() - started) / 1000,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    retries,
  };
}

// ---- a forked helper process ----

/**
 * A forked script driven over IPC: `request(message, reply)` sends `message` and resolves with the
 * next message of type `reply` (or rejects on `{type:'error'}`). Requests are sequential: at most
 * one answer is awaited at a time.
 */
export class IpcChild {
  constructor(script, { args = [], execArgv = [] } = {}) {
    this.child = fork(script, args, { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.waiter = undefined;
    this.child.on('message', (msg) => {
      const waiter = this.waiter;
      if (!waiter || (msg.type !== 'error' && msg.type !== waiter.reply)) return;
      this.waiter = undefined;
      if (msg.type === 'error') waiter.reject(new Error(`load process: ${msg.message}`));
      else waiter.resolve(msg);
    });
    this.child.on('exit', (code) => {
      this.waiter?.reject(new Error(`load process exited ${code}`));
      this.waiter = undefined;
    });
  }

  get pid() {
    return this.child.pid;
  }

  request(message, reply) {
    return new Promise((resolve, reject) => {
      this.waiter = { reply, resolve, reject };
      this.child.send(message);
    });
  }

  async stop() {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    await this.request({ type: 'stop' }, 'stopped').catch(() => {});
    await Promise.race([exited, sleep(10_000)]);
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}
