import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';

describe('rate limits', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      env: {
        AUTH_FAILURE_LIMIT: '3',
        AUTH_FAILURE_ADDRESS_LIMIT: '6',
        AUTH_FAILURE_WINDOW: '1m',
        RATE_LIMIT_REQUESTS: '15',
        RATE_LIMIT_WINDOW: '1m',
      },
    });
  });
  afterAll(() => t.close());

  /** A token request sent from `from`, a loopback address of the test's choosing. */
  const attempt = (clientId: string, secret: string, from = '127.0.0.1') =>
    new Promise<{ status: number; body: Record<string, unknown>; retryAfter: string | undefined }>(
      (resolve, reject) => {
        const payload = JSON.stringify({
          grant_type: 'client_credentials',
          client_id: clientId,
          client_secret: secret,
        });
        const req = request(
          `${t.url}/oauth/token`,
          { method: 'POST', localAddress: from, headers: { 'content-type': 'application/json' } },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => (text += chunk));
            res.on('end', () =>
              resolve({
                status: res.statusCode ?? 0,
                body: JSON.parse(text) as Record<string, unknown>,
                retryAfter: res.headers['retry-after'],
              }),
            );
          },
        );
        req.on('error', reject);
        req.end(payload);
      },
    );

  const newClient = async (name: string) =>
    (
      await t.http
        .post('/api/v1/auth/clients')
        .set('Authorization', await t.adminAuth())
        .send({ name, scopes: ['orchestrator:read'] })
        .expect(201)
    ).body as { client_id: string; client_secret: string };

  it('a guesser of one client is refused with 429 and Retry-After, even with the right secret', async () => {
    const target = await newClient('target');
    for (let i = 0; i < 3; i++)
      expect((await attempt(target.client_id, 'guess', '127.0.0.2')).status).toBe(401);
    const blocked = await attempt(target.client_id, target.client_secret, '127.0.0.2');
    expect(blocked.status).toBe(429);
    expect(blocked.body.error).toBe('temporarily_unavailable');
    const retryAfter = Number(blocked.retryAfter);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
  });

  it('never locks the client out for callers elsewhere: the right secret from another address works', async () => {
    const target = await newClient('victim');
    for (let i = 0; i < 5; i++) await attempt(target.client_id, 'guess', '127.0.0.3');
    expect((await attempt(target.client_id, target.client_secret, '127.0.0.3')).status).toBe(429);
    const elsewhere = await attempt(target.client_id, target.client_secret, '127.0.0.4');
    expect(elsewhere.status).toBe(200);
    expect(typeof elsewhere.body.access_token).toBe('string');
  });

  it('counts failures per address too: past its limit, any client id from it is refused', async () => {
    // AUTH_FAILURE_ADDRESS_LIMIT is 6: spraying six ids spends the address's budget.
    for (let i = 0; i < 6; i++)
      expect((await attempt(`sprayed-${i}`, 'guess', '127.0.0.5')).status).toBe(401);
    const target = await newClient('sprayed-target');
    const res = await attempt(target.client_id, target.client_secret, '127.0.0.5');
    expect(res.status).toBe(429);
    expect(res.retryAfter).toBeDefined();
    expect((await attempt(target.client_id, target.client_secret, '127.0.0.6')).status).toBe(200);
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
