// Reconnect storm (issue 18, item 3): a full fleet of simulated agents (bench/sim-agents.mjs: real
// identities, one mTLS connection each, the real agent's backoff and its immediate redial when the
// service says goodbye) connected to one service on PostgreSQL; then the service is restarted
// (SIGTERM, started again with the same database, DATA_DIR, ENCRYPTION_KEY and agent port) and the
// bench measures, from the SIGTERM and from the new process being ready, until every agent has an
// acknowledged heartbeat again: connects/s, hello→welcome, attempts per agent, the CPU of the
// service, the agents, PostgreSQL and everything else, TLS sessions resumed, and whether any worker
// was seen other than healthy (the database, every 250 ms) or counted a transition to unreachable
// (`stack_worker_transitions_total` of both processes). No thresholds: it reports. The agents'
// client is `BENCH_STORM_CLIENT`: `http2` (default, bench/sim-http2.mjs, light enough that the
// agents are less of the limit) or `grpc` (grpc-js, as the real agent); their CPU per 1,000 agents
// at the first connect and in steady state is reported with the table.
// Run: `bash -c 'ulimit -n 20000; node bench/main.mjs storm'` (after `npm run build`).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, MAIN, pgAdmin, pgDatabaseUrl, spawnUntilReady, table } from './lib.mjs';
import {
  adminToken,
  CLK_TCK,
  enroll,
  IpcChild,
  json,
  machineBusyTicks,
  ownTicks,
  percentile,
  pgBackendTicks,
  pgTicksBetween,
  processTicks,
  serviceEnv,
  sleep,
} from './lib-agents.mjs';
import { AGENT_CAPACITY, API, now } from './lib-jobs.mjs';
import { AGENT_WELCOME_TIMEOUT_MS } from '../dist/contracts/agent-protocol/reconnect.js';

const env = process.env;
const AGENTS = Number(env.BENCH_STORM_AGENTS ?? 10_000);
const HEARTBEAT = env.BENCH_STORM_HEARTBEAT ?? '10s';
const HEARTBEAT_MS = Number.parseFloat(HEARTBEAT) * (HEARTBEAT.endsWith('ms') ? 1 : 1000);
/** Processes the simulated agents are spread over. */
const PROCS = Math.max(1, Number(env.BENCH_STORM_PROCS ?? 1));
/** Restarts measured one after the other under the same fleet. */
const RESTARTS = Math.max(1, Number(env.BENCH_STORM_RESTARTS ?? 2));
/** A restart is given up on when not every agent reports again within this. */
const TIMEOUT_S = Number(env.BENCH_STORM_TIMEOUT_S ?? 180);
/** What the rows are labelled with (e.g. the change measured). */
const LABEL = env.BENCH_STORM_LABEL ?? 'current';
/**
 * `0`: the agents do not offer their last TLS session (as agents before resumption); `full`: they
 * keep each session whole, the service's certificate in it, which each dial decodes (as agents
 * before session 24: src/agent/tls-session.ts, `withoutPeerCertificate`).
 */
const RESUME = env.BENCH_STORM_RESUME !== '0';
const FULL_SESSIONS = env.BENCH_STORM_RESUME === 'full';
const CONNECT_CONCURRENCY = Number(env.BENCH_STORM_CONNECT_CONCURRENCY ?? 50);
/** The simulated agents' gRPC client: `http2` (bench/sim-http2.mjs) or `grpc` (grpc-js). */
const CLIENT = env.BENCH_STORM_CLIENT ?? 'http2';
/** Extra environment for the service, e.g. `AGENT_ADMISSION=64` (comma-separated KEY=VALUE). */
const SERVICE_ENV = Object.fromEntries(
  (env.BENCH_STORM_SERVICE_ENV ?? '')
    .split(',')
    .filter((kv) => kv.includes('='))
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);

/**
 * When set, the restarted service (at its exit) and the agents (from each restart to its last ack) are
 * CPU-profiled into this directory.
 */
