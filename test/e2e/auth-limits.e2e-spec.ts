import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';

describe('rate limits', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      env: {
        AUTH_FAILURE_LIMIT: '3',
        AUTH_FAILURE_WINDOW: '1m',
        RATE_LIMIT_REQUESTS: '15',
        RATE_LIMIT_WINDOW: '1m',
      },
    });
  });
  afterAll(() => t.close());

  const attempt = (clientId: string, secret: string) =>
    t.http
      .post('/oauth/token')
      .send({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret });

  it('repeated failed authentication of one client id gets 429 with Retry-After, even with the right secret', async () => {
    const created = await t.http
      .post('/api/v1/auth/clients')
      .set('Authorization', await t.adminAuth())
      .send({ name: 'target', scopes: ['orchestrator:read'] })
      .expect(201);
    const id = created.body.client_id as string;
    for (let i = 0; i < 3; i++) expect((await attempt(id, 'guess')).status).toBe(401);
    const blocked = await attempt(id, created.body.client_secret as string);
    expect(blocked.status).toBe(429);
    expect(blocked.body.error).toBe('temporarily_unavailable');
    const retryAfter = Number(blocked.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
  });

  it('counts failures per address too: after the limit, any client id from it is refused', async () => {
    // The previous test spent this address's budget (3 failures).
    const res = await attempt('some-other-client', 'guess');
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBeDefined();
  });

  it('limits the requests of one client per window with a 429 problem and Retry-After', async () => {
    const auth = await t.adminAuth();
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++)
      statuses.push((await t.http.get('/api/v1/orchestrator/info').set('Authorization', auth)).status);
    // adminAuth's client already made a couple of requests in this window; the limit is 15.
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(15);
    expect(statuses).toContain(429);
    const limited = await t.http.get('/api/v1/orchestrator/info').set('Authorization', auth);
    expect(limited.status).toBe(429);
    expect(limited.body.code).toBe('rate_limited');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    // Public routes are not counted against anyone.
    await t.http.get('/api/v1/orchestrator/health').expect(200);
  });
});
