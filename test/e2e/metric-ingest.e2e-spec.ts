import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { labelsFromRecord } from '../../src/server/metric-store/labels.js';
import { encodeWriteRequest } from '../../src/server/metric-store/remote-write-encode.js';
import { setStale } from '../../src/server/metric-store/series.js';
import { ADMIN, startTestApp, type TestApp } from '../support/app.js';

/** Values with Prometheus's stale marker written as bits at `at` (a plain array may lose its payload). */
function withStale(values: number[], at: number): Float64Array {
  const out = Float64Array.from(values);
  setStale(out, at);
  return out;
}

// Ingestion routes: remote write (snappy protobuf) and the text exposition format, their bad
// input, scopes and credentials. A real Prometheus writing here is in metric-prometheus.
describe('metric store ingestion', () => {
  let t: TestApp;
  let auth: string;
  const now = Math.floor(Date.now() / 1000) * 1000;
  const basic = `Basic ${Buffer.from(`${ADMIN.clientId}:${ADMIN.secret}`).toString('base64')}`;

  beforeAll(async () => {
    t = await startTestApp();
    auth = await t.adminAuth();
  });
  afterAll(async () => {
    await t.close();
  });

  const query = async (q: string, time = now / 1000) =>
    (
      await t.http
        .get(`/prometheus/api/v1/query?query=${encodeURIComponent(q)}&time=${time}`)
        .set('Authorization', auth)
        .expect(200)
    ).body.data.result as { metric: Record<string, string>; value: [number, string] }[];

  it('remote write: 204, then queryable; stale markers end the series; metadata kept', async () => {
    const body = encodeWriteRequest(
      [
        {
          labels: labelsFromRecord({ __name__: 'rw_requests_total', job: 'rw', instance: 'a' }),
          timestamps: [now - 30_000, now - 15_000],
          values: [1, 2],
        },
        {
          labels: labelsFromRecord({ __name__: 'rw_requests_total', job: 'rw', instance: 'b' }),
          timestamps: [now - 30_000, now - 15_000],
          values: withStale([5, 0], 1),
        },
      ],
      [{ metric: 'rw_requests_total', type: 'counter', help: 'Requests.', unit: '' }],
    );
    await t.http
      .post('/prometheus/api/v1/write')
      .set('Authorization', basic)
      .set('Content-Type', 'application/x-protobuf')
      .set('Content-Encoding', 'snappy')
      .set('X-Prometheus-Remote-Write-Version', '0.1.0')
      .send(Buffer.from(body))
      .expect(204);
    const result = await query('rw_requests_total');
    expect(result).toEqual([
      { metric: { __name__: 'rw_requests_total', instance: 'a', job: 'rw' }, value: [now / 1000, '2'] },
    ]);
    const meta = await t.http.get('/prometheus/api/v1/metadata').set('Authorization', auth).expect(200);
    expect(meta.body.data.rw_requests_total).toEqual([{ type: 'counter', help: 'Requests.', unit: '' }]);
  });

  it('text import: samples with and without timestamps', async () => {
    const text = [
      '# HELP imported_temp A temperature.',
      '# TYPE imported_temp gauge',
      `imported_temp{room="lab"} 21.5 ${now - 10_000}`,
      'imported_now{room="lab"} 7',
      '',
    ].join('\n');
    await t.http
      .post('/prometheus/api/v1/import/prometheus')
      .set('Authorization', auth)
      .set('Content-Type', 'text/plain')
      .send(text)
      .expect(204);
    expect((await query('imported_temp'))[0].value[1]).toBe('21.5');
    expect((await query('imported_now', Date.now() / 1000 + 1))[0].value[1]).toBe('7');
  });

  it('bad bodies are 400 with what is wrong, nothing stored; oversize 413', async () => {
    const bad = await t.http
      .post('/prometheus/api/v1/write')
      .set('Authorization', auth)
      .set('Content-Type', 'application/x-protobuf')
      .send(Buffer.from('not snappy at all'))
      .expect(400);
    expect(bad.body.detail).toMatch(/snappy/i);
    const text = await t.http
      .post('/prometheus/api/v1/import/prometheus')
      .set('Authorization', auth)
      .set('Content-Type', 'text/plain')
      .send('broken_metric{a="b" 1\n')
      .expect(400);
    expect(text.body.detail).toContain('line 1');
    expect(await query('broken_metric')).toEqual([]);
    await t.http
      .post('/prometheus/api/v1/import/prometheus')
      .set('Authorization', auth)
      .set('Content-Type', 'text/plain')
      .send(`big_metric ${'1'.repeat(2 * 1024 * 1024)}\n`)
      .expect(413);
  });

  it('needs metrics:write: a read-only client is refused and stores nothing', async () => {
    const reader = await t.token(undefined, 'metrics:read');
    await t.http
      .post('/prometheus/api/v1/import/prometheus')
      .set('Authorization', `Bearer ${reader.access_token}`)
      .set('Content-Type', 'text/plain')
      .send('refused_metric 1\n')
      .expect(403);
    expect(await query('refused_metric', Date.now() / 1000 + 1)).toEqual([]);
    await t.http
      .post('/prometheus/api/v1/import/prometheus')
      .set('Content-Type', 'text/plain')
      .send('x 1\n')
      .expect(401);
  });
});
