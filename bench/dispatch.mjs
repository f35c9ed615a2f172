// End-to-end job dispatch: from the deploy API call to the agent holding the job. A service process
// (dist/main.js) on PostgreSQL, then on the embedded database; 100 enrolled agents with real
// certificates over real mTLS in a forked process (bench/sim-agents.mjs), each
// answering a `job` at once with `accepted` and then `succeeded`; C closed-loop API clients
// (keep-alive) deploying a pool of stacks, one deploy per stack per run, so every deploy is on a
// stack with no unfinished job (the previous run's jobs are verified succeeded before the next).
//
// Per job: t0 just before the deploy request is written, t1 when the agent receives the `job`
// command (it sends `accepted` in the same tick): "dispatch" is t1 − t0. Both are
// process.hrtime (CLOCK_MONOTONIC, one clock for every process on the machine). The job's own
// timestamps (created_at, dispatched_at, started_at, finished_at; the service's wall clock, the
// same machine's) split t1 − t0 into its legs. A probe preloaded into the service counts and times
// every SQL statement by kind (the pg client's query, from call to answer) and the pool waits.
import { Agent as HttpAgent } from 'node:http';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { summarise } from './cpuprofile-top.mjs';
import { ADMIN_URL, MAIN, pgAdmin, pgDatabaseUrl, spawnUntilReady, table } from './lib.mjs';
import {
  adminToken,
  CLK_TCK,
  enroll,
  IpcChild,
  json,
  machineBusyTicks,
  percentile,
  processTicks,
  rssMiB,
  serviceEnv,
  sleep,
} from './lib-agents.mjs';
import {
  AGENT_CAPACITY,
  API,
  call,
  createStacks,
  deployAll,
  jobsAtAgents,
  now,
  succeededJobs,
  waitForHealthy,
} from './lib-jobs.mjs';

const env = process.env;
const AGENTS = Number(env.BENCH_DISPATCH_AGENTS ?? 100);
/** Stacks in the pool; every run deploys each once. */
const STACKS = Number(env.BENCH_DISPATCH_STACKS ?? 2000);
/** Parallel API clients of the redeploy runs. */
const CONCURRENCY = (env.BENCH_DISPATCH_CONCURRENCY ?? '8,32,128')
  .split(',')
  .map((s) => Number(s.trim()))
  .filter((n) => n > 0);
/** Parallel API clients of the first run, which places every stack. */
const PLACEMENT_CONCURRENCY = Number(env.BENCH_DISPATCH_PLACEMENT_CONCURRENCY ?? 32);
const DATABASES = (env.BENCH_DISPATCH_DATABASES ?? 'postgres,embedded').split(',').map((s) => s.trim());
/** Runs per concurrency after the placement run. */
const REPEAT = Number(env.BENCH_DISPATCH_REPEAT ?? 1);
const HEARTBEAT = env.BENCH_DISPATCH_HEARTBEAT ?? '10s';
/** When set, the service's CPU is profiled during each timed run, into this directory. */
const PROFILE_DIR = env.BENCH_DISPATCH_PROFILE_DIR;
/** Extra node options for the service, e.g. `--max-semi-space-size=32`. */
const SERVICE_NODE_OPTIONS = env.BENCH_DISPATCH_SERVICE_NODE_OPTIONS ?? '';
/** More of the service's settings, as JSON (`{"MEMORY_TRIM_INTERVAL":"0"}`). */
const SERVICE_ENV = JSON.parse(env.BENCH_DISPATCH_SERVICE_ENV ?? '{}');
/** DATABASE_POOL_SIZE for PostgreSQL (the service's default, 10, when unset). */
const POOL_SIZE = env.BENCH_DISPATCH_POOL_SIZE;
/** Preload the SQL probe (statement counts and times by kind); 0 turns it off. */
const SQL_PROBE_ON = env.BENCH_DISPATCH_SQL_PROBE !== '0';
/** CPU (% of one core) of processes other than the service, its PostgreSQL backends, the agents
 * and the bench, above which a run counts as disturbed (other sessions on the machine). */
