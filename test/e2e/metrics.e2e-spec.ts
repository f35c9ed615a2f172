import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';

const DOCUMENTED = {
  stack_api_requests_total: 'counter',
  stack_api_request_duration_seconds: 'histogram',
  stack_workers_connected: 'gauge',
  stack_workers_healthy: 'gauge',
  stack_jobs_total: 'counter',
  stack_jobs_duration_seconds: 'histogram',
  stack_stacks_total: 'gauge',
  stack_drift_detected_total: 'counter',
};

/** The value of one sample line, or undefined. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const inside = line.slice(name.length + 1, line.indexOf('}'));
    const parts = inside.split(',');
    if (wanted.every((w) => parts.includes(w)) && parts.length === wanted.length)
      return Number(line.split(' ').pop());
  }
  return undefined;
}

describe('/metrics', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const scrape = async (): Promise<string> => {
    const res = await t.http.get('/metrics').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    return res.text;
  };

  it('registers the eight documented metrics with HELP and the right TYPE, plus process metrics', async () => {
    const text = await scrape();
    for (const [name, type] of Object.entries(DOCUMENTED)) {
      expect(text, name).toMatch(new RegExp(`^# HELP ${name} \\S.*$`, 'm'));
      expect(text, name).toMatch(new RegExp(`^# TYPE ${name} ${type}$`, 'm'));
    }
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(text).toMatch(/^nodejs_heap_size_used_bytes \d/m);
    // Nothing is connected or managed yet, and the gauges say so.
    expect(text).toMatch(/^stack_workers_connected 0$/m);
    expect(text).toMatch(/^stack_stacks_total 0$/m);
  });

  it('counts each request by method, route template and status, 404s included', async () => {
    const before = await scrape();
    const base =
      sample(before, 'stack_api_requests_total', {
        method: 'GET',
        route: '/api/v1/orchestrator/info',
        status: '200',
      }) ?? 0;
    await t.http
      .get('/api/v1/orchestrator/info')
      .set('Authorization', await t.adminAuth())
      .expect(200);
    await t.http
      .get('/api/v1/orchestrator/info')
      .set('Authorization', await t.adminAuth())
      .expect(200);
    await t.http.get('/definitely/not/here/12345').expect(404);
    await t.http
      .patch('/v1/orchestrator/settings')
      .set('Content-Type', 'application/json')
      .send('{bad')
      .expect(400);
    // Refused before routing on a route with a parameter: named after its template, not the raw id.
    const clientId = `cli_refused${Date.now()}`;
    await t.http
      .patch(`/api/v1/auth/clients/${clientId}`)
      .set('Authorization', await t.adminAuth())
      .set('Content-Type', 'application/json')
      .send('{bad')
      .expect(400);
    const after = await scrape();
    expect(
      sample(after, 'stack_api_requests_total', {
        method: 'GET',
        route: '/api/v1/orchestrator/info',
        status: '200',
      }),
    ).toBe(base + 2);
    expect(
      sample(after, 'stack_api_requests_total', { method: 'GET', route: 'unmatched', status: '404' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sample(after, 'stack_api_requests_total', {
        method: 'PATCH',
        route: '/v1/orchestrator/settings',
        status: '400',
      }),
    ).toBe(1);
    expect(
      sample(after, 'stack_api_requests_total', {
        method: 'PATCH',
        route: '/api/v1/auth/clients/:clientId',
        status: '400',
      }),
    ).toBe(1);
    expect(after).not.toContain(clientId);
    expect(after).not.toContain('/definitely/not/here');
    expect(
      sample(after, 'stack_api_request_duration_seconds_count', {
        method: 'GET',
        route: '/api/v1/orchestrator/info',
        status: '200',
      }),
    ).toBe(base + 2);
  });

  it('keeps the route label bounded whatever paths clients invent', async () => {
    for (let i = 0; i < 20; i++) await t.http.get(`/random-${i}-${Math.random()}`);
    const text = await scrape();
    const routes = new Set([...text.matchAll(/route="([^"]*)"/g)].map((m) => m[1]));
    for (const route of routes) expect(route === 'unmatched' || route.startsWith('/'), route).toBe(true);
    expect([...routes].some((r) => r.includes('random'))).toBe(false);
  });

  it('passes promtool check metrics, but for the one name the interface document fixes', async () => {
    const text = await scrape();
    const { code, out } = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = execFile('promtool', ['check', 'metrics'], (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? -1) : 0, out: `${stdout}${stderr}` }),
      );
      child.stdin?.end(text);
    });
    // The document makes stack_stacks_total a gauge; promtool's lint wants `_total` only on
    // counters. That is its one finding; anything else (a parse error, another lint) fails here.
    const findings = out.split('\n').filter(Boolean);
    expect(findings).toEqual(['stack_stacks_total non-counter metrics should not have "_total" suffix']);
    expect(code).toBe(3);
  });
});
