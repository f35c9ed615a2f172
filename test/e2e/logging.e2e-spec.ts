import { readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, startTestApp, type TestApp } from '../support/app.js';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SECRETS = [
  'Bearer eyJhbGciOiJFUzI1NiJ9.very-secret-token',
  'sid=cookie-secret-value',
  'client-secret-in-body-123',
];

describe('structured logs', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('writes one JSON object per line with time, level, msg and component', async () => {
    await t.http
      .get('/api/v1/orchestrator/info')
      .set('Authorization', await t.adminAuth())
      .expect(200);
    const records = t.logs.records();
    expect(records.length).toBeGreaterThan(5);
    for (const r of records) {
      expect(r.time).toMatch(ISO_UTC);
      expect(r.level).toMatch(/^(TRACE|DEBUG|INFO|WARN|ERROR|FATAL)$/);
      expect(typeof r.msg).toBe('string');
    }
    expect(records.filter((r) => r.component === undefined)).toEqual([]);
  });

  it('request records carry the request id of the response header', async () => {
    const res = await t.http.get('/api/v1/orchestrator/health').set('X-Request-Id', 'trace-me-1');
    expect(res.headers['x-request-id']).toBe('trace-me-1');
    const record = t.logs.records().find((r) => r.request_id === 'trace-me-1');
    expect(record).toMatchObject({
      component: 'http',
      level: 'INFO',
      msg: 'GET /api/v1/orchestrator/health 200',
    });
    expect(typeof record?.duration_ms).toBe('number');
  });

  it('a request the client abandons before the answer gets a record too, marked aborted', async () => {
    // Half a declared body, then the connection closes while the body parser still waits for it.
    const { port } = new URL(t.url);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      'POST /oauth/token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
        'Content-Length: 100\r\nX-Request-Id: gone-1\r\n\r\n{"grant_',
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.destroy();
    let record: Record<string, unknown> | undefined;
    for (let i = 0; i < 50 && !record; i++) {
      record = t.logs.records().find((r) => r.request_id === 'gone-1');
      if (!record) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(record).toMatchObject({ component: 'http', aborted: true, msg: 'POST /oauth/token aborted' });
  });

  it('logs made while handling a request carry its id too', async () => {
    await t.http
      .patch('/api/v1/orchestrator/settings')
      .set('Authorization', await t.adminAuth())
      .set('X-Request-Id', 'change-1')
      .send({ log_level: 'info' })
      .expect(200);
    const change = t.logs.records().find((r) => r.msg === 'log level changed');
    expect(change).toMatchObject({ component: 'settings', request_id: 'change-1' });
  });

  it('never writes authorization headers, cookies, secrets or tokens', async () => {
    const pair = await t.token();
    await t.http
      .get('/api/v1/orchestrator/info')
      .set('Authorization', `Bearer ${pair.access_token}`)
      .expect(200);
    await t.http
      .post('/oauth/token')
      .send({ grant_type: 'refresh_token', refresh_token: pair.refresh_token })
      .expect(200);
    await t.http
      .patch('/api/v1/orchestrator/settings?token=query-secret')
      .set('Authorization', SECRETS[0])
      .set('Cookie', SECRETS[1])
      .send({ log_level: 'loud', client_secret: SECRETS[2] })
      .expect(401);
    await t.http.get('/nope').set('Authorization', SECRETS[0]).expect(404);
    const text = t.logs.text();
    const secrets = [...SECRETS, 'very-secret-token', 'cookie-secret-value', 'query-secret'];
    secrets.push(pair.access_token, pair.refresh_token, pair.access_token.split('.')[2], ADMIN.secret);
    for (const secret of secrets) {
      expect(text).not.toContain(secret);
    }
  });

  it('keeps the same records on disk under DATA_DIR/logs for the debug bundle', async () => {
    await t.http
      .get('/api/v1/orchestrator/info')
      .set('Authorization', await t.adminAuth())
      .set('X-Request-Id', 'on-disk-1')
      .expect(200);
    const dir = join(t.db.dataDir, 'logs');
    let found = false;
    for (let i = 0; i < 50 && !found; i++) {
      const files = readdirSync(dir).filter((f) => f.startsWith('service.') && f.endsWith('.jsonl'));
      found = files.some((f) => readFileSync(join(dir, f), 'utf8').includes('"request_id":"on-disk-1"'));
      if (!found) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(found).toBe(true);
  });
});
