// Several replicas of the service on one PostgreSQL database (issue 15), in one run for 1, 2 and 3
// replicas, each count on a fresh database: the built service (dist/server/main.js) started N times
// with one ENCRYPTION_KEY and data directories of their own. Simulated agents (bench/sim-agents.mjs:
// real identities, one mTLS connection each, every replica's agent endpoint, agent k starting at
// endpoint k mod N, the real agent's backoff to the next endpoint when a stream ends).
//  1. Agents held: connect them all, see every one healthy through the replica holding the fewest
//     streams (shared state), then time every heartbeat to its ack over a window, with the CPU of
//     the replicas, of the database's PostgreSQL backends and of everything else.
//  2. Jobs: stacks created and deployed through the replicas in turn (closed-loop API clients);
//     t0 before the deploy request, t1 when the agent receives the job, the job's finished_at.
//  3. Failover (N >= 2): SIGKILL of the replica holding the most streams; per agent, the time from
//     the kill to its welcome and its first acknowledged heartbeat on a survivor; when every moved
//     session row names a survivor; when every worker reports again through a survivor's API; and
//     whether any worker turned unreachable meanwhile.
// No thresholds: it reports. Times are CLOCK_MONOTONIC (the same clock in every process here).
import { randomBytes } from 'node:crypto';
import { Agent as HttpAgent } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ADMIN_URL, MAIN, median, pgAdmin, pgDatabaseUrl, spawnUntilReady, table } from './lib.mjs';
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
  listWorkers,
  now,
  succeededJobs,
} from './lib-jobs.mjs';

const env = process.env;
const COUNTS = (env.BENCH_REPLICAS ?? '1,2,3')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const AGENTS = Number(env.BENCH_REPLICAS_AGENTS ?? 500);
const JOBS = Number(env.BENCH_REPLICAS_JOBS ?? 600);
const CONCURRENCY = Number(env.BENCH_REPLICAS_CONCURRENCY ?? 32);
const HEARTBEAT = env.BENCH_REPLICAS_HEARTBEAT ?? '2s';
const HEARTBEAT_MS = Number.parseFloat(HEARTBEAT) * (HEARTBEAT.endsWith('ms') ? 1 : 1000);
/** Redeploy runs after the placement run (each deploys every stack once). */
const REDEPLOYS = Number(env.BENCH_REPLICAS_REDEPLOYS ?? 1);
/** 0 skips the SIGKILL step (a dispatch-only run: BENCH_REPLICAS_FAILOVER=0). */
const FAILOVER = env.BENCH_REPLICAS_FAILOVER !== '0';
/** Seconds of the heartbeat window. */
const HOLD_S = Number(env.BENCH_REPLICAS_HOLD_S ?? 15);
/** After a kill, workers are watched through a survivor this long (past 3 missed heartbeats). */
const WATCH_MS = Math.max(15_000, 3 * HEARTBEAT_MS + 5_000);

const log = (...args) => console.error(`[replicas ${new Date().toISOString().slice(11, 19)}]`, ...args);
const ms = (v) => (v === undefined || Number.isNaN(v) ? '-' : v < 10 ? v.toFixed(1) : v.toFixed(0));
const pct = (v) => v.toFixed(0);
const sorted = (values) => values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
const spread = (values) => {
  const s = sorted(values);
  return s.length ? `${ms(s[0])} / ${ms(median(s))} / ${ms(s.at(-1))}` : '-';
};

// ---- CPU of the replicas, the agents, PostgreSQL and the rest of the machine ----

class Cpu {
  constructor(database) {
    this.database = database;
    this.pg = new pg.Client({ connectionString: ADMIN_URL });
  }

  /** Ticks of each replica (0 once dead), the agents process, and each backend of the database. */
  async sample(replicas, agentsPid) {
    return {
      at: now(),
      replicas: replicas.map((r) => processTicks(r.pid)),
      agents: processTicks(agentsPid),
      pg: await pgBackendTicks(this.pg, this.database),
      own: ownTicks(),
      machine: machineBusyTicks(),
    };
  }

