import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, startTestApp, type TestApp } from '../support/app.js';
import { serviceSigningKey, sign } from '../support/tokens.js';
import { CLOCK_TOLERANCE_S } from '../../src/server/auth/token-cache.js';

// The verified-token cache on one replica (docs/security.md): a token answered from memory is still
// refused as soon as its client is disabled or deleted, its refresh family revoked, or it expires.
describe('verified-token cache', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const info = (authorization: string) =>
    t.http.get('/api/v1/orchestrator/info').set('Authorization', authorization);
  const newClient = async (name: string) => {
    const res = await t.http
      .post('/api/v1/auth/clients')
      .set('Authorization', await t.adminAuth())
      .send({ name, scopes: ['orchestrator:read'] })
      .expect(201);
    return { clientId: res.body.client_id as string, secret: res.body.client_secret as string };
  };

  it("a disabled client's cached token is refused at once, a deleted client's too", async () => {
    for (const change of ['disable', 'delete'] as const) {
      const client = await newClient(`cached-${change}`);
      const token = `Bearer ${(await t.token(client)).access_token}`;
      // Twice: the second answer comes from the cache.
      await info(token).expect(200);
      await info(token).expect(200);
      if (change === 'disable')
        await t.http
          .patch(`/api/v1/auth/clients/${client.clientId}`)
          .set('Authorization', await t.adminAuth())
          .send({ disabled: true })
          .expect(200);
      else
        await t.http
          .delete(`/api/v1/auth/clients/${client.clientId}`)
          .set('Authorization', await t.adminAuth())
          .expect(204);
      const refused = await info(token);
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toContain('error="invalid_token"');
    }
  });

  it("a revoked family's access tokens are refused, cached or not", async () => {
    const client = await newClient('family');
    const first = await t.token(client);
    const cached = `Bearer ${first.access_token}`;
    await info(cached).expect(200);
    const second = await t.http
      .post('/oauth/token')
      .send({ grant_type: 'refresh_token', refresh_token: first.refresh_token })
      .expect(200);
    // Reusing the redeemed refresh token revokes the whole family.
    const reuse = await t.http
      .post('/oauth/token')
      .send({ grant_type: 'refresh_token', refresh_token: first.refresh_token });
    expect(reuse.body.error).toBe('invalid_grant');
    const refused = await info(cached);
    expect(refused.status).toBe(401);
    expect(refused.body.detail).toContain('revoked');
    // The successor never reached the cache: refused on verification.
    await info(`Bearer ${second.body.access_token as string}`).expect(401);
    // The client itself is fine: a new grant starts a new family.
    await info(`Bearer ${(await t.token(client)).access_token}`).expect(200);
  });

  it('an expired token is refused even though it was cached', async () => {
    const { kid, key } = await serviceSigningKey(t.app);
    const now = Math.floor(Date.now() / 1000);
    const token = await sign(
      key,
      { alg: 'ES256', typ: 'at+jwt', kid },
      {
        iss: 'http://127.0.0.1',
        aud: 'stack-orchestrator',
        sub: ADMIN.clientId,
        client_id: ADMIN.clientId,
        owner: 'default',
        scope: 'orchestrator:read',
        jti: 'expiring',
        iat: now,
        exp: now + 2,
      },
    );
    await info(`Bearer ${token}`).expect(200);
    // Past its expiry and the verifier's clock tolerance (a wait, not a timed assertion).
    const expired = (now + 2 + CLOCK_TOLERANCE_S) * 1000 + 200;
    await new Promise((r) => setTimeout(r, Math.max(0, expired - Date.now())));
    const refused = await info(`Bearer ${token}`);
    expect(refused.status).toBe(401);
    expect(refused.body.detail).toContain('expired');
  });
});
