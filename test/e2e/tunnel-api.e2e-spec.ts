import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { relayTunnel, startRelay, type Relay } from '../support/relay.js';

// The whole tunnel through the API: a real sshd on loopback is the relay; the service forwards its
// HTTP and agent ports there, and requests reach it through the relay's ports.

async function through(url: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  return { status: res.status, body: await res.json() };
}

async function refused(url: string): Promise<boolean> {
  return fetch(url, { signal: AbortSignal.timeout(3000) }).then(
    () => false,
    () => true,
  );
}

describe('tunnel API with the ssh provider', () => {
  let relay: Relay;
  let t: TestApp;
  let env: Record<string, string>;
  let publicUrl: string;
  let agentEndpoint: string;

  const status = async (app = t) =>
    (
      await app.http
        .get('/api/v1/tunnel/status')
        .set('Authorization', await app.adminAuth())
        .expect(200)
    ).body as {
      state: string;
      public_url: string | null;
      agent_endpoint: string | null;
      last_error: string | null;
      provider: string;
      started_at: string | null;
    };
  const auditActions = async (action: string) =>
    (
      await t.http
        .get(`/api/v1/orchestrator/audit?action=${action}`)
        .set('Authorization', await t.adminAuth())
        .expect(200)
    ).body.events as unknown[];

  beforeAll(async () => {
    relay = await startRelay();
    const tunnel = await relayTunnel(relay);
    publicUrl = tunnel.publicUrl;
    agentEndpoint = tunnel.agentEndpoint;
    env = tunnel.env;
    t = await startTestApp({ env });
  });
  afterAll(async () => {
    await t?.close();
    await relay?.close();
  });

  it('is stopped at first; every route needs a token with a tunnel scope', async () => {
    expect(await status()).toEqual({
      state: 'stopped',
      provider: 'ssh',
      public_url: null,
      agent_endpoint: null,
      started_at: null,
      last_error: null,
    });
    await t.http.get('/api/v1/tunnel/status').expect(401);
    await t.http.post('/api/v1/tunnel/start').expect(401);
    await t.http.post('/api/v1/tunnel/stop').expect(401);
    const readOnly = await t.token(undefined, 'tunnel:read');
    await t.http
      .post('/api/v1/tunnel/start')
      .set('Authorization', `Bearer ${readOnly.access_token}`)
      .expect(403);
    await t.http
      .get('/api/v1/tunnel/status')
      .set('Authorization', `Bearer ${readOnly.access_token}`)
      .expect(200);
    expect((await status()).state).toBe('stopped');
  });

  it('start answers running with the public URL, and /health/live answers through the relay', async () => {
    const res = await t.http
      .post('/api/v1/tunnel/start')
      .set('Authorization', await t.adminAuth())
      .expect(200);
    expect(res.body).toMatchObject({
      state: 'running',
      provider: 'ssh',
      public_url: publicUrl,
      agent_endpoint: agentEndpoint,
      last_error: null,
    });
    expect(Date.parse(res.body.started_at)).not.toBeNaN();
    expect(await through(`${publicUrl}/health/live`)).toMatchObject({ status: 200, body: { status: 'ok' } });
    const identity = await through(`${publicUrl}/.well-known/stack-orchestrator`);
    const direct = await t.http.get('/.well-known/stack-orchestrator').expect(200);
    expect(identity.body).toEqual(direct.body);
    expect(direct.body.instance_id).toMatch(/^[0-9a-f-]{36}$/);
    // Idempotent: a second start changes nothing and records nothing.
    const again = await t.http
      .post('/api/v1/tunnel/start')
      .set('Authorization', await t.adminAuth())
      .expect(200);
    expect(again.body.started_at).toBe(res.body.started_at);
    expect(await auditActions('tunnel.started')).toHaveLength(1);
    const registry = await t.http
      .get('/api/v1/tunnel/registry-url')
      .set('Authorization', await t.adminAuth());
    expect(registry.body).toEqual({ url: publicUrl, source: 'tunnel' });
    const metrics = (await t.http.get('/metrics').expect(200)).text;
    expect(metrics).toMatch(/^stack_tunnel_up 1$/m);
  });

  it('the relay going away gives reconnecting with a reason, then running again by itself', async () => {
    await relay.stop();
    await eventually(async () => (await status()).state === 'reconnecting', 20_000);
    const down = await status();
    expect(down.last_error).toEqual(expect.any(String));
    expect(down.public_url).toBeNull();
    expect((await t.http.get('/metrics')).text).toMatch(/^stack_tunnel_up 0$/m);
    await relay.start();
    await eventually(async () => (await status()).state === 'running', 30_000);
    expect((await status()).last_error).toBeNull();
    expect(await through(`${publicUrl}/health/live`)).toMatchObject({ status: 200 });
    expect((await t.http.get('/metrics')).text).toMatch(/^stack_tunnel_reconnects_total 1$/m);
    const records = t.logs.records().filter((r) => r.component === 'tunnel');
    expect(records.some((r) => r.msg === 'tunnel lost')).toBe(true);
  });

  it('a service restart resumes the tunnel it was running', async () => {
    await t.close({ drop: false });
    t = await startTestApp({ env, db: t.db });
    await eventually(async () => (await status()).state === 'running', 30_000);
    expect(await through(`${publicUrl}/health/live`)).toMatchObject({ status: 200 });
  });

  it('stop closes the tunnel and is idempotent', async () => {
    const res = await t.http
      .post('/api/v1/tunnel/stop')
      .set('Authorization', await t.adminAuth())
      .expect(200);
    expect(res.body).toEqual({
      state: 'stopped',
      provider: 'ssh',
      public_url: null,
      agent_endpoint: null,
      started_at: null,
      last_error: null,
    });
    expect(await refused(`${publicUrl}/health/live`)).toBe(true);
    await t.http
      .post('/api/v1/tunnel/stop')
      .set('Authorization', await t.adminAuth())
      .expect(200);
    expect(await auditActions('tunnel.stopped')).toHaveLength(1);
    const registry = await t.http
      .get('/api/v1/tunnel/registry-url')
      .set('Authorization', await t.adminAuth());
    expect(registry.body).toEqual({ url: 'http://127.0.0.1', source: 'config' });
  });
});