  /** % of one core between two samples: each replica, their sum, the agents, PostgreSQL, the rest. */
  static delta(a, b) {
    const seconds = (b.at - a.at) / 1000;
    const toPct = (ticks) => (ticks / CLK_TCK / seconds) * 100;
    const replicas = b.replicas.map((t, i) => Math.max(0, t - a.replicas[i]));
    const ticks = {
      services: replicas.reduce((s, t) => s + t, 0),
      agents: b.agents - a.agents,
      pg: pgTicksBetween(a.pg, b.pg),
      own: b.own - a.own,
    };
    const counted = Object.values(ticks).reduce((s, t) => s + t, 0);
    return {
      seconds,
      replicas: replicas.map(toPct),
      ...Object.fromEntries(Object.entries(ticks).map(([k, t]) => [k, toPct(t)])),
      other: Math.max(0, toPct(b.machine - a.machine - counted)),
    };
  }
}

// ---- replicas ----

async function startReplicas(database, count) {
  const shared = {
    // The CA's and the signing keys' private halves are sealed in the database under this key.
    ENCRYPTION_KEY: randomBytes(24).toString('base64'),
    TUNNEL_STUN_SERVERS: 'none',
  };
  const replicas = [];
  // One after the other: the first creates the CA and the bootstrap client, the next read them.
  for (let i = 0; i < count; i++) {
    const dataDir = mkdtempSync(join(tmpdir(), `so-bench-replica-${i}-`));
    const replica = { index: i, dataDir, killed: false };
    replicas.push(replica);
    replica.svc = await spawnUntilReady(
      MAIN,
      {
        ...serviceEnv({ databaseUrl: pgDatabaseUrl(database), dataDir, heartbeat: HEARTBEAT }),
        ...shared,
      },
      '/health/ready',
      120_000,
    );
    replica.url = replica.svc.url;
    replica.pid = replica.svc.child.pid;
    log(`replica ${i} pid ${replica.pid} ready in ${(replica.svc.readyMs / 1000).toFixed(1)} s`);
  }
  return replicas;
}

async function stopReplicas(replicas) {
  await Promise.all(
    replicas.map(async (r) => {
      if (r.svc && !r.killed) {
        const code = await r.svc.stop();
        if (code !== 0) log(`replica ${r.index} exited ${code} on SIGTERM`);
      }
      rmSync(r.dataDir, { recursive: true, force: true });
    }),
  );
}

/** worker_id → replica index, from agent_sessions (`replica` is `host/pid/uuid`). */
async function sessions(sql, replicas) {
  const { rows } = await sql.query('SELECT worker_id, replica FROM agent_sessions');
  const byPid = new Map(replicas.map((r) => [String(r.pid), r.index]));
  return new Map(rows.map((r) => [r.worker_id, byPid.get(r.replica.split('/')[1]) ?? -1]));
}

function perReplica(held, replicas) {
  return replicas.map((r) => [...held.values()].filter((i) => i === r.index).length);
}

/** Transitions to unreachable the live replicas have counted (stack_worker_transitions_total). */
async function unreachableTransitions(replicas) {
  let total = 0;
  for (const r of replicas.filter((x) => !x.killed)) {
    const text = await (await fetch(`${r.url}/metrics`)).text();
    for (const m of text.matchAll(/^stack_worker_transitions_total\{([^}]*)\} (\S+)$/gm))
      if (/to="unreachable"/.test(m[1])) total += Number(m[2]);
  }
  return total;
}

// ---- 1. agents held ----

