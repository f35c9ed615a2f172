import { rmSync, mkdtempSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentProcess } from '../support/agent-process.js';
import { eventually } from '../support/app.js';
import { TcpBalancer } from '../support/balancer.js';
import { createPostgresDatabase, type TestDatabase } from '../support/database.js';
import { ServiceProcess, startReplicas } from '../support/service-process.js';
import { FAST_AGENT_ENV, freePort, httpGet, webStackYaml } from '../support/stacks.js';

// Three replicas of the built service on one PostgreSQL database, a TCP round-robin balancer in
// front of their HTTP ports, and real agents given every replica's address: every replica answers every read alike, a command for an agent reaches it whichever
// replica took the request, and a replica killed with SIGKILL during a deploy storm loses nothing.
// PostgreSQL whatever TEST_DB says (vitest.config.ts keeps it out of the PGlite pass).

const AGENTS = 3;
const STORM = 9;
const TERMINAL = ['succeeded', 'failed', 'cancelled'];
/** A worker heard from; degraded when a non-critical check of the agent fails on this machine. */
const REPORTING = ['healthy', 'degraded'];

interface WorkerBody {
  id: string;
  name: string;
  status: string;
  connected: boolean;
  address: string;
  last_heartbeat: string | null;
}

/**
 * A health answer without what changes with every report (the report's time, the services' uptime
 * and check latency): those agree within a heartbeat interval, compared apart.
 */
const withoutUptime = (health: Record<string, unknown>) => ({
  ...health,
  reported_at: undefined,
  services: (health.services as { health_check?: object }[]).map((s) => ({
    ...s,
    uptime: undefined,
    health_check: { ...s.health_check, latency_ms: undefined },
  })),
});