describe('tunnel API without a usable configuration', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { TUNNEL_SSH_HOST: '127.0.0.1' } });
  });
  afterAll(() => t.close());

  it('start is refused with every missing setting named, and nothing changes', async () => {
    const res = await t.http
      .post('/api/v1/tunnel/start')
      .set('Authorization', await t.adminAuth())
      .expect(409);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.detail).toMatch(/TUNNEL_SSH_HOST_KEY/);
    expect(res.body.detail).toMatch(/TUNNEL_SSH_KEY_FILE/);
    const status = await t.http.get('/api/v1/tunnel/status').set('Authorization', await t.adminAuth());
    expect(status.body.state).toBe('stopped');
  });
});

// cloudflared cannot be installed here: a stand-in prints what it prints (test/fixtures).
describe('tunnel API with the cloudflared provider (a stand-in for the program)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      env: {
        TUNNEL_PROVIDER: 'cloudflared',
        TUNNEL_CLOUDFLARED_BIN: fileURLToPath(new URL('../fixtures/fake-cloudflared.mjs', import.meta.url)),
        // The stand-in runs under `env node`; the service hands cloudflared its own PATH.
        PATH: process.env.PATH ?? '',
      },
    });
  });
  afterAll(() => t.close());

  it('start runs a quick tunnel and answers its URL; stop ends it', async () => {
    const res = await t.http
      .post('/api/v1/tunnel/start')
      .set('Authorization', await t.adminAuth())
      .expect(200);
    expect(res.body).toMatchObject({ state: 'running', provider: 'cloudflared', agent_endpoint: null });
    expect(res.body.public_url).toMatch(/^https:\/\/[a-z]+(-[a-z]+){3}\.trycloudflare\.com$/);
    const registry = await t.http
      .get('/api/v1/tunnel/registry-url')
      .set('Authorization', await t.adminAuth());
    expect(registry.body).toEqual({ url: res.body.public_url, source: 'tunnel' });
    const stopped = await t.http
      .post('/api/v1/tunnel/stop')
      .set('Authorization', await t.adminAuth())
      .expect(200);
    expect(stopped.body).toMatchObject({ state: 'stopped', provider: 'cloudflared', public_url: null });
  });
});