async function holdAgents(ctx) {
  const { replicas, token, agents, cpu, sql, identities } = ctx;
  const before = await cpu.sample(replicas, agents.pid);
  const started = now();
  const c = await agents.request({ type: 'connect', agents: identities, concurrency: 50 }, 'connected');
  const connectSeconds = (now() - started) / 1000;
  const connectCpu = Cpu.delta(before, await cpu.sample(replicas, agents.pid));
  if (c.failed > 0) throw new Error(`${c.failed} agents failed to connect: ${JSON.stringify(c.errors)}`);
  // Shared state: every worker healthy and connected through the replica holding the fewest streams.
  const held = await sessions(sql, replicas);
  const counts = perReplica(held, replicas);
  const via = replicas[counts.indexOf(Math.min(...counts))];
  let workers;
  for (const deadline = now() + 60_000; ; await sleep(200)) {
    workers = await listWorkers(via.url, token);
    const ok = workers.filter((w) => w.status === 'healthy' && w.connected).length;
    if (ok === AGENTS || now() > deadline) break;
  }
  const healthySeconds = (now() - started) / 1000;
  const healthy = workers.filter((w) => w.status === 'healthy' && w.connected).length;
  log(
    `${replicas.length} replica(s): ${c.ok} agents connected in ${connectSeconds.toFixed(1)} s, sessions ${counts.join('/')}; ` +
      `${healthy} healthy and connected through replica ${via.index} (${counts[via.index]} streams) at ${healthySeconds.toFixed(1)} s`,
  );
  await sleep(2000);
  await agents.request({ type: 'window-start' }, 'window-started');
  const load1 = loadavg()[0];
  const a = await cpu.sample(replicas, agents.pid);
  await sleep(HOLD_S * 1000);
  const b = await cpu.sample(replicas, agents.pid);
  const rss = replicas.map((r) => rssMiB(r.pid));
  const w = await agents.request({ type: 'window-end' }, 'window');
  const latencies = sorted(w.latencies);
  const window = Cpu.delta(a, b);
  const result = {
    counts,
    via: via.index,
    connectSeconds,
    connectMs: sorted(c.connectMs),
    connectCpu,
    healthy,
    healthySeconds,
    hbPerS: w.acked / window.seconds,
    lost: w.sent - w.acked,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    max: latencies.at(-1),
    cpu: window,
    rss,
    load1: Math.max(load1, loadavg()[0]),
  };
  log(
    `${replicas.length} replica(s): ${result.hbPerS.toFixed(0)} heartbeats/s, ack p50 ${ms(result.p50)} p99 ${ms(result.p99)} ms; ` +
      `replicas ${window.replicas.map(pct).join('+')} % pg ${pct(window.pg)} % others ${pct(window.other)} %`,
  );
  return result;
}

// ---- 2. jobs ----

async function deployRun(ctx, label) {
  const { replicas, token, agents, cpu, sql, stacks } = ctx;
  const urls = replicas.map((r) => r.url);
  const http = new HttpAgent({ keepAlive: true, maxSockets: CONCURRENCY });
  await Promise.all(
    Array.from({ length: CONCURRENCY }, (_, i) =>
      call(http, `${urls[i % urls.length]}${API}/jobs?limit=1`, { token }),
    ),
  );
  const held = await sessions(sql, replicas);
  const agentsBefore = await agents.request({ type: 'collect' }, 'collected');
  const wallOffset = Date.now() - now();
  const before = await cpu.sample(replicas, agents.pid);
  const startedWall = Date.now();
  const load1 = loadavg()[0];
  const records = await deployAll(http, urls, token, stacks, CONCURRENCY);
  http.destroy();
  const accepted = records.filter((r) => r.status === 202);
  const { t1, totals } = await jobsAtAgents(
    agents,
    accepted.map((r) => r.id),
  );
  const jobs = await succeededJobs(
    urls.at(-1),
    token,
    accepted.map((r) => r.id),
    startedWall - 1000,
  );
  const finished = new Map([...jobs].map(([id, j]) => [id, Date.parse(j.finished_at) - wallOffset]));
  const after = await cpu.sample(replicas, agents.pid);
  const first = Math.min(...records.map((r) => r.t0));
  const lastT1 = Math.max(...accepted.map((r) => t1.get(r.id) ?? 0));
  const lastFinished = Math.max(...finished.values());
  const crossed = accepted.filter((r) => {
    const worker = jobs.get(r.id)?.worker_id;
    return worker !== undefined && held.get(worker) !== r.via;
  }).length;
  const result = {
    label,
    requests: records.length,
    accepted: accepted.length,
    atAgents: accepted.filter((r) => t1.has(r.id)).length,
    succeeded: jobs.size,
    duplicates: totals.duplicates - agentsBefore.duplicates,
    crossed: crossed / Math.max(1, accepted.length),
    dispatchedPerS: t1.size / ((lastT1 - first) / 1000),
    finishedPerS: finished.size / ((lastFinished - first) / 1000),
    dispatch: sorted(accepted.map((r) => t1.get(r.id) - r.t0)),
    finish: sorted(accepted.map((r) => finished.get(r.id) - r.t0)),
    http: sorted(records.map((r) => r.tResp - r.t0)),
    cpu: Cpu.delta(before, after),
    load1: Math.max(load1, loadavg()[0]),
  };
  log(
    `${replicas.length} replica(s) ${label}: ${result.accepted}/${result.requests} accepted, ${result.atAgents} at agents, ` +
      `${result.succeeded} succeeded; ${result.dispatchedPerS.toFixed(0)} dispatched/s, ${result.finishedPerS.toFixed(0)} finished/s; ` +
      `dispatch p50 ${ms(percentile(result.dispatch, 0.5))} p99 ${ms(percentile(result.dispatch, 0.99))} ms`,
  );
  return result;
}

