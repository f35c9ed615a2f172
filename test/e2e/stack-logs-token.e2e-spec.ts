import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StackLogsService } from '../../src/server/stack-monitoring/stack-logs.service.js';
import { CLOCK_TOLERANCE_S } from '../../src/server/auth/token-cache.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { followLogs, type Followed } from '../support/followed-logs.js';
import { requireBuilt, startStackctl } from '../support/stackctl.js';

const SSE = { accept: 'text/event-stream' };
const endEvent = (reason: string) => `event: end\ndata: {"reason":"${reason}"}\n\n`;
/** The `line` events of a server-sent event stream: their ids and lines. */
const lineEvents = (body: string) =>
  [...body.matchAll(/^id: (\d+)\nevent: line\ndata: (.*)$/gm)].map(([, id, data]) => ({
    id,
    line: (JSON.parse(data) as { line: string }).line,
  }));

const TTL_S = 10;

/**
 * A followed log outlives the request that opened it, so it ends when its token stops verifying
 * (docs/stack-logs.md, "Following"): the client deleted or disabled, the grant revoked, or the token
 * expired. The clients here never close their ends; only the service can end these responses.
 */
describe('followed stack logs end with their token', () => {
  let t: TestApp;
  const open: Followed[] = [];

  const follow = async (stackId: string, auth: string, headers: Record<string, string> = SSE) => {
    const followed = await followLogs(t.url, stackId, auth, headers);
    open.push(followed);
    return followed;
  };

  /** A client of its own owner with a stack; its token pair. */
  const tenant = async (name: string) => {
    const created = await t.http
      .post('/api/v1/auth/clients')
      .set('Authorization', `Bearer ${(await t.token()).access_token}`)
      .send({ name, owner: name, scopes: ['orchestrator:read', 'orchestrator:write'] });
    expect(created.status, created.text).toBe(201);
    const clientId = created.body.client_id as string;
    const pair = await t.token({ clientId, secret: created.body.client_secret as string });
    const auth = `Bearer ${pair.access_token}`;
    const stack = await t.http
      .post('/api/v1/orchestrator/stacks')
      .set('Authorization', auth)
      .set('Content-Type', 'application/yaml')
      .send(
        `name: ${name}\nstackkit: basement-kit\nservices:\n  web:\n    command: ["/bin/true"]\n    resources: { cpu: 0.1, memory: 32Mi }\n`,
      );
    expect(stack.status, stack.text).toBe(201);
    return {
      clientId,
      secret: created.body.client_secret as string,
      pair,
      auth,
      stackId: stack.body.id as string,
    };
  };

  // Lines as the writer stores them, without an agent: the writer takes lines only from the worker
  // the stack runs on, and following needs lines, not a deployment.
  const say = (stackId: string, ...lines: string[]) =>
    t.app.get(DataSource).query(
      `INSERT INTO stack_logs (stack_id, worker_id, service, time, stream, line)
       SELECT $1, $2, 'web', now(), 'stdout', l FROM unnest($3::text[]) WITH ORDINALITY AS u (l, n) ORDER BY n`,
      [stackId, randomUUID(), lines],
    );

  /** Follows, and checks the stream is open and stays open while nothing happens. */
  const following = async (stackId: string, auth: string, headers?: Record<string, string>) => {
    const followed = await follow(stackId, auth, headers);
    expect(followed.res.statusCode).toBe(200);
    const early = await Promise.race([followed.ended.then(() => 'ended'), sleep(1_500).then(() => 'open')]);
    expect(early).toBe('open');
    return followed;
  };

  beforeAll(async () => {
    requireBuilt();
    t = await startTestApp({ env: { ACCESS_TOKEN_TTL: `${TTL_S}s` } });
  });
  afterAll(async () => {
    for (const f of open) f.close();
    await t?.close();
  });

  it('ends when its client is deleted, and when its client is disabled', async () => {
    for (const change of ['delete', 'disable'] as const) {
      const a = await tenant(`logs-${change}`);
      // NDJSON has no room for an end event: the response just ends.
      const ndjson = await following(a.stackId, a.auth, { accept: 'application/x-ndjson' });
      const followed = await following(a.stackId, a.auth);
      const admin = `Bearer ${(await t.token()).access_token}`;
      const res =
        change === 'delete'
          ? await t.http.delete(`/api/v1/auth/clients/${a.clientId}`).set('Authorization', admin)
          : await t.http
              .patch(`/api/v1/auth/clients/${a.clientId}`)
              .set('Authorization', admin)
              .send({ disabled: true });
      expect(res.status, res.text).toBe(change === 'delete' ? 204 : 200);
      await withinMs(followed.ended, 5_000);
      await withinMs(ndjson.ended, 5_000);
      expect(followed.res.complete).toBe(true);
      expect(followed.body().endsWith(endEvent('client_revoked'))).toBe(true);
      expect(ndjson.body()).toBe('');
      expect((await follow(a.stackId, a.auth)).res.statusCode).toBe(401);
    }
    await eventually(() => t.app.get(StackLogsService).streaming === 0, 5_000);
  });

  it('ends when its grant is revoked (a refresh token used twice)', async () => {
    const a = await tenant('logs-family');
    const followed = await following(a.stackId, a.auth);
    const refresh = { grant_type: 'refresh_token', refresh_token: a.pair.refresh_token };
    expect((await t.http.post('/oauth/token').send(refresh)).status).toBe(200);
    expect((await t.http.post('/oauth/token').send(refresh)).status).toBe(400);
    await withinMs(followed.ended, 5_000);
    expect(followed.res.complete).toBe(true);
    expect(followed.body().endsWith(endEvent('grant_revoked'))).toBe(true);
  });

  it('Last-Event-ID goes on after that line; one that is not a line id is a 422', async () => {
    const a = await tenant('logs-resume');
    await say(a.stackId, 'one', 'two', 'three');
    const first = await following(a.stackId, a.auth);
    await eventually(() => lineEvents(first.body()).length === 3, 5_000);
    const seen = lineEvents(first.body());
    expect(seen.map((e) => e.line)).toEqual(['one', 'two', 'three']);
    first.close();

    const resumed = await following(a.stackId, a.auth, { ...SSE, 'last-event-id': seen[0].id });
    await say(a.stackId, 'four');
    await eventually(() => lineEvents(resumed.body()).length === 3, 5_000);
    expect(lineEvents(resumed.body())).toEqual([...seen.slice(1), { id: expect.any(String), line: 'four' }]);
    resumed.close();

    for (const bad of ['abc', '-1', '1e3', '9'.repeat(19)]) {
      const refused = await follow(a.stackId, a.auth, { ...SSE, 'last-event-id': bad });
      await refused.ended;
      expect(refused.res.statusCode, bad).toBe(422);
      expect(JSON.parse(refused.body())).toMatchObject({
        code: 'validation_failed',
        errors: [{ path: 'Last-Event-ID' }],
      });
    }
  });

  it('ends when its token expires, and not before; stackctl --follow goes on with a fresh token', async () => {
    const a = await tenant('logs-expiry');
    await say(a.stackId, 'before');
    const followed = await following(a.stackId, a.auth);
    const cli = startStackctl(
      ['stacks', 'logs', a.stackId, '--follow'],
      { STACKCTL_SERVER: t.url, STACKCTL_CLIENT_ID: a.clientId, STACKCTL_CLIENT_SECRET: a.secret },
      { secrets: [a.secret, a.pair.access_token, a.pair.refresh_token] },
    );
    await eventually(() => cli.stdoutSoFar().includes('web stdout before'), 10_000);
    const [, payload] = a.pair.access_token.split('.');
    const exp = (JSON.parse(Buffer.from(payload, 'base64url').toString()) as { exp: number }).exp;
    const endsAt = (exp + CLOCK_TOLERANCE_S) * 1000;
    await followed.ended;
    // The verifier accepts the token until its exp plus the clock tolerance; the stream ends then.
    expect(Date.now()).toBeGreaterThanOrEqual(endsAt - 50);
    expect(Date.now()).toBeLessThan(endsAt + 3_000);
    expect(followed.res.complete).toBe(true);
    expect(followed.body().endsWith(endEvent('token_expired'))).toBe(true);

    // stackctl's stream (its own token, taken a moment later) ends the same way; it follows on.
    const expired = () =>
      t.logs
        .records()
        .filter(
          (r) => r.msg === 'followed log ended: its token no longer verifies' && r.reason === 'token_expired',
        );
    await eventually(() => expired().length === 2, 10_000);
    await say(a.stackId, 'after');
    await eventually(() => cli.stdoutSoFar().includes('web stdout after'), 10_000);
    cli.kill('SIGINT');
    const run = await cli.done;
    expect(run.stdout.match(/web stdout (before|after)$/gm)).toEqual([
      'web stdout before',
      'web stdout after',
    ]);
    expect(run.stderr).toBe('');
  }, 40_000);

  it('stackctl --follow fails, saying why, when its client is deleted', async () => {
    const a = await tenant('logs-cli-revoked');
    const cli = startStackctl(
      ['stacks', 'logs', a.stackId, '--follow'],
      { STACKCTL_SERVER: t.url, STACKCTL_CLIENT_ID: a.clientId, STACKCTL_CLIENT_SECRET: a.secret },
      { secrets: [a.secret] },
    );
    await eventually(() => t.app.get(StackLogsService).streaming === 1, 10_000);
    const admin = `Bearer ${(await t.token()).access_token}`;
    expect(
      (await t.http.delete(`/api/v1/auth/clients/${a.clientId}`).set('Authorization', admin)).status,
    ).toBe(204);
    const run = await cli.done;
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('the service ended the stream: this client was disabled or deleted.');
  });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function withinMs(ended: Promise<void>, ms: number): Promise<void> {
  const result = await Promise.race([ended.then(() => 'ended'), sleep(ms).then(() => 'open')]);
  expect(result, `the stream was still open after ${ms} ms`).toBe('ended');
}
