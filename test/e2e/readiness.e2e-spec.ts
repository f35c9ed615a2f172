import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedPostgres } from '../../src/server/database/embedded-postgres.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { copyEmbeddedTemplate, createTestDatabase, type TestDatabase } from '../support/database.js';
import { testDb } from '../support/env.js';
import { TcpProxy } from '../support/tcp-proxy.js';

/**
 * The app reaches its database through a proxy the test cuts: on the postgres run the proxy fronts
 * the real server, on the pglite run a standalone embedded database served over the wire protocol.
 */
describe('readiness follows the database', () => {
  let t: TestApp;
  let proxy: TcpProxy;
  let db: TestDatabase;
  let embedded: EmbeddedPostgres | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    let target: URL;
    if (testDb() === 'postgres') {
      target = new URL(db.databaseUrl!);
    } else {
      embedded = await EmbeddedPostgres.start(copyEmbeddedTemplate(), 20);
      target = new URL(embedded.url);
    }
    proxy = new TcpProxy(target.hostname, Number(target.port));
    await proxy.start();
    const viaProxy = new URL(target);
    viaProxy.host = `127.0.0.1:${proxy.port}`;
    t = await startTestApp({
      db: { ...db, databaseUrl: viaProxy.toString() },
      env: { READINESS_TIMEOUT: '500ms' },
    });
  });
  afterAll(async () => {
    await t.close({ drop: false });
    await proxy.cut();
    await embedded?.stop();
    await db.drop();
  });

  it('is 200 while the database answers', async () => {
    await t.adminAuth(); // fetched while the database is up, used during the outage
    await t.http.get('/health/ready').expect(200);
    await t.http.get('/api/v1/orchestrator/health').expect(200);
  });

  it('turns 503 while the database refuses connections, and liveness stays 200', async () => {
    await proxy.cut();
    await eventually(async () => (await t.http.get('/health/ready')).status === 503, 10_000);
    const ready = await t.http.get('/health/ready');
    expect(ready.body.status).toBe('error');
    expect(ready.body.error.database.status).toBe('down');
    await t.http.get('/health/live').expect(200);
    const health = await t.http.get('/v1/orchestrator/health').expect(503);
    expect(health.body.status).toBe('unhealthy');
    expect(health.body.checks.database).not.toBe('ok');
  });

  it('answers a request that needs the database with a 503 problem, not a 500 with internals', async () => {
    const res = await t.http
      .patch('/api/v1/orchestrator/settings')
      .set('Authorization', await t.adminAuth())
      .send({ log_level: 'debug' });
    expect(res.status).toBe(503);
    expect(res.body.code).toBe('unavailable');
    expect(res.headers['retry-after']).toBeDefined();
    expect(JSON.stringify(res.body)).not.toMatch(/ECONNREFUSED|connect|127\.0\.0\.1/i);
  });

  it('returns to 200 by itself when the database is back', async () => {
    await proxy.start();
    await eventually(async () => (await t.http.get('/health/ready')).status === 200, 15_000);
    const health = await t.http.get('/v1/orchestrator/health').expect(200);
    expect(health.body.checks.database).toBe('ok');
    await t.http
      .patch('/api/v1/orchestrator/settings')
      .set('Authorization', await t.adminAuth())
      .send({ log_level: 'debug' })
      .expect(200);
  });
});
