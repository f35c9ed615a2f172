import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/app.js';
import { createPostgresDatabase, type TestDatabase } from '../support/database.js';
import { startReplicas, type ServiceProcess } from '../support/service-process.js';

// The verified-token cache with two replicas of the built service on one PostgreSQL database: a
// client disabled or a family revoked through one replica is refused by the other, which had the
// token cached, within the revocation poll (docs/security.md). PostgreSQL whatever TEST_DB says;
// vitest.config.ts keeps this file out of the pglite pass.
describe('verified-token cache across replicas', () => {
  let db: TestDatabase;
  let replicas: ServiceProcess[] = [];
  let stopReplicas: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    db = await createPostgresDatabase();
    ({ replicas, stop: stopReplicas } = await startReplicas(db.databaseUrl ?? '', 2));
  });
  afterAll(async () => {
    await stopReplicas?.();
    await db.drop();
  });

  const info = async (svc: ServiceProcess, authorization: string) =>
    (await fetch(`${svc.url}/api/v1/orchestrator/info`, { headers: { authorization } })).status;
  const post = async (svc: ServiceProcess, path: string, body: object, authorization?: string) => {
    const res = await fetch(`${svc.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, string> };
  };
  const newClient = async (svc: ServiceProcess, name: string, scopes = ['orchestrator:read']) => {
    const created = await post(svc, '/api/v1/auth/clients', { name, scopes }, await svc.adminAuth());
    expect(created.status).toBe(201);
    const grant = await post(svc, '/oauth/token', {
      grant_type: 'client_credentials',
      client_id: created.body.client_id,
      client_secret: created.body.client_secret,
    });
    expect(grant.status).toBe(200);
    return { clientId: created.body.client_id, grant: grant.body };
  };

  it('a client disabled through one replica: refused there at once, and by the other, which had it cached', async () => {
    const [a, b] = replicas;
    const { clientId, grant } = await newClient(a, 'replicated-disable');
    const token = `Bearer ${grant.access_token}`;
    for (const svc of [a, b, b]) expect(await info(svc, token)).toBe(200);
    const res = await fetch(`${a.url}/api/v1/auth/clients/${clientId}`, {
      method: 'PATCH',
      headers: { authorization: await a.adminAuth(), 'content-type': 'application/json' },
      body: JSON.stringify({ disabled: true }),
    });
    expect(res.status).toBe(200);
    expect(await info(a, token)).toBe(401);
    await eventually(async () => (await info(b, token)) === 401);
  });

  it('a family revoked through one replica: its cached access token is refused by the other', async () => {
    const [a, b] = replicas;
    const { grant } = await newClient(a, 'replicated-family');
    const token = `Bearer ${grant.access_token}`;
    for (const svc of [b, b]) expect(await info(svc, token)).toBe(200);
    const refresh = { grant_type: 'refresh_token', refresh_token: grant.refresh_token };
    expect((await post(a, '/oauth/token', refresh)).status).toBe(200);
    expect((await post(a, '/oauth/token', refresh)).body.error).toBe('invalid_grant');
    expect(await info(a, token)).toBe(401);
    await eventually(async () => (await info(b, token)) === 401);
  });

  it('a followed log on one replica ends, saying why, when its client is disabled through the other', async () => {
    const [a, b] = replicas;
    const { clientId, grant } = await newClient(a, 'replicated-follow', [
      'orchestrator:read',
      'orchestrator:write',
    ]);
    const token = `Bearer ${grant.access_token}`;
    const stack = await fetch(`${a.url}/api/v1/orchestrator/stacks`, {
      method: 'POST',
      headers: { authorization: token, 'content-type': 'application/yaml' },
      body: 'name: followed\nstackkit: basement-kit\nservices:\n  web:\n    command: ["/bin/true"]\n    resources: { cpu: 0.1, memory: 32Mi }\n',
    });
    expect(stack.status).toBe(201);
    const stackId = ((await stack.json()) as { id: string }).id;
    const followed = await fetch(`${b.url}/api/v1/orchestrator/stacks/${stackId}/logs?follow=true`, {
      headers: { authorization: token, accept: 'text/event-stream' },
    });
    expect(followed.status).toBe(200);
    const body = followed.text();
    const res = await fetch(`${a.url}/api/v1/auth/clients/${clientId}`, {
      method: 'PATCH',
      headers: { authorization: await a.adminAuth(), 'content-type': 'application/json' },
      body: JSON.stringify({ disabled: true }),
    });
    expect(res.status).toBe(200);
    // Within the revocation poll (a second), not the stack check's 10 s.
    const ended = await Promise.race([body, new Promise((resolve) => setTimeout(resolve, 5_000, 'open'))]);
    expect(ended).toMatch(/event: end\ndata: \{"reason":"client_revoked"\}\n\n$/);
  });
});
