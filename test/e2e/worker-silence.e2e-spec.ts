import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkersService } from '../../src/server/workers/workers.service.js';
import { AgentProcess } from '../support/agent-process.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { createPostgresDatabase } from '../support/database.js';

// How a replica judges the silence of the agents whose streams it holds (3 heartbeat intervals)
// when it is the one that was slow: a real agent in its own process keeps heartbeating while the
// service's event loop stalls. About the event loop, not the database: vitest.config.ts runs this
// file once per full test run, on PostgreSQL.

const INTERVAL_MS = 400;

interface Worker {
  id: string;
  name: string;
  status: string;
}

describe('silence judged by the replica holding the stream', () => {
  let t: TestApp;
  let agent: AgentProcess | undefined;

  beforeAll(async () => {
    t = await startTestApp({
      db: await createPostgresDatabase(),
      env: {
        HEARTBEAT_INTERVAL: `${INTERVAL_MS}ms`,
        WORKER_DEGRADED_PERCENT: '100',
        WORKER_UNHEALTHY_PERCENT: '100',
      },
    });
  });
  afterAll(async () => {
    await agent?.stop('SIGKILL');
    await t.close();
  });

  const api = async (method: 'get' | 'post', path: string, body?: object) => {
    const req = t.http[method](`/api/v1/orchestrator${path}`).set('Authorization', await t.adminAuth());
    return body ? req.send(body) : req;
  };
  const workerNamed = async (name: string) =>
    ((await api('get', '/workers?limit=100')).body.workers as Worker[]).find((w) => w.name === name);

  it('a service stalled past the timeout reads the heartbeats waiting in its sockets before it judges', async () => {
    const token = await api('post', '/join-tokens', { pre_approved: true });
    expect(token.status).toBe(201);
    agent = AgentProcess.start({ server: t.url, token: token.body.token as string, name: 'node-stall' });
    let worker: Worker | undefined;
    await eventually(
      async () => /^(healthy|degraded)$/.test((worker = await workerNamed('node-stall'))?.status ?? ''),
      20_000,
    );
    // The service's event loop stalls for longer than the silence timeout in the worker tick
    // itself, where a flush that wrote heartbeats returns (a callback of the poll phase), while the
    // agent's heartbeats queue in the socket. Silence is judged later in that tick: it must read
    // the sockets first. Three times, at least a second apart.
    const workers = t.app.get<WorkersService, { flush: () => Promise<void>; dirtyIds: Set<string> }>(
      WorkersService,
    );
    const flush = workers.flush.bind(workers);
    const stallMs = 4 * INTERVAL_MS;
    let stalled = 0;
    let calm = performance.now();
    workers.flush = async () => {
      const writes = workers.dirtyIds.size > 0;
      await flush();
      if (!writes || stalled >= 3 || performance.now() - calm < 1000) return;
      const end = performance.now() + stallMs;
      while (performance.now() < end);
      calm = performance.now();
      stalled++;
    };
    try {
      await eventually(() => stalled === 3, 20_000, 50);
      // The ticks after the last stall have run.
      await new Promise((r) => setTimeout(r, 1000));
    } finally {
      Reflect.deleteProperty(workers, 'flush');
    }
    const records = t.logs.records() as { worker_id?: string; msg?: string; to?: string }[];
    const mine = records.filter((r) => r.worker_id === worker!.id);
    // One stream throughout, so the stream's holder was the only judge.
    expect(mine.filter((r) => r.msg === 'agent connected')).toHaveLength(1);
    expect(mine.filter((r) => r.to === 'unreachable')).toEqual([]);
    expect((await workerNamed('node-stall'))?.status).toMatch(/^(healthy|degraded)$/);
  });
});