const OTHER_CPU_LIMIT = Number(env.BENCH_DISPATCH_OTHER_CPU_MAX ?? 25);
/** Before a run, wait up to this long for the other processes to go quiet. */
const QUIET_WAIT_S = Number(env.BENCH_DISPATCH_QUIET_WAIT_S ?? 300);
/** A disturbed redeploy run is measured again up to this many times (the least disturbed kept). */
const RETRIES = Number(env.BENCH_DISPATCH_RETRIES ?? 2);
const STACK_CREATE_CONCURRENCY = 16;
const AIM_JOBS_PER_S = 1000;
const AIM_P99_MS = 100;

const PROBE_MODULE = new URL('./agents-probe.mjs', import.meta.url).pathname;
const ROOT = new URL('..', import.meta.url).pathname;

const log = (...args) => console.error(`[dispatch ${new Date().toISOString().slice(11, 19)}]`, ...args);
const ms = (v) => (v === undefined || Number.isNaN(v) ? '-' : v < 10 ? v.toFixed(1) : v.toFixed(0));
const pct = (v) => v.toFixed(0);
const sorted = (values) => values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);

// ==== the SQL probe, preloaded into the service ====

/**
 * Written to a temporary file and preloaded with --import: wraps pg's Client#query and Pool#connect
 * to count and time statements by kind (the text with literals, parameters and lists folded) and
 * waits for a pooled connection. Every 500 ms the running totals are written to BENCH_SQL_FILE.
 */
const SQL_PROBE = `
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
const require = createRequire(${JSON.stringify(join(ROOT, 'package.json'))});
const pg = require('pg');
const file = process.env.BENCH_SQL_FILE;
const stats = {};
const pool = { waits: 0, waitMs: 0 };
const kinds = new Map();
const kind = (text) => {
  let k = kinds.get(text);
  if (k === undefined) {
    k = fold(text);
    if (kinds.size < 5000) kinds.set(text, k);
  }
  return k;
};
const fold = (text) =>
  text
    .replace(/\\s+/g, ' ')
    .replace(/\\$\\d+/g, '?')
    .replace(/'[^']*'/g, "'?'")
    .replace(/\\b\\d+\\b/g, 'N')
    .trim()
    .slice(0, 160);
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (config, values, callback) {
  const text = typeof config === 'string' ? config : config && config.text;
  const result = query.apply(this, arguments);
  if (!text || !result || typeof result.then !== 'function') return result;
  const k = kind(text);
  const t0 = performance.now();
  const done = () => {
    const s = (stats[k] ??= { n: 0, ms: 0 });
    s.n++;
    s.ms += performance.now() - t0;
  };
  result.then(done, done);
  return result;
};
const connect = pg.Pool.prototype.connect;
pg.Pool.prototype.connect = function (callback) {
  const t0 = performance.now();
  const done = () => {
    pool.waits++;
    pool.waitMs += performance.now() - t0;
  };
  if (typeof callback === 'function')
    return connect.call(this, function () {
      done();
      return callback.apply(this, arguments);
    });
  const result = connect.apply(this, arguments);
  if (result && typeof result.then === 'function') result.then(done, done);
  return result;
};
if (file) setInterval(() => writeFileSync(file, JSON.stringify({ t: Date.now(), stats, pool })), 500).unref();
`;

// ==== sampling ====

class Sampler {
  constructor(servicePid, agentsPid, database) {
    this.servicePid = servicePid;
    this.agentsPid = agentsPid;
    this.database = database;
    this.pg = database ? new pg.Client({ connectionString: ADMIN_URL }) : undefined;
  }

  async start() {
    await this.pg?.connect();
  }

  async close() {
    await this.pg?.end();
  }

  async sample() {
    let pgTicks = new Map();
    let db;
    if (this.pg) {
      const { rows } = await this.pg.query('SELECT pid FROM pg_stat_activity WHERE datname = $1', [
        this.database,
      ]);
      pgTicks = new Map(rows.map((r) => [r.pid, processTicks(r.pid)]));
      const stat = await this.pg.query(
        'SELECT xact_commit, tup_inserted, tup_updated, tup_returned, tup_fetched FROM pg_stat_database WHERE datname = $1',
        [this.database],
      );
      db = Object.fromEntries(Object.entries(stat.rows[0] ?? {}).map(([k, v]) => [k, Number(v)]));
    }
    const own = process.cpuUsage();
    return {
      at: now(),
      service: processTicks(this.servicePid),
      agents: processTicks(this.agentsPid),
      pg: pgTicks,
      db,
      own: ((own.user + own.system) / 1e6) * CLK_TCK,
      machine: machineBusyTicks(),
    };
  }

