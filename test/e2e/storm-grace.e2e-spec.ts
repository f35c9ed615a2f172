import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Leases } from '../../src/server/common/leases.js';
import { AGENT_BACKLOG_MARK } from '../../src/server/workers/workers.service.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { admissionBacklog, connectAgent, enrollAgent, sleep, STORM } from '../support/grpc-agent.js';

// A reconnect storm (issue 18, item 3): while agents wait for admission at the agent port, the
// control plane is behind, not the workers, so the unreachable sweep judges nobody; a worker whose
// agent really stopped is marked once the backlog has cleared for the margin (3 intervals, and at
// least an agent's welcome timeout plus its largest reconnect delay), or once the backlog has held
// the sweep off for WORKER_BACKLOG_HOLD_MAX. No restart here: the backlog, not a restart, holds it.

const { intervalMs: INTERVAL_MS, timeoutMs: TIMEOUT_MS, marginMs: MARGIN_MS } = STORM;

describe('agents waiting for admission hold the unreachable sweep off', () => {
  let db: TestDatabase;
  let t: TestApp | undefined;
  const closers: { close?(): void; stop?(): void }[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    for (const c of closers) (c.close ?? c.stop)?.();
    await t?.close({ drop: false });
    await db.drop();
  });

  async function api(app: TestApp, method: 'get' | 'post', path: string, body?: object) {
    const req = app.http[method](`/api/v1/orchestrator${path}`).set('Authorization', await app.adminAuth());
    return body ? req.send(body) : req;
  }
  const status = async (app: TestApp, id: string) =>
    (await api(app, 'get', `/workers/${id}`)).body.status as string;

  /**
   * A service with one worker heartbeating, past its restart grace; then agents queue at its
   * agent port, and the worker's agent stops. Returns what the test needs to go on.
   */
  async function stormWithSilentWorker(env: Record<string, string>) {
    const started = Date.now();
    const app = await startTestApp({ db, env: { ...STORM.env, ...env } });
    t = app;
    const token = (await api(app, 'post', '/join-tokens', { pre_approved: true })).body.token as string;
    const silent = await enrollAgent(app.url, token, `node-${started}`);
    const endpoint = (await api(app, 'get', '/info')).body.agent_endpoint as string;
    const agent = await connectAgent(endpoint, silent, INTERVAL_MS);
    closers.push(agent);
    await eventually(async () => (await status(app, silent.id)) === 'healthy', 15_000);
    // Past the restart grace: from here on, only the backlog can hold the sweep off.
    await sleep(Math.max(0, started + TIMEOUT_MS + INTERVAL_MS - Date.now()));
    const backlog = admissionBacklog(Number(endpoint.split(':').at(-1)));
    closers.push(backlog);
    const leases = new Leases(app.app.get(DataSource));
    await eventually(async () => ((await leases.expiredFor(AGENT_BACKLOG_MARK)) ?? 1) < 0, 10_000);
    agent.close();
    const stopped = Date.now();
    let goneAt: number | undefined;
    let watching = true;
    const watch = (async () => {
      while (watching) {
        if ((await status(app, silent.id)) === 'unreachable') goneAt ??= Date.now();
        await sleep(100);
      }
    })();
    return {
      app,
      leases,
      backlog,
      stopped,
      goneAt: () => goneAt,
      stopWatching: async () => {
        watching = false;
        await watch;
      },
    };
  }

  it('marks nobody while the backlog lasts, and a silent worker once it has cleared for the margin', async () => {
    const storm = await stormWithSilentWorker({});
    // Twice the timeout of silence, agents queued throughout: nothing is marked.
    await sleep(2 * TIMEOUT_MS);
    expect(storm.goneAt()).toBeUndefined();
    expect(storm.app.logs.text()).toContain('the unreachable sweep holds off');
    storm.backlog.stop();
    const cleared = Date.now();
    await eventually(() => storm.goneAt() !== undefined, MARGIN_MS + 20_000, 200);
    await storm.stopWatching();
    expect(storm.goneAt()! - cleared).toBeGreaterThanOrEqual(MARGIN_MS - STORM.samplingMs);
    expect(storm.app.logs.text()).toContain('the unreachable sweep judges silent workers again');
    await t?.close({ drop: false });
    t = undefined;
  }, 120_000);

  it('judges again once the backlog has held the sweep off for WORKER_BACKLOG_HOLD_MAX', async () => {
    const limit = 3 * TIMEOUT_MS;
    const storm = await stormWithSilentWorker({ WORKER_BACKLOG_HOLD_MAX: `${limit}ms` });
    await eventually(() => storm.goneAt() !== undefined, 30_000, 200);
    await storm.stopWatching();
    // The backlog still lasts (its marker runs): the limit, not its end, let the sweep judge.
    expect(await storm.leases.expiredFor(AGENT_BACKLOG_MARK)).toBeLessThan(0);
    // Held off for the limit first (it counts from the first sweep that saw the backlog, which the
    // test saw before it stopped the agent; within a sweep's interval), not judged at 3 intervals.
    expect(storm.goneAt()! - storm.stopped).toBeGreaterThanOrEqual(limit - INTERVAL_MS);
    storm.backlog.stop();
  }, 120_000);
});