const PROFILE_DIR = env.BENCH_STORM_PROFILE_DIR;

const log = (...args) => console.error(`[storm ${new Date().toISOString().slice(11, 19)}]`, ...args);
const fmt = (v, digits = 1) => (v === undefined || !Number.isFinite(v) ? '-' : v.toFixed(digits));
const ms = (v) => (v === undefined || !Number.isFinite(v) ? '-' : v < 10 ? v.toFixed(1) : v.toFixed(0));

/**
 * The kernel's counters of connections dropped because a listener's accept queue was full, and of
 * SYNs sent again (a dropped connection's client retries after 1 s, then 2, 4, ...): for the
 * network namespace the bench runs in (/proc/net/netstat), which the service and the agents share;
 * nothing else there listens under load while the bench runs.
 */
function tcpDrops() {
  const lines = readFileSync('/proc/net/netstat', 'utf8').split('\n');
  const i = lines.findIndex((l) => l.startsWith('TcpExt:'));
  const names = lines[i].split(/\s+/);
  const values = lines[i + 1].split(/\s+/).map(Number);
  const get = (name) => values[names.indexOf(name)] ?? NaN;
  return { overflows: get('ListenOverflows'), synRetrans: get('TCPSynRetrans') };
}

/** Transitions to unreachable a service process has counted since it started. */
function unreachableTransitions(text) {
  let total = 0;
  for (const m of text.matchAll(/^stack_worker_transitions_total\{([^}]*)\} (\S+)$/gm))
    if (/to="unreachable"/.test(m[1])) total += Number(m[2]);
  return total;
}

/**
 * A quantile of a Prometheus histogram's cumulative buckets ([le, count], ascending), interpolated
 * within its bucket as `histogram_quantile` does.
 */
function bucketQuantile(buckets, q) {
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total === 0) return NaN;
  const rank = q * total;
  let [prevLe, prevCount] = [0, 0];
  for (const [le, count] of buckets) {
    if (count >= rank) {
      if (!Number.isFinite(le)) return prevLe;
      return prevLe + ((le - prevLe) * (rank - prevCount)) / Math.max(1, count - prevCount);
    }
    [prevLe, prevCount] = [le, count];
  }
  return prevLe;
}

/**
 * The service's own account of its connections since it started (`stack_agent_connect_seconds`:
 * p50 and p90 per phase, in ms; a service from before it has none) and the ones it refused.
 */
function connectPhases(text) {
  const phases = {};
  for (const m of text.matchAll(
    /^stack_agent_connect_seconds_bucket\{le="([^"]+)",phase="([^"]+)"\} (\S+)$/gm,
  )) {
    (phases[m[2]] ??= []).push([m[1] === '+Inf' ? Infinity : Number(m[1]), Number(m[3])]);
  }
  const out = {};
  for (const [phase, buckets] of Object.entries(phases)) {
    buckets.sort((a, b) => a[0] - b[0]);
    out[phase] = { p50: bucketQuantile(buckets, 0.5) * 1000, p90: bucketQuantile(buckets, 0.9) * 1000 };
  }
  let refused = 0;
  for (const m of text.matchAll(/^stack_agent_connections_refused_total\{[^}]*\} (\S+)$/gm))
    refused += Number(m[1]);
  return { phases: out, refused };
}