  /** CPU use between two samples, in % of one core. */
  static delta(a, b) {
    const seconds = (b.at - a.at) / 1000;
    const toPct = (ticks) => (ticks / CLK_TCK / seconds) * 100;
    let pgTicks = 0;
    for (const [pid, ticks] of b.pg) pgTicks += ticks - (a.pg.get(pid) ?? ticks);
    const service = b.service - a.service;
    const agents = b.agents - a.agents;
    const own = b.own - a.own;
    const machine = b.machine - a.machine;
    return {
      seconds,
      service: toPct(service),
      agents: toPct(agents),
      pg: toPct(pgTicks),
      own: toPct(own),
      other: Math.max(0, toPct(machine - service - agents - pgTicks - own)),
      machine: toPct(machine),
    };
  }
}

async function drain(sampler, timeoutMs = 60_000) {
  const deadline = now() + timeoutMs;
  let a = await sampler.sample();
  for (;;) {
    await sleep(500);
    const b = await sampler.sample();
    if (Sampler.delta(a, b).service < 15 || now() > deadline) return a;
    a = b;
  }
}

async function waitForQuiet(sampler) {
  const deadline = now() + QUIET_WAIT_S * 1000;
  for (;;) {
    const a = await sampler.sample();
    await sleep(2000);
    const other = Sampler.delta(a, await sampler.sample()).other;
    if (other <= OTHER_CPU_LIMIT || now() > deadline) return other;
    log(`waiting for other processes to go quiet (${pct(other)} % of a core)`);
  }
}

