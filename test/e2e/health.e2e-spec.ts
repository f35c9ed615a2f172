import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

describe('probes, orchestrator health and info', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { PUBLIC_URL: 'https://orchestrator.example.test' } });
  });
  afterAll(() => t.close());

  it('GET /health/live answers 200 without a token', async () => {
    const res = await t.http.get('/health/live').expect(200);
    expect(res.body).toEqual({ status: 'ok', info: {}, error: {}, details: {} });
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('liveness keeps the request id, HEAD and query strings, and is counted', async () => {
    const res = await t.http.get('/health/live?probe=k8s').set('X-Request-Id', 'probe-7').expect(200);
    expect(res.headers['x-request-id']).toBe('probe-7');
    const head = await t.http.head('/health/live').expect(200);
    expect(head.text ?? '').toBe('');
    const metrics = (await t.http.get('/metrics')).text;
    expect(metrics).toMatch(
      /^stack_api_requests_total\{method="GET",route="\/health\/live",status="200"\} [1-9]/m,
    );
    expect(metrics).toMatch(
      /^stack_api_requests_total\{method="HEAD",route="\/health\/live",status="200"\} 1$/m,
    );
    // Other methods on the path go through the framework like any unknown route.
    await t.http.post('/health/live').expect(404);
  });

  it('GET /health/ready pings the database', async () => {
    const res = await t.http.get('/health/ready').expect(200);
    expect(res.body.status).toBe('ok');
    expect(res.body.details.database.status).toBe('up');
  });

  it('GET /health/startup reports migrations done and the HTTP listener up', async () => {
    const res = await t.http.get('/health/startup').expect(200);
    expect(res.body.details.startup).toMatchObject({
      status: 'up',
      migrations: true,
      listeners: { http: true },
    });
  });

  it.each(['/api/v1', '/v1'])('GET %s/orchestrator/health has the document shape', async (prefix) => {
    const res = await t.http.get(`${prefix}/orchestrator/health`).expect(200);
    expect(Object.keys(res.body).sort()).toEqual(['checks', 'status', 'uptime', 'version']);
    expect(res.body.version).toBe(pkg.version);
    expect(res.body.uptime).toMatch(/^\d+h\d+m\d+s$/);
    expect(res.body.checks.database).toBe('ok');
    // The agent gateway listens and no worker is unhealthy or unreachable.
    expect(res.body.checks.grpc).toBe('ok');
    expect(res.body.checks.workers).toBe('ok');
    expect(res.body.status).toBe('healthy');
  });

  it.each(['/api/v1', '/v1'])('GET %s/orchestrator/info describes the instance', async (prefix) => {
    const res = await t.http
      .get(`${prefix}/orchestrator/info`)
      .set('Authorization', await t.adminAuth())
      .expect(200);
    expect(res.body).toMatchObject({
      name: 'stack-orchestrator',
      version: pkg.version,
      mode: 'self-hosted',
      api_versions: ['v1'],
    });
    // The gateway binds AGENT_PORT (0 in tests: a free port) and advertises the port it got.
    expect(res.body.agent_endpoint).toMatch(/^orchestrator\.example\.test:\d+$/);
    expect(res.body.agent_endpoint).not.toBe('orchestrator.example.test:0');
    expect(res.body.ca_fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(new Date(res.body.started_at as string).toISOString()).toBe(res.body.started_at);
    expect(Date.now() - Date.parse(res.body.started_at as string)).toBeLessThan(120_000);
    expect(res.body.uptime).toMatch(/^\d+h\d+m\d+s$/);
  });
});