// ---- 3. failover ----

async function failover(ctx) {
  const { replicas, token, agents, sql } = ctx;
  const held = await sessions(sql, replicas);
  const counts = perReplica(held, replicas);
  const victim = replicas[counts.indexOf(Math.max(...counts))];
  const survivor = replicas.find((r) => r !== victim);
  const moved = [...held].filter(([, i]) => i === victim.index).map(([id]) => id);
  const movedSet = new Set(moved);
  const transitionsBefore = await unreachableTransitions(replicas);
  await agents.request({ type: 'mark' }, 'marked');
  const killWall = Date.now();
  const tKill = now();
  victim.killed = true;
  victim.svc.child.kill('SIGKILL');
  log(`killed replica ${victim.index} (pid ${victim.pid}) holding ${moved.length} of ${AGENTS} streams`);

  // The session rows, every 100 ms: when every moved agent's row names a survivor.
  let sessionsAt;
  const watchSessions = (async () => {
    while (sessionsAt === undefined && now() - tKill < WATCH_MS) {
      const { rows } = await sql.query(
        'SELECT count(*)::int AS n FROM agent_sessions WHERE worker_id = ANY($1) AND replica NOT LIKE $2',
        [moved, `%/${victim.pid}/%`],
      );
      if (rows[0].n === moved.length) sessionsAt = now() - tKill;
      else await sleep(100);
    }
  })();
  // Every worker through a survivor, every 250 ms: when all report again, and every status seen.
  let apiAt;
  const notHealthy = new Map();
  const polls = { n: 0 };
  const watchApi = (async () => {
    while (now() - tKill < WATCH_MS) {
      const workers = await listWorkers(survivor.url, token).catch((err) => {
        log(`listing workers through replica ${survivor.index} failed: ${err.message}`);
        return [];
      });
      const t = now() - tKill;
      polls.n++;
      for (const w of workers) if (w.status !== 'healthy') notHealthy.set(w.id, w.status);
      // Every worker healthy and connected, and each moved one heard from since the kill.
      const reporting = workers.filter(
        (w) =>
          w.status === 'healthy' &&
          w.connected &&
          (!movedSet.has(w.id) || Date.parse(w.last_heartbeat) > killWall),
      ).length;
      if (apiAt === undefined && reporting === AGENTS) apiAt = t;
      await sleep(250);
    }
  })();
  await Promise.all([watchSessions, watchApi]);
  const r = await agents.request({ type: 'reconnects' }, 'reconnects');
  const transitions = (await unreachableTransitions(replicas)) - transitionsBefore;
  const { rows: statuses } = await sql.query(
    'SELECT status, count(*)::int AS n FROM workers GROUP BY status',
  );
  const after = perReplica(await sessions(sql, replicas), replicas);
  const lost = r.agents;
  const result = {
    replicas: replicas.length,
    victim: victim.index,
    moved: moved.length,
    lost: lost.length,
    reconnected: lost.filter((a) => a.welcomeAt !== undefined).length,
    detect: lost.map((a) => a.at - tKill),
    welcome: lost.map((a) => a.welcomeAt - tKill),
    ack: lost.map((a) => a.ackAt - tKill),
    sessionsAt,
    apiAt,
    notHealthy: [...notHealthy.values()],
    polls: polls.n,
    transitions,
    statuses: Object.fromEntries(statuses.map((s) => [s.status, s.n])),
    connected: r.connected,
    after,
  };
  log(
    `failover of ${replicas.length}: ${result.reconnected}/${result.lost} reconnected; welcome ${spread(result.welcome)} ms; ` +
      `sessions moved at ${ms(sessionsAt)} ms, all reporting via replica ${survivor.index} at ${ms(apiAt)} ms; ` +
      `not healthy seen: ${result.notHealthy.length}, unreachable transitions ${transitions}; sessions now ${after.join('/')}`,
  );
  return result;
}

