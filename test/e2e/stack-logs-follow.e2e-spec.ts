import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_FOLLOWERS, StackLogsService } from '../../src/server/stack-monitoring/stack-logs.service.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { followLogs, type Followed } from '../support/followed-logs.js';
import { orchestrator } from '../support/stacks.js';

/**
 * The limits of followed log streams (docs/stack-logs.md, "Following"): a replica serves at most
 * MAX_FOLLOWERS at once and refuses the next with 429; shutting the service down ends every open
 * stream instead of waiting for its client. A stack that was never deployed is enough: following
 * needs the stack, not lines.
 */
describe('followed stack logs: the per-replica limit and shutdown', () => {
  let t: TestApp;
  let stackId: string;
  let auth: string;
  const open: Followed[] = [];
  let appClosed = false;

  const follow = async () => {
    const followed = await followLogs(t.url, stackId, auth);
    if (followed.res.statusCode === 200) open.push(followed);
    return followed;
  };

  beforeAll(async () => {
    t = await startTestApp();
    auth = await t.adminAuth();
    const created = await orchestrator(t).yaml(
      'post',
      '/stacks',
      `name: quiet
stackkit: basement-kit
services:
  web:
    command: ["/bin/true"]
    resources: { cpu: 0.1, memory: 32Mi }
`,
    );
    expect(created.status).toBe(201);
    stackId = created.body.id as string;
  });

  afterAll(async () => {
    for (const f of open) f.close();
    if (appClosed) await t.db.drop();
    else await t?.close();
  });

  it(`serves ${MAX_FOLLOWERS} followed streams, refuses the next with 429 and Retry-After, and takes one again when a stream ends`, async () => {
    const streams = t.app.get(StackLogsService);
    const first = await Promise.all(Array.from({ length: MAX_FOLLOWERS }, () => follow()));
    expect(first.map((f) => f.res.statusCode)).toEqual(Array.from({ length: MAX_FOLLOWERS }, () => 200));
    expect(streams.streaming).toBe(MAX_FOLLOWERS);

    const refused = await follow();
    expect(refused.res.statusCode).toBe(429);
    expect(refused.res.headers['retry-after']).toBe('10');
    expect(refused.res.headers['content-type']).toMatch(/^application\/problem\+json/);
    await refused.ended;
    expect(JSON.parse(refused.body())).toMatchObject({ status: 429, code: 'rate_limited' });
    // A plain read is not a followed stream: it is still served.
    const read = await t.http.get(`/api/v1/orchestrator/stacks/${stackId}/logs`).set('Authorization', auth);
    expect(read.status).toBe(200);

    open.shift()!.close();
    await eventually(() => streams.streaming === MAX_FOLLOWERS - 1, 5_000);
    expect((await follow()).res.statusCode).toBe(200);
    expect(streams.streaming).toBe(MAX_FOLLOWERS);
  });

  it('ends every open stream when the service shuts down, without waiting for the clients', async () => {
    expect(open).toHaveLength(MAX_FOLLOWERS);
    const ends = open.map((f) => f.ended);
    // The clients keep their ends open; only the service's shutdown can end these responses.
    appClosed = true;
    await t.app.close();
    await Promise.all(ends);
    expect(open.every((f) => f.res.complete)).toBe(true);
  });
});