async function statusCounts(sql) {
  const { rows } = await sql.query('SELECT status, count(*)::int AS n FROM workers GROUP BY status');
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** Every simulated agent process, asked the same thing; the answers in order. */
const all = (sims, message, reply) => Promise.all(sims.map((s) => s.request(message, reply)));

async function cpuSample(sql, database, servicePid, sims) {
  return {
    at: now(),
    service: processTicks(servicePid),
    agents: sims.reduce((t, s) => t + processTicks(s.pid), 0),
    pg: await pgBackendTicks(sql, database),
    own: ownTicks(),
    machine: machineBusyTicks(),
  };
}

function cpuDelta(a, b) {
  const seconds = (b.at - a.at) / 1000;
  const toPct = (ticks) => (ticks / CLK_TCK / seconds) * 100;
  const ticks = {
    service: Math.max(0, b.service - a.service),
    agents: b.agents - a.agents,
    pg: pgTicksBetween(a.pg, b.pg),
    own: b.own - a.own,
  };
  const counted = Object.values(ticks).reduce((s, t) => s + t, 0);
  return {
    ...Object.fromEntries(Object.entries(ticks).map(([k, t]) => [k, toPct(t)])),
    other: Math.max(0, toPct(b.machine - a.machine - counted)),
  };
}

/** One restart under the connected fleet, measured until every agent has an acked heartbeat again. */
async function restart(ctx, round) {
  const { sims, sql, database } = ctx;
  const old = ctx.svc;
  await all(sims, { type: 'mark', profileDir: PROFILE_DIR }, 'marked');
  const load1 = loadavg()[0];
  const drops0 = tcpDrops();
  const tStop = now();
  const code = await old.stop();
  const tExited = now();
  if (code !== 0) log(`service exited ${code} on SIGTERM`);
  const svc = await spawnUntilReady(
    MAIN,
    ctx.serviceEnv,
    '/health/ready',
    120_000,
    PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [],
  );
  ctx.svc = svc;
  const tReady = now();
  const pid = svc.child.pid;
  log(
    `round ${round}: stopped in ${ms(tExited - tStop)} ms, ready again ${ms(tReady - tStop)} ms after SIGTERM`,
  );
  const cpuA = await cpuSample(sql, database, pid, sims);
  // Statuses from the database every 250 ms (what the API lists), until every agent acked again.
  const seenNotHealthy = new Map();
  let worst = 0;
  let polls = 0;
  let state;
  for (const deadline = tStop + TIMEOUT_S * 1000; ; await sleep(250)) {
    const { rows } = await sql.query("SELECT id, status FROM workers WHERE status <> 'healthy'");
    polls++;
    worst = Math.max(worst, rows.length);
    for (const r of rows) seenNotHealthy.set(r.id, r.status);
    const answers = await all(sims, { type: 'reconnects', summary: true }, 'reconnects');
    state = answers.reduce(
      (s, a) => ({
        lost: s.lost + a.lost,
        welcomed: s.welcomed + a.welcomed,
        acked: s.acked + a.acked,
        loopP99Ms: Math.max(s.loopP99Ms, a.loopP99Ms),
        loopMaxMs: Math.max(s.loopMaxMs, a.loopMaxMs),
      }),
      { lost: 0, welcomed: 0, acked: 0, loopP99Ms: 0, loopMaxMs: 0 },
    );
    if (polls % 20 === 0) {
      const errors = {};
      for (const a of answers)
        for (const [k, v] of Object.entries(a.errors)) errors[k] = (errors[k] ?? 0) + v;
      log(
        `round ${round}: ${state.welcomed} welcomed, ${state.acked} acked at ${fmt((now() - tStop) / 1000)} s; ` +
          `not healthy ${rows.length}; agents' errors so far ${JSON.stringify(errors)}`,
      );
    }
    if (state.acked >= AGENTS || now() > deadline) break;
  }
  const cpu = cpuDelta(cpuA, await cpuSample(sql, database, pid, sims));
  const drops1 = tcpDrops();
  const drops = {
    overflows: drops1.overflows - drops0.overflows,
    synRetrans: drops1.synRetrans - drops0.synRetrans,
  };
  // A flush and a sweep later: anything marked on the way is counted.
  await sleep(Math.min(3000, HEARTBEAT_MS));
  const serviceMetrics = await (await fetch(`${svc.url}/metrics`)).text();
  const newTransitions = unreachableTransitions(serviceMetrics);
  const gate = connectPhases(serviceMetrics);
  const statuses = await statusCounts(sql);
  const lost = (await all(sims, { type: 'reconnects', profileDir: PROFILE_DIR }, 'reconnects')).flatMap(
    (a) => a.agents,
  );
  const welcomes = lost
    .flatMap((l) => (l.welcomeAt === undefined ? [] : [l.welcomeAt]))
    .sort((a, b) => a - b);
  const acks = lost.flatMap((l) => (l.ackAt === undefined ? [] : [l.ackAt])).sort((a, b) => a - b);
  const hello = lost.flatMap((l) => (l.helloMs === undefined ? [] : [l.helloMs])).sort((a, b) => a - b);
  const attempts = lost.map((l) => l.attempts);
  const resumed = lost.filter((l) => l.resumed === true).length;
  const result = {
    round,
    lost: lost.length,
    acked: acks.length,
    stopS: (tExited - tStop) / 1000,
    readyS: (tReady - tStop) / 1000,
    firstWelcomeS: (welcomes[0] - tStop) / 1000,
    allWelcomedS: (welcomes.at(-1) - tStop) / 1000,
    allAckedS: (acks.at(-1) - tStop) / 1000,
    afterReadyS: (acks.at(-1) - tReady) / 1000,
    half: (percentile(acks, 0.5) - tStop) / 1000,
    connectsPerS: welcomes.length / Math.max(0.001, (welcomes.at(-1) - Math.max(tReady, welcomes[0])) / 1000),
    hello,
    attemptsMean: attempts.reduce((s, a) => s + a, 0) / Math.max(1, attempts.length),
    attemptsMax: Math.max(0, ...attempts),
    resumed,
    agentsLoop: state,
    cpu,
    drops,
    load1: Math.max(load1, loadavg()[0]),
    seenNotHealthy: seenNotHealthy.size,
    seenStatuses: [...new Set(seenNotHealthy.values())],
    worst,
    polls,
    transitions: newTransitions,
    gate,
    statuses,
  };
  log(
    `round ${round}: ${result.acked}/${AGENTS} acked again, all ${fmt(result.allAckedS)} s after SIGTERM ` +
      `(${fmt(result.afterReadyS)} s after ready), ${fmt(result.connectsPerS, 0)} connects/s, ` +
      `hello→welcome p50 ${ms(percentile(hello, 0.5))} p99 ${ms(percentile(hello, 0.99))} ms, resumed ${resumed}; ` +
      `not healthy seen ${result.seenNotHealthy} (${result.seenStatuses.join(',') || '-'}), unreachable transitions ${newTransitions}, ` +
      `accept queue overflows ${drops.overflows}, SYN retransmits ${drops.synRetrans}`,
  );
  return result;
}

export async function stormBench() {
  const startLoad = loadavg();
  const database = `bench_storm_${process.pid}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'so-bench-storm-'));
  await pgAdmin(`CREATE DATABASE ${database}`);
  const sql = new pg.Client({ connectionString: pgDatabaseUrl(database) });
  const ctx = { sql, database, sims: [] };
  try {
    ctx.serviceEnv = {
      ...serviceEnv({ databaseUrl: pgDatabaseUrl(database), dataDir, heartbeat: HEARTBEAT }),
      // The agents dial the same port after the restart, as they would a real service's.
      AGENT_PORT: String(await freePort()),
      ENCRYPTION_KEY: randomBytes(24).toString('base64'),
      TUNNEL_STUN_SERVERS: 'none',
      ...SERVICE_ENV,
    };
    ctx.svc = await spawnUntilReady(MAIN, ctx.serviceEnv, '/health/ready', 120_000);
    await sql.connect();
    const token = await adminToken(ctx.svc.url);
    const info = await json(`${ctx.svc.url}${API}/info`, { token });
    if (info.status !== 200) throw new Error(`info: ${info.status}`);
    const jt = await json(`${ctx.svc.url}${API}/join-tokens`, {
      method: 'POST',
      token,
      body: { pre_approved: true, ttl: '24h' },
    });
    if (jt.status !== 201) throw new Error(`join token: ${jt.status} ${JSON.stringify(jt.body)}`);
    const enrolled = await enroll(ctx.svc.url, jt.body.token, 0, AGENTS);
    log(`${AGENTS} agents enrolled in ${fmt(enrolled.seconds)} s`);
    for (let p = 0; p < PROCS; p++) {
      const sim = new IpcChild(new URL('./sim-agents.mjs', import.meta.url).pathname, {
        execArgv: ['--no-deprecation'],
      });
      ctx.sims.push(sim);
      await sim.request(
        {
          type: 'init',
          endpoints: [info.body.agent_endpoint],
          caPem: enrolled.caPem,
          capacity: AGENT_CAPACITY,
          reconnect: true,
          resume: RESUME,
          fullSessions: FULL_SESSIONS,
          client: CLIENT,
        },
        'ready',
      );
    }
    const agentTicks = () => ctx.sims.reduce((t, s) => t + processTicks(s.pid), 0);
    const t0 = now();
    const ticks0 = agentTicks();
    const connected = await Promise.all(
      ctx.sims.map((sim, p) =>
        sim.request(
          {
            type: 'connect',
            agents: enrolled.identities.filter((_, i) => i % PROCS === p),
            concurrency: Math.ceil(CONNECT_CONCURRENCY / PROCS),
          },
          'connected',
        ),
      ),
    );
    const connectS = (now() - t0) / 1000;
    /** CPU-seconds of the agents' processes for the fleet's first connect. */
    const connectCpuS = (agentTicks() - ticks0) / CLK_TCK;
    const failed = connected.reduce((n, c) => n + c.failed, 0);
    if (failed > 0)
      throw new Error(`${failed} agents failed to connect: ${JSON.stringify(connected[0].errors)}`);
    const connectMs = connected.flatMap((c) => c.connectMs).sort((a, b) => a - b);
    log(
      `${AGENTS} agents connected in ${fmt(connectS)} s (${fmt(AGENTS / connectS, 0)}/s), hello→welcome p50 ` +
        `${ms(percentile(connectMs, 0.5))} p99 ${ms(percentile(connectMs, 0.99))} ms`,
    );
    const initial = { connectS, connectMs, connectCpuS };
    const rounds = [];
    for (let round = 1; round <= RESTARTS; round++) {
      // Every worker healthy, then a full heartbeat round so the restart meets them mid-interval.
      for (const deadline = now() + 60_000; now() < deadline; await sleep(500))
        if (((await statusCounts(sql)).healthy ?? 0) >= AGENTS) break;
      const steady = { at: now(), ticks: agentTicks() };
      await sleep(HEARTBEAT_MS + 1000);
      initial.steadyCpu ??= ((agentTicks() - steady.ticks) / CLK_TCK / ((now() - steady.at) / 1000)) * 100;
      rounds.push(await restart(ctx, round));
    }
    return report(initial, rounds, startLoad);
  } finally {
    await Promise.all(ctx.sims.map((s) => s.stop()));
    await ctx.svc?.stop();
    await sql.end().catch(() => {});
    await pgAdmin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function report(initial, rounds, startLoad) {
  const q = (values, p) => ms(percentile(values, p));
  const t = table(
    `Reconnect storm: ${AGENTS} agents (${CLIENT} client, ${PROCS} process${PROCS > 1 ? 'es' : ''}), heartbeats every ${HEARTBEAT}, service restarted (SIGTERM, start) under them`,
    [
      'run',
      'restart',
      'stopped / ready s',
      'first / all welcomed s',
      'half / all acked s (after ready)',
      'connects/s',
      'hello→welcome p50 / p99 ms',
      'attempts mean / max',
      'TLS resumed',
      'service / agents / PG CPU %',
      'agents loop delay p99 / max ms',
      'accept queue overflows / SYN retransmits',
      'service: queued / handshake / hello p50 (p90) ms, refused',
      'others CPU %, loadavg',
      'workers seen not healthy (most at once) / unreachable transitions',
      'statuses after',
    ],
    rounds.map((r) => [
      `${LABEL} (${CLIENT}${FULL_SESSIONS ? ', whole sessions' : ''})`,
      r.round,
      `${fmt(r.stopS)} / ${fmt(r.readyS)}`,
      `${fmt(r.firstWelcomeS)} / ${fmt(r.allWelcomedS)}`,
      `${fmt(r.half)} / ${fmt(r.allAckedS)} (${fmt(r.afterReadyS)})`,
      fmt(r.connectsPerS, 0),
      `${q(r.hello, 0.5)} / ${q(r.hello, 0.99)}`,
      `${fmt(r.attemptsMean)} / ${r.attemptsMax}`,
      `${r.resumed} / ${r.lost}`,
      `${fmt(r.cpu.service, 0)} / ${fmt(r.cpu.agents, 0)} / ${fmt(r.cpu.pg, 0)}`,
      `${ms(r.agentsLoop.loopP99Ms)} / ${ms(r.agentsLoop.loopMaxMs)}`,
      `${r.drops.overflows} / ${r.drops.synRetrans}`,
      r.gate.phases.hello
        ? `${['queued', 'handshake', 'hello'].map((p) => `${ms(r.gate.phases[p]?.p50)} (${ms(r.gate.phases[p]?.p90)})`).join(' / ')}, ${r.gate.refused}`
        : '-',
      `${fmt(r.cpu.other, 0)}, ${fmt(r.load1, 2)}`,
      `${r.seenNotHealthy} (${r.worst}${r.seenStatuses.length ? `: ${r.seenStatuses.join(', ')}` : ''}) / ${r.transitions}`,
      Object.entries(r.statuses)
        .map(([k, v]) => `${k} ${v}`)
        .join(', '),
    ]),
  );
  return [
    `${cpus().length} cores; load average at the start ${startLoad.map((l) => l.toFixed(2)).join(' ')}, at the end ${loadavg()
      .map((l) => l.toFixed(2))
      .join(
        ' ',
      )}. First connect of the fleet: ${fmt(initial.connectS)} s (${fmt(AGENTS / initial.connectS, 0)}/s), ` +
      `hello→welcome p50 / p99 ${q(initial.connectMs, 0.5)} / ${q(initial.connectMs, 0.99)} ms. ` +
      `Agents' CPU (${CLIENT} client): ${fmt((initial.connectCpuS / initial.connectS) * 100, 0)} % of one core ` +
      `during that first connect (${fmt((initial.connectCpuS / AGENTS) * 1000, 2)} CPU-s per 1,000 connects), ` +
      `${fmt(initial.steadyCpu, 1)} % in steady state before the first restart ` +
      `(${fmt((initial.steadyCpu / AGENTS) * 1000, 2)} % per 1,000 agents).`,
    '',
    t,
    'Seconds from the SIGTERM. "connects/s": welcomes over the time from the new process being ready (or the ' +
      'first welcome) to the last. hello→welcome: the attempt that succeeded. CPU in % of one core from ready to ' +
      'the last ack; "others": everything but the service, the agents, its PostgreSQL backends and the bench. ' +
      "Accept queue overflows and SYN retransmits: the kernel's counters (the bench's network namespace) from the SIGTERM to the last ack. " +
      "Agents loop delay: the simulated agents' event loop (they give a welcome up after " +
      `${AGENT_WELCOME_TIMEOUT_MS / 1000} s, as the real agent does; a loop far behind makes them the limit).`,
    '',
  ].join('\n');
}

if (process.argv[1] === new URL(import.meta.url).pathname) console.log(await stormBench());