// ---- one replica count ----

async function benchCount(count) {
  const database = `bench_replicas_${count}_${process.pid}`;
  await pgAdmin(`CREATE DATABASE ${database}`);
  const cpu = new Cpu(database);
  const sql = new pg.Client({ connectionString: pgDatabaseUrl(database) });
  let replicas = [];
  let agents;
  try {
    await cpu.pg.connect();
    replicas = await startReplicas(database, count);
    await sql.connect();
    const token = await adminToken(replicas[0].url);
    const endpoints = [];
    for (const r of replicas) {
      const info = await json(`${r.url}${API}/info`, { token });
      if (info.status !== 200) throw new Error(`info: ${info.status}`);
      endpoints.push(info.body.agent_endpoint);
    }
    const jt = await json(`${replicas[0].url}${API}/join-tokens`, {
      method: 'POST',
      token,
      body: { pre_approved: true, ttl: '24h' },
    });
    if (jt.status !== 201) throw new Error(`join token: ${jt.status} ${JSON.stringify(jt.body)}`);
    // Enrollment through every replica, a share each.
    const share = Math.ceil(AGENTS / count);
    const enrolled = await Promise.all(
      replicas.map((r, i) =>
        enroll(r.url, jt.body.token, i * share, Math.min(share, AGENTS - i * share), {
          concurrency: Math.ceil(16 / count),
        }),
      ),
    );
    const identities = enrolled.flatMap((e) => e.identities);
    const enrollSeconds = Math.max(...enrolled.map((e) => e.seconds));
    log(`${count} replica(s): ${identities.length} agents enrolled in ${enrollSeconds.toFixed(1)} s`);
    agents = new IpcChild(new URL('./sim-agents.mjs', import.meta.url).pathname, {
      execArgv: ['--no-deprecation'],
    });
    await agents.request(
      { type: 'init', endpoints, caPem: enrolled[0].caPem, capacity: AGENT_CAPACITY, reconnect: true },
      'ready',
    );
    const ctx = { replicas, token, agents, cpu, sql, identities };
    const held = await holdAgents(ctx);
    const s = await createStacks(
      replicas.map((r) => r.url),
      token,
      JOBS,
    );
    log(`${count} replica(s): ${JOBS} stacks created in ${s.seconds.toFixed(1)} s`);
    ctx.stacks = s.ids;
    const runs = [await deployRun(ctx, 'first deploy (placement)')];
    for (let i = 0; i < REDEPLOYS; i++) runs.push(await deployRun(ctx, 'redeploy'));
    const fail = count >= 2 && FAILOVER ? await failover(ctx) : undefined;
    return { count, enrollSeconds, stackSeconds: s.seconds, held, runs, fail };
  } finally {
    await agents?.stop();
    await stopReplicas(replicas);
    await sql.end().catch(() => {});
    await cpu.pg.end().catch(() => {});
    await pgAdmin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  }
}

// ---- report ----

