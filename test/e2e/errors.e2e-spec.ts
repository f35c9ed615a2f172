import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';

const PROBLEM_KEYS = ['code', 'detail', 'instance', 'request_id', 'status', 'title', 'type'];

function expectProblem(
  res: { status: number; headers: Record<string, string>; body: Record<string, unknown> },
  status: number,
  code: string,
): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(
    Object.keys(res.body)
      .filter((k) => k !== 'errors')
      .sort(),
  ).toEqual(PROBLEM_KEYS);
  expect(res.body.status).toBe(status);
  expect(res.body.code).toBe(code);
  expect(res.body.request_id).toBe(res.headers['x-request-id']);
  expect(JSON.stringify(res.body)).not.toMatch(/\bat .*\.(js|ts):\d+|node_modules|Error:/);
}

/** Sends a chunked body (no Content-Length) of `size` bytes. */
function sendChunked(
  url: string,
  path: string,
  size: number,
  authorization: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${url}${path}`,
      { method: 'PATCH', headers: { 'content-type': 'application/json', authorization } },
      (res) => {
        let data = '';
        res.on('data', (c: Buffer) => (data += c.toString()));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(data) as Record<string, unknown> }),
        );
      },
    );
    req.on('error', reject);
    const chunk = Buffer.alloc(64 * 1024, 'a');
    let sent = 0;
    const pump = (): void => {
      while (sent < size) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}

describe('errors are RFC 9457 problems', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('unknown route: 404 not_found with a generated request id', async () => {
    const res = await t.http.get('/no/such/route');
    expectProblem(res, 404, 'not_found');
    expect(res.body.instance).toBe('/no/such/route');
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('echoes the caller X-Request-Id and refuses an unsafe one', async () => {
    const mine = await t.http.get('/no/such/route').set('X-Request-Id', 'req-42.abc');
    expect(mine.headers['x-request-id']).toBe('req-42.abc');
    expect(mine.body.request_id).toBe('req-42.abc');
    const unsafe = await t.http.get('/health/live').set('X-Request-Id', 'x'.repeat(300));
    expect(unsafe.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('malformed JSON: 400 invalid_json and nothing changes', async () => {
    const res = await t.http
      .patch('/api/v1/orchestrator/settings')
      .set('Content-Type', 'application/json')
      .send('{"log_level": "debu');
    expectProblem(res, 400, 'invalid_json');
    expect(
      (await t.http.get('/api/v1/orchestrator/settings').set('Authorization', await t.adminAuth())).body
        .log_level,
    ).toBe('info');
  });

  it('body over 1 MiB with Content-Length: 413 payload_too_large', async () => {
    const big = JSON.stringify({ log_level: 'debug', pad: 'x'.repeat(1024 * 1024) });
    const res = await t.http
      .patch('/api/v1/orchestrator/settings')
      .set('Content-Type', 'application/json')
      .send(big);
    expectProblem(res, 413, 'payload_too_large');
    expect(
      (await t.http.get('/api/v1/orchestrator/settings').set('Authorization', await t.adminAuth())).body
        .log_level,
    ).toBe('info');
  });

  it('body over 1 MiB sent chunked: 413 payload_too_large', async () => {
    const res = await sendChunked(
      t.url,
      '/api/v1/orchestrator/settings',
      2 * 1024 * 1024,
      await t.adminAuth(),
    );
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('payload_too_large');
  });

  it('wrong media type: 415 unsupported_media_type', async () => {
    const res = await t.http
      .patch('/api/v1/orchestrator/settings')
      .set('Authorization', await t.adminAuth())
      .set('Content-Type', 'text/plain')
      .send('log_level=debug');
    expectProblem(res, 415, 'unsupported_media_type');
    const none = await t.http
      .patch('/v1/orchestrator/settings')
      .set('Authorization', await t.adminAuth())
      .set('Content-Type', '')
      .send(Buffer.from('{"log_level":"debug"}'));
    expectProblem(none, 415, 'unsupported_media_type');
    expect(
      (await t.http.get('/api/v1/orchestrator/settings').set('Authorization', await t.adminAuth())).body
        .log_level,
    ).toBe('info');
  });

  it('JSON that is not an object is a 422, never a 5xx', async () => {
    for (const body of ['[]', '"debug"', '42', 'null']) {
      const res = await t.http
        .patch('/api/v1/orchestrator/settings')
        .set('Authorization', await t.adminAuth())
        .set('Content-Type', 'application/json')
        .send(body);
      expect(res.status, body).toBeGreaterThanOrEqual(400);
      expect(res.status, body).toBeLessThan(500);
    }
  });

  it('problem bodies are not cached', async () => {
    const res = await t.http.get('/missing');
    expect(res.headers['cache-control']).toBe('no-store');
  });
});