function readJson(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

/** Statement counts and times between two SQL probe snapshots, per job. */
function sqlDelta(before, after, jobs) {
  if (!before || !after) return undefined;
  const rows = [];
  let n = 0;
  let total = 0;
  for (const [k, s] of Object.entries(after.stats)) {
    const b = before.stats[k] ?? { n: 0, ms: 0 };
    const dn = s.n - b.n;
    if (dn <= 0) continue;
    const dms = s.ms - b.ms;
    n += dn;
    total += dms;
    rows.push({ kind: k, n: dn, perJob: dn / jobs, ms: dms, meanMs: dms / dn });
  }
  rows.sort((a, b) => b.ms - a.ms);
  return {
    rows,
    perJob: n / jobs,
    msPerJob: total / jobs,
    meanMs: total / n,
    poolWaits: after.pool.waits - before.pool.waits,
    poolWaitMs: after.pool.waitMs - before.pool.waitMs,
  };
}

function probeLines(file, from, to) {
  if (!file || !existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((l) => l.t > from + 1000 && l.t <= to);
}

/** Profiles the current service has written (the probe numbers them from 1 in each process). */
let profiles = 0;
async function toggleProfile(pid, stopLabel) {
  if (!PROFILE_DIR) return undefined;
  process.kill(pid, 'SIGUSR2');
  if (!stopLabel) return undefined;
  const file = join(PROFILE_DIR, `${++profiles}.cpuprofile`);
  while (!existsSync(file)) await sleep(100);
  await sleep(500);
  const named = join(PROFILE_DIR, `service-${stopLabel}.cpuprofile`);
  renameSync(file, named);
  return named;
}

/** Layers of the service, by the packages and files of a stack frame. */
const LAYERS = [
  [
    'SQL: pg driver, protocol, socket writes',
    /node_modules\/(pg|pg-protocol|pg-pool|pg-types|postgres-date)\//,
  ],
  ['SQL: TypeORM (query building, results to entities)', /node_modules\/typeorm\//],
  ['embedded database (PGlite)', /node_modules\/@electric-sql\//],
  ['gRPC: agent streams', /node_modules\/@grpc\//],
  [
    'auth: access token verification, passport',
    /node_modules\/(jsonwebtoken|jws|jwa|passport[^/]*|@nestjs\/passport|jose)\/|\/dist\/auth\//,
  ],
  ['logging: pino, pino-http', /node_modules\/(pino[^/]*|@pinojs\/[^/]+|nestjs-pino)\//],
  ['metrics: prom-client', /node_modules\/prom-client\//],
  [
    'HTTP: node:http, express, router, Nest pipeline',
    /node_modules\/(express|router|@nestjs\/[^/]+|body-parser|path-to-regexp|rxjs|class-validator|class-transformer|finalhandler|on-finished)\/|node:_http/,
  ],
  ['the service (dist/)', /\/dist\//],
];

/**
 * A CPU profile of the service: self time by package and function (bench/cpuprofile-top.mjs), and
 * by layer: each sample goes to the deepest frame of its stack that belongs to a layer (so a socket
 * write pg makes counts as SQL, TypeORM's work inside an HTTP request as TypeORM).
 */
function profileSummary(file) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map();
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i + 1] ?? 0;
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + dt);
  }
  const total = profile.endTime - profile.startTime;
  const layers = new Map();
  for (const [id, us] of self) {
    const name = byId.get(id).callFrame.functionName;
    let layer = name === '(idle)' || name === '(garbage collector)' ? name : undefined;
    for (let cur = id; !layer && cur !== undefined; cur = parent.get(cur)) {
      const url = byId.get(cur).callFrame.url;
      if (url) layer = LAYERS.find(([, re]) => re.test(url))?.[0];
    }
    layer ??= 'other: Node internals, microtasks, (program)';
    layers.set(layer, (layers.get(layer) ?? 0) + us);
  }
  return {
    file,
    ...summarise(profile, 25),
    layers: [...layers]
      .sort((a, b) => b[1] - a[1])
      .map(([k, us]) => [k, ((us / total) * 100).toFixed(1), (us / 1000).toFixed(0)]),
  };
}

// ==== one timed run ====

async function timedRun(ctx, { label, concurrency }) {
  const { url, token, stacks, agents, sampler } = ctx;
  const http = new HttpAgent({ keepAlive: true, maxSockets: concurrency });
  // Warm the connections (and the route), outside the window.
  await Promise.all(
    Array.from({ length: concurrency }, () => call(http, `${url}${API}/jobs?limit=1`, { token })),
  );
  const agentsBefore = await agents.request({ type: 'collect' }, 'collected');
  const wallOffset = Date.now() - now();
  await toggleProfile(sampler.servicePid);
  const sqlBefore = readJson(ctx.sqlFile);
  const before = await sampler.sample();
  const startedWall = Date.now();
  const load1 = loadavg()[0];
  const records = await deployAll(http, [url], token, stacks, concurrency);
  const httpEnd = now();
  // Every accepted deploy's job must reach an agent.
  const accepted = records.filter((r) => r.status === 202);
  const { t1, totals: agentTotals } = await jobsAtAgents(
    agents,
    accepted.map((r) => r.id),
  );
  const windowEnd = Math.max(httpEnd, ...accepted.map((r) => t1.get(r.id) ?? 0));
  const after = await sampler.sample();
  // The rest of the path (confirmations, results, the stacks' bookkeeping) runs on: its CPU counts
  // per job too. Drained: the service used under 15 % of a core over the last 500 ms.
  const drained = await drain(sampler);
  const profile = await toggleProfile(
    sampler.servicePid,
    `${ctx.database.key}-${label.replace(/\W+/g, '-')}-c${concurrency}`,
  );
  http.destroy();
  // The whole path: each job succeeded, as the API lists it.
  const jobs = await succeededJobs(
    url,
    token,
    accepted.map((r) => r.id),
    startedWall - 1000,
  );
  await sleep(1200);
  const sqlAfter = readJson(ctx.sqlFile);
  const after2 = await sampler.sample();

  const first = Math.min(...records.map((r) => r.t0));
  const dispatched = accepted.filter((r) => t1.has(r.id));
  const dispatch = sorted(dispatched.map((r) => t1.get(r.id) - r.t0));
  const httpMs = sorted(records.map((r) => r.tResp - r.t0));
  const seconds = (windowEnd - first) / 1000;
  const legs = { toCreated: [], queued: [], toAgent: [], toRunning: [], apiRunning: [], afterResponse: [] };
  for (const r of dispatched) {
    const job = jobs.get(r.id);
    const t1Wall = t1.get(r.id) + wallOffset;
    const t0Wall = r.t0 + wallOffset;
    // HTTP answered before or after the agent had the job.
    legs.afterResponse.push(r.tResp < t1.get(r.id) ? 1 : 0);
    if (!job) continue;
    const created = Date.parse(job.created_at);
    const disp = Date.parse(job.dispatched_at);
    const started = Date.parse(job.started_at);
    legs.toCreated.push(created - t0Wall);
    legs.queued.push(disp - created);
    legs.toAgent.push(t1Wall - disp);
    legs.toRunning.push(started - t1Wall);
    legs.apiRunning.push(started - t0Wall);
  }
  const errors = {};
  for (const r of records.filter((x) => x.status !== 202)) {
    const k = `${r.status} ${r.error ?? ''}`.slice(0, 120);
    errors[k] = (errors[k] ?? 0) + 1;
  }
  const cpu = Sampler.delta(before, after);
  // CPU time per job over the whole path, up to the drained sample (ms of one core).
  const whole = Sampler.delta(before, drained);
  const perJob = (p) => ((p / 100) * whole.seconds * 1000) / Math.max(1, accepted.length);
  cpu.serviceMsPerJob = perJob(whole.service);
  cpu.pgMsPerJob = perJob(whole.pg);
  cpu.agentsMsPerJob = perJob(whole.agents);
  const db =
    before.db && after2.db
      ? Object.fromEntries(
          Object.keys(after2.db).map((k) => [
            k,
            (after2.db[k] - before.db[k]) / Math.max(1, accepted.length),
          ]),
        )
      : undefined;
  const probe = probeLines(ctx.probeFile, startedWall, startedWall + seconds * 1000);
  const gc = probe.flatMap((l) => l.gc).map((g) => g[1]);
  const result = {
    database: ctx.database.label,
    label,
    concurrency,
    requests: records.length,
    accepted: accepted.length,
    errors,
    agentReceived: dispatched.length,
    duplicates: agentTotals.duplicates - agentsBefore.duplicates,
    disconnects: agentTotals.disconnects - agentsBefore.disconnects,
    succeeded: jobs.size,
    seconds,
    jobsPerS: dispatched.length / seconds,
    httpPerS: records.length / ((httpEnd - first) / 1000),
    p50: percentile(dispatch, 0.5),
    p90: percentile(dispatch, 0.9),
    p99: percentile(dispatch, 0.99),
    max: dispatch.at(-1),
    httpP50: percentile(httpMs, 0.5),
    httpP99: percentile(httpMs, 0.99),
    legs: Object.fromEntries(
      Object.entries(legs).map(([k, v]) => {
        const s = sorted(v);
        return [
          k,
          {
            p50: percentile(s, 0.5),
            p99: percentile(s, 0.99),
            mean: s.reduce((a, b) => a + b, 0) / (s.length || 1),
          },
        ];
      }),
    ),
    cpu,
    rss: rssMiB(sampler.servicePid),
    load1: Math.max(load1, loadavg()[0]),
    loopMax: probe.length ? Math.max(...probe.map((l) => l.max)) : undefined,
    loopP99: probe.length ? Math.max(...probe.map((l) => l.p99)) : undefined,
    gcMsPerS: gc.reduce((a, b) => a + b, 0) / seconds,
    gcMax: gc.length ? Math.max(...gc) : undefined,
    sql: sqlDelta(sqlBefore, sqlAfter, accepted.length),
    db,
    profile: profile ? profileSummary(profile) : undefined,
  };
  log(
    `${ctx.database.label} ${label} C=${concurrency}: ${result.accepted}/${result.requests} accepted, ` +
      `${result.agentReceived} at agents, ${result.succeeded} succeeded; ${result.jobsPerS.toFixed(0)} jobs/s; ` +
      `dispatch p50 ${ms(result.p50)} p90 ${ms(result.p90)} p99 ${ms(result.p99)} max ${ms(result.max)} ms; ` +
      `HTTP p50 ${ms(result.httpP50)} p99 ${ms(result.httpP99)} ms; service ${pct(cpu.service)} % pg ${pct(cpu.pg)} % ` +
      `agents ${pct(cpu.agents)} % bench ${pct(cpu.own)} % other ${pct(cpu.other)} %` +
      (Object.keys(errors).length ? `; errors ${JSON.stringify(errors)}` : ''),
  );
  return result;
}

// ==== one database ====

async function benchDatabase(database) {
  const dataDir = mkdtempSync(join(tmpdir(), 'so-bench-dispatch-'));
  const probeFile = join(dataDir, 'bench-probe.jsonl');
  const sqlFile = join(dataDir, 'bench-sql.json');
  const sqlProbe = join(dataDir, 'bench-sql-probe.mjs');
  writeFileSync(sqlProbe, SQL_PROBE);
  const dbName = `bench_dispatch_${process.pid}`;
  profiles = 0;
  let svc;
  let agents;
  let sampler;
  const results = [];
  const setup = {};
  if (database.key === 'postgres') await pgAdmin(`CREATE DATABASE ${dbName}`);
  try {
    svc = await spawnUntilReady(
      MAIN,
      {
        ...serviceEnv({
          databaseUrl: database.key === 'postgres' ? pgDatabaseUrl(dbName) : undefined,
          dataDir,
          heartbeat: HEARTBEAT,
        }),
        ...(database.key === 'postgres' && POOL_SIZE ? { DATABASE_POOL_SIZE: POOL_SIZE } : {}),
        ...SERVICE_ENV,
        BENCH_PROBE_FILE: probeFile,
        BENCH_SQL_FILE: sqlFile,
        ...(PROFILE_DIR ? { BENCH_PROBE_PROFILE_DIR: PROFILE_DIR } : {}),
        NODE_OPTIONS: [
          `--import=${PROBE_MODULE}`,
          SQL_PROBE_ON ? `--import=${sqlProbe}` : '',
          SERVICE_NODE_OPTIONS,
        ]
          .filter(Boolean)
          .join(' '),
      },
      '/health/ready',
      120_000,
    );
    const token = await adminToken(svc.url);
    const info = await json(`${svc.url}${API}/info`, { token });
    if (info.status !== 200) throw new Error(`info: ${info.status}`);
    const jt = await json(`${svc.url}${API}/join-tokens`, {
      method: 'POST',
      token,
      body: { pre_approved: true, ttl: '24h' },
    });
    if (jt.status !== 201) throw new Error(`join token: ${jt.status} ${JSON.stringify(jt.body)}`);
    log(`${database.label}: service pid ${svc.child.pid}; enrolling ${AGENTS} agents`);
    const e = await enroll(svc.url, jt.body.token, 0, AGENTS);
    setup.enrollSeconds = e.seconds;
    agents = new IpcChild(new URL('./sim-agents.mjs', import.meta.url).pathname, {
      execArgv: ['--no-deprecation'],
    });
    await agents.request(
      { type: 'init', endpoints: [info.body.agent_endpoint], caPem: e.caPem, capacity: AGENT_CAPACITY },
      'ready',
    );
    const c = await agents.request({ type: 'connect', agents: e.identities, concurrency: 20 }, 'connected');
    if (c.failed > 0) throw new Error(`${c.failed} agents failed to connect: ${JSON.stringify(c.errors)}`);
    await waitForHealthy(svc.url, token, AGENTS);
    log(`${database.label}: ${AGENTS} agents connected and healthy; creating ${STACKS} stacks`);
    const s = await createStacks([svc.url], token, STACKS, STACK_CREATE_CONCURRENCY);
    setup.stackSeconds = s.seconds;
    log(
      `${database.label}: ${STACKS} stacks in ${s.seconds.toFixed(1)} s (${(STACKS / s.seconds).toFixed(0)}/s)`,
    );
    sampler = new Sampler(svc.child.pid, agents.pid, database.key === 'postgres' ? dbName : undefined);
    await sampler.start();
    const ctx = { url: svc.url, token, stacks: s.ids, agents, sampler, probeFile, sqlFile, database };
    const runs = [{ label: 'first deploy (placement)', concurrency: PLACEMENT_CONCURRENCY }];
    for (const concurrency of CONCURRENCY)
      for (let i = 0; i < REPEAT; i++) runs.push({ label: 'redeploy', concurrency });
    for (const run of runs) {
      let kept;
      for (let attempt = 1; ; attempt++) {
        await waitForQuiet(sampler);
        // A fresh token per run: the window never straddles an expiry.
        ctx.token = await adminToken(svc.url);
        const r = await timedRun(ctx, run);
        r.attempts = attempt;
        r.disturbed = r.cpu.other > OTHER_CPU_LIMIT;
        if (!kept || r.cpu.other < kept.cpu.other) kept = r;
        await sleep(2000);
        // The first deploy places the stacks: it cannot be repeated on the same pool.
        if (!r.disturbed || attempt > RETRIES || run.label !== 'redeploy') break;
        log(`others used ${pct(r.cpu.other)} % of a core: measuring again`);
      }
      results.push(kept);
    }
  } finally {
    await agents?.stop();
    if (svc) {
      const code = await svc.stop();
      if (code !== 0) log(`service exited ${code} on SIGTERM`);
    }
    await sampler?.close().catch(() => {});
    if (database.key === 'postgres') await pgAdmin(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    rmSync(dataDir, { recursive: true, force: true });
  }
  return { results, setup };
}

// ==== report ====

function report(all) {
  const out = [];
  for (const { database, results, setup } of all) {
    out.push(
      table(
        `Job dispatch, ${database.label}: ${AGENTS} agents, ${STACKS} stacks, one deploy per stack per run`,
        [
          'run',
          'API clients',
          'jobs',
          'jobs/s (API call → agent)',
          'dispatch p50 / p90 / p99 / max ms',
          'HTTP deploy p50 / p99 ms',
          'API shows running p50 / p99 ms',
          'at agents / succeeded',
          'non-202',
          'service CPU %',
          'PG CPU %',
          'agents / bench CPU %',
          'others CPU %',
          'service loop max / GC ms/s',
        ],
        results.map((r) => [
          r.label,
          r.concurrency,
          r.requests,
          r.jobsPerS.toFixed(0),
          `${ms(r.p50)} / ${ms(r.p90)} / ${ms(r.p99)} / ${ms(r.max)}`,
          `${ms(r.httpP50)} / ${ms(r.httpP99)}`,
          `${ms(r.legs.apiRunning.p50)} / ${ms(r.legs.apiRunning.p99)}`,
          `${r.agentReceived} / ${r.succeeded}`,
          r.requests - r.accepted,
          pct(r.cpu.service),
          database.key === 'postgres' ? pct(r.cpu.pg) : 'in service',
          `${pct(r.cpu.agents)} / ${pct(r.cpu.own)}`,
          `${pct(r.cpu.other)}${r.attempts > 1 ? ` (run ${r.attempts})` : ''}${r.disturbed ? ', disturbed' : ''}`,
          `${ms(r.loopMax)} / ${r.gcMsPerS.toFixed(1)}`,
        ]),
      ),
    );
    out.push(
      table(
        `Job dispatch, ${database.label}: where t1 − t0 goes (job timestamps, ms, p50 / p99)`,
        [
          'run',
          'API clients',
          't0 → created_at (HTTP, auth, reads)',
          'created_at → dispatched_at (insert, queue, claim)',
          'dispatched_at → agent (commit, send loop, gRPC)',
          'agent → started_at (accept batch)',
          'HTTP answered before the agent had the job',
          'SQL statements per job (mean ms each)',
          'pool waits per job (mean ms)',
          'CPU ms per job: service / PG / agents',
        ],
        results.map((r) => [
          r.label,
          r.concurrency,
          `${ms(r.legs.toCreated.p50)} / ${ms(r.legs.toCreated.p99)}`,
          `${ms(r.legs.queued.p50)} / ${ms(r.legs.queued.p99)}`,
          `${ms(r.legs.toAgent.p50)} / ${ms(r.legs.toAgent.p99)}`,
          `${ms(r.legs.toRunning.p50)} / ${ms(r.legs.toRunning.p99)}`,
          `${(r.legs.afterResponse.mean * 100).toFixed(0)} %`,
          r.sql ? `${r.sql.perJob.toFixed(1)} (${ms(r.sql.meanMs)})` : '-',
          r.sql
            ? `${(r.sql.poolWaits / r.accepted).toFixed(1)} (${ms(r.sql.poolWaitMs / Math.max(1, r.sql.poolWaits))})`
            : '-',
          `${r.cpu.serviceMsPerJob.toFixed(2)} / ${database.key === 'postgres' ? r.cpu.pgMsPerJob.toFixed(2) : '-'} / ${r.cpu.agentsMsPerJob.toFixed(2)}`,
        ]),
      ),
    );
    out.push(
      `Setup: ${AGENTS} agents enrolled in ${setup.enrollSeconds?.toFixed(1)} s; ${STACKS} stacks created in ` +
        `${setup.stackSeconds?.toFixed(1)} s (${(STACKS / setup.stackSeconds).toFixed(0)}/s, ${STACK_CREATE_CONCURRENCY} in flight).\n`,
    );
    for (const r of results) {
      if (Object.keys(r.errors).length)
        out.push(`${r.label} C=${r.concurrency}: errors ${JSON.stringify(r.errors)}\n`);
      // Sent twice (a requeue after a missed confirmation), or agents that lost their stream.
      if (r.duplicates > 0 || r.disconnects > 0)
        out.push(
          `${r.label} C=${r.concurrency}: ${r.duplicates} jobs sent again, ${r.disconnects} agent streams lost\n`,
        );
    }
  }
  const best = all.flatMap((d) => d.results).filter((r) => r.label === 'redeploy');
  out.push(
    [
      `Aim: ${AIM_JOBS_PER_S} jobs/s with p99 < ${AIM_P99_MS} ms. ` +
        best
          .map(
            (r) =>
              `${r.database} C=${r.concurrency}: ${r.jobsPerS.toFixed(0)} jobs/s (${r.jobsPerS >= AIM_JOBS_PER_S ? 'met' : 'missed'}), p99 ${ms(r.p99)} ms (${r.p99 < AIM_P99_MS ? 'met' : 'missed'})`,
          )
          .join('; ') +
        '.',
      `dispatch = t1 − t0: t0 just before the deploy request is written, t1 when the agent receives the job (it answers accepted at once).`,
      `"API shows running" = the job's started_at (the service's clock) − t0. Service LOG_LEVEL=warn, HEARTBEAT_INTERVAL=${HEARTBEAT}, RATE_LIMIT_REQUESTS=0;`,
      `PostgreSQL pool ${POOL_SIZE ?? '10 (default)'}, embedded pool 1. CPU in % of one core over the window.`,
      '',
    ].join('\n'),
  );
  for (const r of all.flatMap((d) => d.results)) {
    if (!r.sql) continue;
    out.push(
      table(
        `SQL by kind, ${r.database}, ${r.label} C=${r.concurrency} (per accepted job; from call to answer, in the service)`,
        ['statement', 'per job', 'mean ms', 'ms per job'],
        r.sql.rows
          .slice(0, 14)
          .map((x) => [
            x.kind.replace(/\|/g, '\\|'),
            x.perJob.toFixed(2),
            ms(x.meanMs),
            (x.ms / r.accepted).toFixed(2),
          ]),
      ),
    );
    if (r.db)
      out.push(
        `PostgreSQL per job: ${r.db.xact_commit.toFixed(1)} commits, ${r.db.tup_inserted.toFixed(1)} rows inserted, ` +
          `${r.db.tup_updated.toFixed(1)} updated, ${r.db.tup_returned.toFixed(0)} returned, ${r.db.tup_fetched.toFixed(0)} fetched.\n`,
      );
    if (r.profile)
      out.push(
        table(
          `Service CPU profile, ${r.database}, ${r.label} C=${r.concurrency}: by layer (${r.profile.seconds.toFixed(1)} s, ${r.accepted} jobs)`,
          ['layer', '% of wall time', 'ms', 'ms per job'],
          r.profile.layers.map(([k, p, t]) => [k, p, t, (Number(t) / r.accepted).toFixed(3)]),
        ),
        table(
          `Service CPU profile, ${r.database}, ${r.label} C=${r.concurrency}: self time by package`,
          ['package', '% of wall time', 'ms'],
          r.profile.packages.slice(0, 12),
        ),
        table(
          `Service CPU profile, ${r.database}, ${r.label} C=${r.concurrency}: self time by function`,
          ['function', '% of wall time', 'ms'],
          r.profile.functions.slice(0, 25),
        ),
      );
  }
  return out.join('\n');
}

export async function dispatchBench() {
  if (PROFILE_DIR) mkdirSync(PROFILE_DIR, { recursive: true });
  const all = [];
  for (const key of DATABASES) {
    const database = {
      key,
      label: key === 'postgres' ? 'PostgreSQL' : 'embedded (PGlite)',
    };
    const { results, setup } = await benchDatabase(database);
    all.push({ database, results, setup });
  }
  return report(all);
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  console.log(await dispatchBench());
}