function report(all, startLoad) {
  const q = (values, p) => ms(percentile(values, p));
  const agentsTable = table(
    `Replicas: ${AGENTS} agents held, heartbeats every ${HEARTBEAT}, ${HOLD_S} s measured`,
    [
      'replicas',
      'streams per replica',
      'connect s (connects/s)',
      'hello→welcome p50 / p99 ms',
      'healthy + connected via the replica with fewest streams (s after first connect)',
      'heartbeats/s acked',
      'ack p50 / p99 / max ms',
      'lost heartbeats',
      'service CPU % per replica, connecting → holding',
      'PG CPU %',
      'service RSS MiB per replica',
      'agents / bench CPU %',
      'others CPU %, loadavg',
    ],
    all.map(({ count, held: h }) => [
      count,
      h.counts.join(' / '),
      `${h.connectSeconds.toFixed(1)} (${(AGENTS / h.connectSeconds).toFixed(0)})`,
      `${q(h.connectMs, 0.5)} / ${q(h.connectMs, 0.99)}`,
      `${h.healthy} / ${AGENTS} via #${h.via} (${h.healthySeconds.toFixed(1)})`,
      h.hbPerS.toFixed(0),
      `${ms(h.p50)} / ${ms(h.p99)} / ${ms(h.max)}`,
      h.lost,
      `${h.connectCpu.replicas.map(pct).join(' + ')} → ${h.cpu.replicas.map(pct).join(' + ')}`,
      pct(h.cpu.pg),
      h.rss.map((r) => r.toFixed(0)).join(' / '),
      `${pct(h.cpu.agents)} / ${pct(h.cpu.own)}`,
      `${pct(h.cpu.other)}, ${h.load1.toFixed(2)}`,
    ]),
  );
  const jobsTable = table(
    `Replicas: ${JOBS} stacks deployed by ${CONCURRENCY} API clients, round-robin over the replicas`,
    [
      'replicas',
      'run',
      'jobs/s API → agent',
      'jobs/s API → finished',
      'dispatch p50 / p99 ms',
      'finished p50 / p99 ms',
      'HTTP deploy p50 / p99 ms',
      'accepted / at agents / succeeded',
      'sent twice',
      'deploys to a replica without the agent',
      'service CPU % (sum)',
      'PG CPU %',
      'CPU ms per job: services / PG / agents + bench',
      'others CPU %, loadavg',
    ],
    all.flatMap(({ count, runs }) =>
      runs.map((r) => [
        count,
        r.label,
        r.dispatchedPerS.toFixed(0),
        r.finishedPerS.toFixed(0),
        `${q(r.dispatch, 0.5)} / ${q(r.dispatch, 0.99)}`,
        `${q(r.finish, 0.5)} / ${q(r.finish, 0.99)}`,
        `${q(r.http, 0.5)} / ${q(r.http, 0.99)}`,
        `${r.accepted} / ${r.atAgents} / ${r.succeeded}`,
        r.duplicates,
        `${(r.crossed * 100).toFixed(0)} %`,
        pct(r.cpu.services),
        pct(r.cpu.pg),
        [r.cpu.services, r.cpu.pg, r.cpu.agents + r.cpu.own]
          .map((p) => ((p / 100) * r.cpu.seconds * 1000) / Math.max(1, r.accepted))
          .map((v) => v.toFixed(2))
          .join(' / '),
        `${pct(r.cpu.other)}, ${r.load1.toFixed(2)}`,
      ]),
    ),
  );
  const fails = all.filter((x) => x.fail).map((x) => x.fail);
  const failTable = table(
    `Replicas: SIGKILL of the replica holding the most streams (ms after the kill; min / median / max per agent)`,
    [
      'replicas',
      'its agents',
      'stream loss seen',
      'welcome on a survivor',
      'first heartbeat acked there',
      'all their sessions on survivors (DB)',
      'all its workers heard from since, via a survivor (API)',
      'workers seen not healthy (API polls) / unreachable transitions',
      'workers by status after',
      'streams per replica after',
    ],
    fails.map((f) => [
      f.replicas,
      `${f.moved} (${f.reconnected} reconnected)`,
      spread(f.detect),
      spread(f.welcome),
      spread(f.ack),
      ms(f.sessionsAt),
      ms(f.apiAt),
      `${f.notHealthy.length} (${f.polls} polls) / ${f.transitions}`,
      Object.entries(f.statuses)
        .map(([k, v]) => `${k} ${v}`)
        .join(', '),
      f.after.map((n, i) => (i === f.victim ? `(killed) ${n}` : n)).join(' / '),
    ]),
  );
  const setup = all
    .map(
      (x) =>
        `${x.count} replica(s): ${AGENTS} agents enrolled in ${x.enrollSeconds.toFixed(1)} s, ${JOBS} stacks created in ${x.stackSeconds.toFixed(1)} s.`,
    )
    .join(' ');
  return [
    `${cpus().length} cores; load average at the start ${startLoad.map((l) => l.toFixed(2)).join(' ')}, at the end ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}.`,
    '',
    agentsTable,
    jobsTable,
    fails.length ? failTable : '',
    `${setup} HEARTBEAT_INTERVAL=${HEARTBEAT}: a worker silent for three intervals turns unreachable. ` +
      'CPU in % of one core; "others": processes other than the replicas, their PostgreSQL backends, the agents and the bench.',
    '',
  ].join('\n');
}

export async function replicasBench() {
  const startLoad = loadavg();
  const all = [];
  for (const count of COUNTS) all.push(await benchCount(count));
  return report(all, startLoad);
}

if (process.argv[1] === new URL(import.meta.url).pathname) console.log(await replicasBench());
