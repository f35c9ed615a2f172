import type { Response } from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';

const STACK = `
name: headers
stackkit: basement-kit
variant: default
services:
  web:
    command: ["/bin/true"]
    env:
      API_KEY: "\${API_KEY}"
`;

describe('security headers', () => {
  let t: TestApp;
  let auth: string;
  beforeAll(async () => {
    t = await startTestApp();
    auth = await t.adminAuth();
  });
  afterAll(() => t.close());

  function expectLockedDown(res: Response, cache = 'no-store'): void {
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    const csp = res.headers['content-security-policy'];
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['cache-control']).toBe(cache);
  }

  it('on responses that carry a secret or a definition, nothing may be cached', async () => {
    const api = '/api/v1';
    const client = await t.http
      .post(`${api}/auth/clients`)
      .set('Authorization', auth)
      .send({ name: 'h', scopes: ['orchestrator:read'] })
      .expect(201);
    expectLockedDown(client);
    expectLockedDown(await t.http.get(`${api}/auth/clients`).set('Authorization', auth).expect(200));
    const joinToken = await t.http
      .post(`${api}/orchestrator/join-tokens`)
      .set('Authorization', auth)
      .send({})
      .expect(201);
    expectLockedDown(joinToken);
    expectLockedDown(
      await t.http.get(`${api}/orchestrator/join-tokens`).set('Authorization', auth).expect(200),
    );
    const stack = await t.http
      .post(`${api}/orchestrator/stacks`)
      .set('Authorization', auth)
      .set('Content-Type', 'application/yaml')
      .send(STACK)
      .expect(201);
    expectLockedDown(stack);
    const id = stack.body.id as string;
    expectLockedDown(await t.http.get(`${api}/orchestrator/stacks`).set('Authorization', auth).expect(200));
    expectLockedDown(
      await t.http.get(`${api}/orchestrator/stacks/${id}`).set('Authorization', auth).expect(200),
    );
    expectLockedDown(
      await t.http.get(`${api}/orchestrator/stacks/${id}/revisions`).set('Authorization', auth).expect(200),
    );
    expectLockedDown(
      await t.http.get(`${api}/orchestrator/stacks/${id}/revisions/1`).set('Authorization', auth).expect(200),
    );
    const token = await t.http
      .post('/oauth/token')
      .send({ grant_type: 'refresh_token', refresh_token: (await t.token()).refresh_token })
      .expect(200);
    expectLockedDown(token);
    expect(token.headers.pragma).toBe('no-cache');
  });

  it('on problems, probes, metrics and the public key set alike', async () => {
    expectLockedDown(await t.http.get('/api/v1/orchestrator/nope').set('Authorization', auth).expect(404));
    expectLockedDown(await t.http.get('/api/v1/orchestrator/info').expect(401));
    expectLockedDown(await t.http.post('/oauth/token').send({}).expect(400));
    expectLockedDown(await t.http.get('/health/live').expect(200));
    expectLockedDown(await t.http.get('/health/ready').expect(200));
    expectLockedDown(await t.http.get('/api/v1/orchestrator/health').expect(200));
    expectLockedDown(await t.http.get('/metrics').expect(200));
    // The key set is public and may be cached briefly; it is locked down otherwise.
    expectLockedDown(await t.http.get('/.well-known/jwks.json').expect(200), 'public, max-age=60');
  });
});
