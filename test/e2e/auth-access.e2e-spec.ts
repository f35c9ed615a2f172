import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { ModulesContainer } from '@nestjs/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PUBLIC_ROUTE, REQUIRED_SCOPES } from '../../src/server/auth/auth.decorators.js';
import { ADMIN, startTestApp, type TestApp } from '../support/app.js';

interface Created {
  client_id: string;
  client_secret: string;
}

describe('access control', () => {
  let t: TestApp;
  const bearer = (token: string) => `Bearer ${token}`;
  const tokenWith = async (scope: string) => bearer((await t.token(ADMIN, scope)).access_token);

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('every route is either public or declares the scopes it needs', () => {
    const undeclared: string[] = [];
    const declared: string[] = [];
    for (const module of t.app.get(ModulesContainer).values()) {
      for (const wrapper of module.controllers.values()) {
        const type = wrapper.metatype as (new (...args: never[]) => object) | null;
        if (!type) continue;
        for (const name of Object.getOwnPropertyNames(type.prototype)) {
          const handler = (type.prototype as Record<string, unknown>)[name];
          if (name === 'constructor' || typeof handler !== 'function') continue;
          if (Reflect.getMetadata(PATH_METADATA, handler) === undefined) continue;
          const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as number];
          const label = `${type.name}.${name} (${method})`;
          const isPublic =
            Reflect.getMetadata(PUBLIC_ROUTE, handler) ?? Reflect.getMetadata(PUBLIC_ROUTE, type);
          const scopes =
            Reflect.getMetadata(REQUIRED_SCOPES, handler) ?? Reflect.getMetadata(REQUIRED_SCOPES, type);
          (isPublic === true || Array.isArray(scopes) ? declared : undeclared).push(label);
        }
      }
    }
    expect(undeclared).toEqual([]);
    expect(declared.length).toBeGreaterThan(10);
  });

  it.each([
    '/health/live',
    '/health/ready',
    '/health/startup',
    '/metrics',
    '/api/v1/orchestrator/health',
    '/v1/orchestrator/health',
    '/.well-known/jwks.json',
  ])('%s needs no token', async (path) => {
    await t.http.get(path).expect(200);
  });

  // A representative route of each module, the scope it needs, and a token that lacks it.
  it.each([
    ['health: info', 'get', '/api/v1/orchestrator/info', 'tunnel:read'],
    ['settings: read', 'get', '/v1/orchestrator/settings', 'metrics:read'],
    ['settings: change', 'patch', '/api/v1/orchestrator/settings', 'orchestrator:write'],
    ['audit', 'get', '/api/v1/orchestrator/audit', 'orchestrator:read'],
    ['auth: clients', 'get', '/api/v1/auth/clients', 'orchestrator:write'],
    ['auth: keys', 'post', '/api/v1/auth/keys/rotate', 'workers:admin'],
  ] as const)(
    '%s: 401 without a token, 403 with a token lacking the scope',
    async (_label, method, path, weakScope) => {
      const missing = await t.http[method](path).send({ log_level: 'info' });
      expect(missing.status).toBe(401);
      expect(missing.body.code).toBe('unauthorized');
      expect(missing.headers['www-authenticate']).toBe(
        'Bearer realm="stack-orchestrator", resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"',
      );

      const weak = await t.http[method](path)
        .set('Authorization', await tokenWith(weakScope))
        .send({ log_level: 'info' });
      expect(weak.status).toBe(403);
      expect(weak.body.code).toBe('forbidden');
      expect(weak.headers['www-authenticate']).toMatch(/error="insufficient_scope"/);
    },
  );

  it('a read scope opens the read routes, and any valid token opens validate', async () => {
    const read = await tokenWith('orchestrator:read');
    await t.http.get('/api/v1/orchestrator/info').set('Authorization', read).expect(200);
    await t.http.get('/api/v1/orchestrator/settings').set('Authorization', read).expect(200);
    const validate = await t.http
      .get('/v1/auth/validate')
      .set('Authorization', await tokenWith('tunnel:read'))
      .expect(200);
    expect(validate.body.scope).toBe('tunnel:read');
  });

  describe('clients and owners', () => {
    let acme: Created;
    let acmeAuth: string;

    beforeAll(async () => {
      const res = await t.http
        .post('/api/v1/auth/clients')
        .set('Authorization', await t.adminAuth())
        .send({ name: 'acme admin', owner: 'acme', scopes: ['admin'] })
        .expect(201);
      acme = res.body as Created;
      expect(res.body).toMatchObject({
        name: 'acme admin',
        owner: 'acme',
        scopes: ['admin'],
        disabled: false,
      });
      expect(acme.client_secret).toMatch(/^sos_/);
      expect(res.headers['cache-control']).toBe('no-store');
      acmeAuth = bearer(
        (await t.token({ clientId: acme.client_id, secret: acme.client_secret })).access_token,
      );
    });

    it('stores client secrets only as scrypt hashes', async () => {
      const { DataSource } = await import('typeorm');
      const rows = await t.app
        .get(DataSource)
        .query<{ secret_hash: string }[]>('SELECT secret_hash FROM oauth_clients');
      expect(rows.every((r) => r.secret_hash.startsWith('scrypt$'))).toBe(true);
      expect(JSON.stringify(rows)).not.toContain(acme.client_secret);
      expect(JSON.stringify(rows)).not.toContain(ADMIN.secret);
    });

    it("a second owner sees only its own clients, never the first owner's", async () => {
      const own = await t.http.get('/api/v1/auth/clients').set('Authorization', acmeAuth).expect(200);
      expect((own.body.clients as { client_id: string }[]).map((c) => c.client_id)).toEqual([acme.client_id]);
      expect(JSON.stringify(own.body)).not.toContain('client_secret');
      await t.http.get('/api/v1/auth/clients?owner=default').set('Authorization', acmeAuth).expect(403);
      // Another owner's client is simply not there (404, not 403).
      await t.http
        .delete(`/api/v1/auth/clients/${ADMIN.clientId}`)
        .set('Authorization', acmeAuth)
        .expect(404);
      await t.http
        .patch(`/api/v1/auth/clients/${ADMIN.clientId}`)
        .set('Authorization', acmeAuth)
        .send({ disabled: true })
        .expect(404);
    });

    it('a second owner cannot create clients for another owner, nor run instance-wide operations', async () => {
      await t.http
        .post('/api/v1/auth/clients')
        .set('Authorization', acmeAuth)
        .send({ name: 'x', owner: 'default', scopes: ['admin'] })
        .expect(403);
      await t.http
        .patch('/api/v1/orchestrator/settings')
        .set('Authorization', acmeAuth)
        .send({ log_level: 'debug' })
        .expect(403);
      await t.http.post('/api/v1/auth/keys/rotate').set('Authorization', acmeAuth).expect(403);
      const own = await t.http
        .post('/api/v1/auth/clients')
        .set('Authorization', acmeAuth)
        .send({ name: 'acme ci', scopes: ['orchestrator:read'] })
        .expect(201);
      expect(own.body.owner).toBe('acme');
    });

    it("the operator sees the first owner's clients by default and another owner's on request", async () => {
      const mine = await t.http
        .get('/api/v1/auth/clients')
        .set('Authorization', await t.adminAuth())
        .expect(200);
      expect((mine.body.clients as { owner: string }[]).every((c) => c.owner === 'default')).toBe(true);
      const theirs = await t.http
        .get('/api/v1/auth/clients?owner=acme')
        .set('Authorization', await t.adminAuth())
        .expect(200);
      expect((theirs.body.clients as { owner: string }[]).map((c) => c.owner)).toEqual(['acme', 'acme']);
    });

    it('lists clients page by page with a cursor', async () => {
      for (let i = 0; i < 3; i++) {
        await t.http
          .post('/api/v1/auth/clients')
          .set('Authorization', await t.adminAuth())
          .send({ name: `page-${i}`, scopes: ['metrics:read'] })
          .expect(201);
      }
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res = await t.http
          .get('/api/v1/auth/clients')
          .query({ limit: 2, ...(cursor ? { cursor } : {}) })
          .set('Authorization', await t.adminAuth())
          .expect(200);
        expect((res.body.clients as unknown[]).length).toBeLessThanOrEqual(2);
        seen.push(...(res.body.clients as { client_id: string }[]).map((c) => c.client_id));
        cursor = res.body.next_cursor as string | null;
      } while (cursor);
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen.length).toBeGreaterThanOrEqual(4);
      await t.http
        .get('/api/v1/auth/clients?cursor=garbage')
        .set('Authorization', await t.adminAuth())
        .expect(422);
      await t.http
        .get('/api/v1/auth/clients?limit=0')
        .set('Authorization', await t.adminAuth())
        .expect(422);
    });

    it.each([
      [{ scopes: ['admin'] }],
      [{ name: 'x', scopes: [] }],
      [{ name: 'x', scopes: ['root'] }],
      [{ name: 'x', scopes: ['admin'], owner: 'Not An Owner' }],
      [{ name: 'x', scopes: ['admin'], extra: 1 }],
      [{ name: 'x', scopes: ['orchestrator:read'], owner: null }],
    ])('refuses a bad client body %j with 422 and creates nothing', async (body) => {
      const before = await t.http
        .get('/api/v1/auth/clients?limit=200')
        .set('Authorization', await t.adminAuth());
      const res = await t.http
        .post('/api/v1/auth/clients')
        .set('Authorization', await t.adminAuth())
        .send(body);
      expect(res.status).toBe(422);
      const after = await t.http
        .get('/api/v1/auth/clients?limit=200')
        .set('Authorization', await t.adminAuth());
      expect(after.body.clients).toHaveLength((before.body.clients as unknown[]).length);
    });

    it('a disabled client gets no tokens and its tokens stop working; enabling restores it', async () => {
      const res = await t.http
        .post('/api/v1/auth/clients')
        .set('Authorization', await t.adminAuth())
        .send({ name: 'temp', scopes: ['orchestrator:read'] })
        .expect(201);
      const client = { clientId: res.body.client_id as string, secret: res.body.client_secret as string };
      const token = bearer((await t.token(client)).access_token);
      await t.http.get('/api/v1/orchestrator/info').set('Authorization', token).expect(200);
      await t.http
        .patch(`/api/v1/auth/clients/${client.clientId}`)
        .set('Authorization', await t.adminAuth())
        .send({ disabled: true })
        .expect(200);
      await t.http.get('/api/v1/orchestrator/info').set('Authorization', token).expect(401);
      const refused = await t.http
        .post('/oauth/token')
        .send({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.secret });
      expect(refused.body.error).toBe('invalid_client');
      await t.http
        .patch(`/api/v1/auth/clients/${client.clientId}`)
        .set('Authorization', await t.adminAuth())
        .send({ disabled: false })
        .expect(200);
      await t.http.get('/api/v1/orchestrator/info').set('Authorization', token).expect(200);
    });

    it('deleting a client revokes its tokens and refresh tokens; a client cannot delete itself', async () => {
      const res = await t.http
        .post('/api/v1/auth/clients')
        .set('Authorization', await t.adminAuth())
        .send({ name: 'gone', scopes: ['orchestrator:read'] })
        .expect(201);
      const client = { clientId: res.body.client_id as string, secret: res.body.client_secret as string };
      const pair = await t.token(client);
      await t.http
        .delete(`/api/v1/auth/clients/${client.clientId}`)
        .set('Authorization', await t.adminAuth())
        .expect(204);
      await t.http
        .get('/api/v1/orchestrator/info')
        .set('Authorization', bearer(pair.access_token))
        .expect(401);
      const refresh = await t.http
        .post('/oauth/token')
        .send({ grant_type: 'refresh_token', refresh_token: pair.refresh_token });
      expect(refresh.body.error).toBe('invalid_grant');
      await t.http
        .delete(`/api/v1/auth/clients/${client.clientId}`)
        .set('Authorization', await t.adminAuth())
        .expect(404);
      await t.http
        .delete(`/api/v1/auth/clients/${ADMIN.clientId}`)
        .set('Authorization', await t.adminAuth())
        .expect(409);
    });

    it('the audit trail records who did what, newest first, per owner', async () => {
      await t.http
        .post('/oauth/token')
        .send({ grant_type: 'client_credentials', client_id: acme.client_id, client_secret: 'wrong' })
        .expect(401);
      // The right secret with a NUL after it is not the secret.
      await t.http
        .post('/oauth/token')
        .send({
          grant_type: 'client_credentials',
          client_id: acme.client_id,
          client_secret: `${acme.client_secret}\u0000`,
        })
        .expect(401);
      // An unknown id is kept as sent (a typo to find); a secret sent as the id (the fields swapped) is not.
      for (const clientId of ['acme-typo', acme.client_secret])
        await t.http
          .post('/oauth/token')
          .send({ grant_type: 'client_credentials', client_id: clientId, client_secret: acme.client_id })
          .expect(401);
      const all = await t.http
        .get('/api/v1/orchestrator/audit?limit=200')
        .set('Authorization', await t.adminAuth())
        .expect(200);
      const events = all.body.events as {
        action: string;
        at: string;
        owner: string | null;
        actor: string | null;
        target: string | null;
        outcome: string;
        details: object;
      }[];
      const actions = new Set(events.map((e) => e.action));
      for (const action of [
        'token.issued',
        'auth.failed',
        'client.created',
        'client.updated',
        'client.deleted',
      ])
        expect(actions).toContain(action);
      const times = events.map((e) => Date.parse(e.at));
      expect([...times].sort((a, b) => b - a)).toEqual(times);
      const failure = events.find((e) => e.action === 'auth.failed' && e.target === acme.client_id);
      expect(failure).toMatchObject({ outcome: 'failure', owner: 'acme', details: { reason: 'bad_secret' } });
      expect(JSON.stringify(events)).not.toMatch(/sos_|rt_|eyJ/);
      const unknown = events.filter((e) => e.action === 'auth.failed' && e.owner === null).slice(0, 2);
      expect(unknown.map((e) => e.target)).toEqual([
        `(not kept: ${acme.client_secret.length} characters that look like a secret)`,
        'acme-typo',
      ]);
      expect(t.logs.text()).not.toContain(acme.client_secret);

      const acmeView = await t.http
        .get('/api/v1/orchestrator/audit?limit=200')
        .set('Authorization', acmeAuth)
        .expect(200);
      const acmeEvents = acmeView.body.events as { owner: string }[];
      expect(acmeEvents.length).toBeGreaterThan(0);
      expect(acmeEvents.every((e) => e.owner === 'acme')).toBe(true);

      const filtered = await t.http
        .get('/api/v1/orchestrator/audit?action=client.deleted')
        .set('Authorization', await t.adminAuth())
        .expect(200);
      expect((filtered.body.events as { action: string }[]).every((e) => e.action === 'client.deleted')).toBe(
        true,
      );
      expect(
        t.logs.records().some((r) => r.component === 'audit' && r.audit_action === 'client.deleted'),
      ).toBe(true);
    });

    it('pages through the audit trail without overlap', async () => {
      const first = await t.http
        .get('/api/v1/orchestrator/audit?limit=3')
        .set('Authorization', await t.adminAuth())
        .expect(200);
      const second = await t.http
        .get(`/api/v1/orchestrator/audit?limit=3&cursor=${first.body.next_cursor as string}`)
        .set('Authorization', await t.adminAuth())
        .expect(200);
      const ids = [
        ...(first.body.events as { id: string }[]),
        ...(second.body.events as { id: string }[]),
      ].map((e) => e.id);
      expect(new Set(ids).size).toBe(6);
      expect(Date.parse((second.body.events as { at: string }[])[0].at)).toBeLessThanOrEqual(
        Date.parse((first.body.events as { at: string }[])[2].at),
      );
    });
  });

  it('key rotation: a new kid signs, the old one stays published, old tokens keep working', async () => {
    const old = bearer((await t.token()).access_token);
    const oldKid = ((await t.http.get('/.well-known/jwks.json')).body.keys as { kid: string }[])[0].kid;
    const rotated = await t.http
      .post('/api/v1/auth/keys/rotate')
      .set('Authorization', await t.adminAuth())
      .expect(201);
    expect(rotated.body.retired).toEqual([oldKid]);
    expect(rotated.body.kid).not.toBe(oldKid);
    const jwks = (await t.http.get('/.well-known/jwks.json')).body.keys as { kid: string }[];
    expect(jwks.map((k) => k.kid).sort()).toEqual([oldKid, rotated.body.kid as string].sort());
    await t.http.get('/api/v1/orchestrator/info').set('Authorization', old).expect(200);
    const fresh = (await t.token()).access_token;
    expect(JSON.parse(Buffer.from(fresh.split('.')[0], 'base64url').toString()).kid).toBe(rotated.body.kid);
    const keys = await t.http
      .get('/api/v1/auth/keys')
      .set('Authorization', await t.adminAuth())
      .expect(200);
    const byKid = Object.fromEntries(
      (keys.body.keys as { kid: string; status: string; publish_until: string | null }[]).map((k) => [
        k.kid,
        k,
      ]),
    );
    expect(byKid[rotated.body.kid as string].status).toBe('signing');
    expect(byKid[oldKid].status).toBe('published');
    expect(Date.parse(byKid[oldKid].publish_until!)).toBeGreaterThan(Date.now() + 15 * 60 * 1000);
    const audit = await t.http
      .get('/api/v1/orchestrator/audit?action=keys.rotated')
      .set('Authorization', await t.adminAuth())
      .expect(200);
    expect(audit.body.events[0]).toMatchObject({
      action: 'keys.rotated',
      actor: ADMIN.clientId,
      target: rotated.body.kid,
      details: { retired: [oldKid] },
    });
  });
});