describe('three replicas behind a balancer on one PostgreSQL database', () => {
  let db: TestDatabase;
  let sql: pg.Client;
  let replicas: ServiceProcess[] = [];
  let stopReplicas: (() => Promise<void>) | undefined;
  const extra: ServiceProcess[] = [];
  const agents: AgentProcess[] = [];
  const http = new TcpBalancer([]);
  let auth = '';
  const env = { ...FAST_AGENT_ENV, HEARTBEAT_INTERVAL: '500ms', METRICS_SCRAPE_INTERVAL: '1h' };

  const lb = () => `http://127.0.0.1:${http.port}`;
  /**
   * One request on a connection of its own: a kept-alive connection through the balancer stays
   * pinned to the replica it reached, and a request sent on it just after that replica is killed
   * fails (a POST is not retried), which is the balancer's nature, not what these tests are about.
   */
  const call = (base: string, method: string, path: string, body?: string, type?: string) =>
    new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
      const req = request(`${base}/api/v1/orchestrator${path}`, {
        method,
        agent: false,
        headers: { authorization: auth, ...(type ? { 'content-type': type } : {}) },
      });
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
          }),
        );
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  const get = (base: string, path: string) => call(base, 'GET', path);
  const agentPort = async (svc: ServiceProcess) => {
    const info = await fetch(`${svc.url}/api/v1/orchestrator/info`, { headers: { authorization: auth } });
    return Number(((await info.json()) as { agent_endpoint: string }).agent_endpoint.split(':').pop());
  };
  const workers = async (base: string) =>
    (await get(base, '/workers?limit=100')).body.workers as WorkerBody[];
  const live = () => replicas.filter((r) => r.child.exitCode === null && r.child.signalCode === null);

  beforeAll(async () => {
    db = await createPostgresDatabase();
    sql = new pg.Client({ connectionString: db.databaseUrl });
    await sql.connect();
    ({ replicas, stop: stopReplicas } = await startReplicas(db.databaseUrl ?? '', 3, env));
    auth = await replicas[0].adminAuth();
    http.setBackends(replicas.map((r) => Number(new URL(r.url).port)));
    const agentPorts = await Promise.all(replicas.map((r) => agentPort(r)));
    const agentEndpoints = agentPorts.map((p) => `127.0.0.1:${p}`);
    await http.start();
    const token = await call(
      lb(),
      'POST',
      '/join-tokens',
      JSON.stringify({ pre_approved: true }),
      'application/json',
    );
    expect(token.status).toBe(201);
    for (let i = 0; i < AGENTS; i++)
      agents.push(
        AgentProcess.start({
          server: replicas.map((r) => r.url).join(','),
          token: token.body.token as string,
          name: `node-${i}`,
          env: FAST_AGENT_ENV,
          // Every replica's address, as an operator gives them (or one name resolving to all).
          args: ['--agent-endpoint', agentEndpoints.join(',')],
        }),
      );
    await eventually(async () => {
      const list = await workers(lb());
      return list.length === AGENTS && list.every((w) => w.connected && REPORTING.includes(w.status));
    }, 30_000);
  });

  afterAll(async () => {
    await Promise.all(agents.map((a) => a.stop()));
    await Promise.all(extra.map((r) => r.stop('SIGKILL')));
    await stopReplicas?.();
    await http.stop();
    await sql.end();
    await db.drop();
  });

  it('every replica gives the same worker list, stack health, drift, job and connectivity answers', async () => {
    const port = await freePort();
    const created = await call(lb(), 'POST', '/stacks', webStackYaml('web-agree', port), 'application/yaml');
    expect(created.status).toBe(201);
    const stackId = created.body.id as string;
    const deployed = await call(lb(), 'POST', `/stacks/${stackId}/deploy`);
    expect(deployed.status).toBe(202);
    const jobId = deployed.body.id as string;
    await eventually(async () => (await get(lb(), `/jobs/${jobId}`)).body.status === 'succeeded', 30_000);
    await eventually(async () => {
      const health = await get(lb(), `/stacks/${stackId}/health`);
      return health.body.overall === 'healthy';
    }, 20_000);
    // Asked through a replica that does not hold every agent's stream (each agent picks its first
    // replica at random, so which one that is varies).
    const { rows } = await sql.query<{ replica: string }>(`SELECT DISTINCT replica FROM agent_sessions`);
    const checker = replicas.find((r) => rows.length > 1 || !rows[0].replica.includes(`/${r.child.pid}/`))!;
    const check = await call(checker.url, 'POST', '/workers/connectivity/check');
    expect(check.status).toBe(202);
    // Every agent was asked, including those whose stream another replica holds.
    expect(
      check.body.workers,
      JSON.stringify(
        replicas.map((r) =>
          r
            .records()
            .filter((x) => Number(x.level) >= 40)
            .slice(-5),
        ),
      ),
    ).toBe(AGENTS);
    await eventually(async () => {
      const matrix = await get(replicas[0].url, '/workers/connectivity');
      return (matrix.body.links as unknown[]).length === AGENTS * (AGENTS - 1);
    }, 20_000);

    // Within one heartbeat interval every replica answers alike.
    const stable = (w: WorkerBody) => ({
      id: w.id,
      name: w.name,
      status: w.status,
      connected: w.connected,
      address: w.address,
    });
    const views = async (svc: ServiceProcess) => ({
      workers: (await workers(svc.url)).map(stable),
      health: (await get(svc.url, `/stacks/${stackId}/health`)).body,
      drift: (await get(svc.url, `/stacks/${stackId}/drift`)).body,
      job: (await get(svc.url, `/jobs/${jobId}`)).body,
      links: (
        (await get(svc.url, '/workers/connectivity')).body.links as {
          from: string;
          to: string;
          reachable: boolean;
        }[]
      )
        .map((l) => `${l.from}>${l.to}:${l.reachable}`)
        .sort(),
      tunnel: await (
        await fetch(`${svc.url}/api/v1/tunnel/status`, { headers: { authorization: auth } })
      ).json(),
    });
    // Every replica answers alike within one heartbeat interval of a change: a report written by
    // the replica holding the stream within a second, read by the others within another.
    await eventually(async () => {
      const [first, ...others] = await Promise.all(replicas.map(views));
      const settled =
        first.workers.every((w) => w.connected && REPORTING.includes(w.status)) &&
        JSON.stringify((first.health.services as { status: string }[]).map((s) => s.status)) ===
          JSON.stringify(['healthy']);
      return (
        settled &&
        others.every(
          (other) =>
            JSON.stringify(other.workers) === JSON.stringify(first.workers) &&
            JSON.stringify(withoutUptime(other.health)) === JSON.stringify(withoutUptime(first.health)) &&
            other.drift.status === first.drift.status &&
            JSON.stringify(other.job) === JSON.stringify(first.job) &&
            JSON.stringify(other.links) === JSON.stringify(first.links) &&
            JSON.stringify(other.tunnel) === JSON.stringify(first.tunnel),
        )
      );
    }, 5_000);
    // Report times and last_heartbeat agree within one heartbeat interval (plus the one-second flush).
    const reported = await Promise.all(
      replicas.map(async (r) =>
        Date.parse((await get(r.url, `/stacks/${stackId}/health`)).body.reported_at as string),
      ),
    );
    expect(Math.max(...reported) - Math.min(...reported)).toBeLessThan(2_500);
    const beats = await Promise.all(
      replicas.map(async (r) => (await workers(r.url)).map((w) => Date.parse(w.last_heartbeat!))),
    );
    for (let i = 0; i < AGENTS; i++) {
      const seen = beats.map((b) => b[i]);
      expect(Math.max(...seen) - Math.min(...seen)).toBeLessThan(2_000);
    }
    expect(await httpGet(port, '/health')).toMatchObject({ status: 200 });
  });

  it("a cancel through a replica that does not hold the agent's stream reaches the agent", async () => {
    const port = await freePort();
    // The service never passes its health check, so the provision job keeps running until cancelled.
    const created = await call(
      lb(),
      'POST',
      '/stacks',
      webStackYaml('never-healthy', port, { failHealth: true }),
      'application/yaml',
    );
    expect(created.status).toBe(201);
    const deployed = await call(lb(), 'POST', `/stacks/${created.body.id as string}/deploy`);
    const jobId = deployed.body.id as string;
    await eventually(async () => (await get(lb(), `/jobs/${jobId}`)).body.status === 'running', 30_000);
    const workerId = (await get(lb(), `/jobs/${jobId}`)).body.worker_id as string;
    const { rows } = await sql.query<{ replica: string }>(
      `SELECT replica FROM agent_sessions WHERE worker_id = $1`,
      [workerId],
    );
    const other = replicas.find((r) => !rows[0].replica.includes(`/${r.child.pid}/`))!;
    const cancel = await call(other.url, 'POST', `/jobs/${jobId}/cancel`);
    expect(cancel.status).toBe(202);
    // Only the agent ends a cancelling job as cancelled: the command went through the relay.
    await eventually(
      async () => (await get(other.url, `/jobs/${jobId}`)).body.status === 'cancelled',
      20_000,
    );
    const logs = (await get(other.url, `/jobs/${jobId}/logs`)).body.lines as { line: string }[];
    expect(logs.some((l) => l.line.includes('never passed the health check'))).toBe(true);
  });

  it('a deploy storm while one replica is killed with SIGKILL: every job ends once, every worker reports again', async () => {
    const stacks: { id: string; port: number }[] = [];
    for (let i = 0; i < STORM; i++) {
      const port = await freePort();
      const created = await call(
        lb(),
        'POST',
        '/stacks',
        webStackYaml(`storm-${i}`, port),
        'application/yaml',
      );
      expect(created.status).toBe(201);
      stacks.push({ id: created.body.id as string, port });
    }
    // The victim holds at least one agent's stream.
    const { rows } = await sql.query<{ replica: string }>(
      `SELECT replica FROM agent_sessions GROUP BY replica ORDER BY count(*) DESC LIMIT 1`,
    );
    const victim = replicas.find((r) => rows[0].replica.split('/')[1] === String(r.child.pid))!;
    expect(victim).toBeDefined();
    const survivors = replicas.filter((r) => r !== victim);
    // Readiness of the survivors is watched throughout.
    const readiness: number[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        for (const s of survivors) readiness.push((await fetch(`${s.url}/health/ready`)).status);
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    const jobs: string[] = [];
    for (const [i, stack] of stacks.entries()) {
      const res = await call(lb(), 'POST', `/stacks/${stack.id}/deploy`);
      expect(res.status).toBe(202);
      jobs.push(res.body.id as string);
      if (i === Math.floor(STORM / 2)) await victim.stop('SIGKILL');
    }
    http.setBackends(survivors.map((r) => Number(new URL(r.url).port)));
    const killedAt = Date.now();
    // Every worker reports again, through a survivor, within 30 s.
    await eventually(async () => {
      const list = await workers(survivors[0].url);
      return list.every(
        (w) => w.connected && REPORTING.includes(w.status) && Date.parse(w.last_heartbeat!) > killedAt,
      );
    }, 30_000).catch(async (err: unknown) => {
      // What to look at when it does not: the workers as a survivor sees them, and each agent's
      // and survivor's last words about connections.
      const recent = (r: Record<string, unknown>) => Date.parse(String(r.time)) > killedAt - 2_000;
      console.log('workers after the kill:', JSON.stringify(await workers(survivors[0].url)));
      for (const a of agents) console.log('agent:', JSON.stringify(a.records().filter(recent).slice(-30)));
      for (const s of survivors)
        console.log(
          `replica ${s.child.pid}:`,
          JSON.stringify(
            s
              .records()
              .filter((r) => recent(r) && r.worker_id !== undefined)
              .slice(-60),
          ),
        );
      throw err;
    });
    // Every job reaches a terminal state.
    await eventually(async () => {
      const all = await Promise.all(jobs.map((id) => get(survivors[0].url, `/jobs/${id}`)));
      return all.every((j) => TERMINAL.includes(j.body.status as string));
    }, 60_000);
    watching = false;
    await watcher;
    expect(readiness.length).toBeGreaterThan(0);
    expect(readiness.every((s) => s === 200)).toBe(true);
    // Exactly once: each job ended once (one "job <terminal>" record across every replica's log,
    // the victim's included), and each deployed stack's service answers.
    const finals = [...replicas, ...extra]
      .flatMap((r) => r.records())
      .filter(
        (r) =>
          typeof r.job_id === 'string' &&
          jobs.includes(r.job_id) &&
          /^job (succeeded|failed|cancelled)$/.test(String(r.msg)),
      );
    expect(finals.map((r) => r.job_id).sort()).toEqual([...jobs].sort());
    const { rows: states } = await sql.query<{ id: string; status: string; error: string | null }>(
      `SELECT id, status, error FROM jobs WHERE id = ANY($1::uuid[])`,
      [jobs],
    );
    // A job only the dead replica had sent, and that its agent never got, is sent again; one its
    // agent had finished reports to the survivor it reconnects to. Whatever failed says why.
    for (const job of states) if (job.status !== 'succeeded') expect(job.error).toBeTruthy();
    for (const [i, stack] of stacks.entries()) {
      if (states.find((j) => j.id === jobs[i])?.status !== 'succeeded') continue;
      expect((await get(survivors[0].url, `/stacks/${stack.id}`)).body.status).toBe('deployed');
      expect(await httpGet(stack.port, '/health')).toMatchObject({ status: 200 });
    }
    console.log(`deploy storm: ${states.filter((j) => j.status === 'succeeded').length}/${STORM} succeeded`);
    // No worker blinked unreachable: none was silent past its timeout while it moved.
    const transitions = survivors.flatMap((s) => s.records()).filter((r) => r.to === 'unreachable');
    expect(transitions).toEqual([]);
    // The victim's leases were taken over: the sweeps run on a survivor.
    await eventually(async () => {
      const { rows: held } = await sql.query<{ holder: string }>(
        `SELECT holder FROM leases WHERE name IN ('jobs-sweep', 'worker-sweep') AND expires_at > clock_timestamp()`,
      );
      return held.length === 2 && held.every((h) => !h.holder.includes(`/${victim.child.pid}/`));
    }, 20_000);
  });

  it('a restarted replica rejoins and answers like the others', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'so-replica-rejoin-'));
    const survivor = live()[0];
    const again = await ServiceProcess.start({ ...survivor.env, DATA_DIR: dataDir });
    extra.push(again);
    try {
      await again.waitStarted();
      http.setBackends([...live(), again].map((r) => Number(new URL(r.url).port)));
      await eventually(async () => (await fetch(`${again.url}/health/ready`)).status === 200, 20_000);
      // Its first answers already know every session: no agent reads disconnected there.
      const first = await workers(again.url);
      expect(first.length).toBe(AGENTS);
      expect(first.every((w) => w.connected)).toBe(true);
      // Statuses agree within a heartbeat interval (a status can change between two reads).
      const view = async (svc: ServiceProcess) =>
        JSON.stringify(
          (await workers(svc.url)).map((w) => ({ id: w.id, status: w.status, connected: w.connected })),
        );
      await eventually(async () => (await view(again)) === (await view(survivor)), 3_000);
    } finally {
      await again.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('a worker deleted through a replica that does not hold its stream is cut off there too', async () => {
    const target = (await workers(lb())).find((w) => w.name === 'node-0')!;
    const { rows } = await sql.query<{ replica: string }>(
      `SELECT replica FROM agent_sessions WHERE worker_id = $1`,
      [target.id],
    );
    const holder = live().find((r) => rows[0].replica.includes(`/${r.child.pid}/`))!;
    const other = live().find((r) => r !== holder)!;
    expect((await call(other.url, 'DELETE', `/workers/${target.id}`)).status).toBe(204);
    await eventually(
      () => holder.records().some((r) => r.worker_id === target.id && r.msg === 'agent stream closed'),
      10_000,
    );
    expect((await workers(holder.url)).map((w) => w.id)).not.toContain(target.id);
  });
});
