import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { labelsFromRecord, labelsKey } from '../../src/server/metric-store/labels.js';
import { MetricStoreService } from '../../src/server/metric-store/store/metric-store.service.js';
import { ADMIN, startTestApp, type TestApp } from '../support/app.js';
import { connectMcp } from '../support/mcp-client.js';

// The Prometheus HTTP API's query side over the store: envelopes, parameters, errors, Basic auth,
// scopes and owners. Data goes in through the store; PromQL semantics are proven against a real
// Prometheus by promql-differential.
// Recent, so that the background retention (15 days) keeps it; whole minutes, so seconds are exact.
const T0 = Math.floor(Date.now() / 60_000) * 60_000 - 600_000;

describe('Prometheus query API at /prometheus/api/v1', () => {
  let t: TestApp;
  let auth: string;
  const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

  beforeAll(async () => {
    // Low query limits, so the limit errors are reachable with little data.
    t = await startTestApp({ env: { METRICS_QUERY_MAX_SAMPLES: '1000', METRICS_QUERY_MAX_SERIES: '2' } });
    auth = await t.adminAuth();
    const store = t.app.get(MetricStoreService);
    const series = (labels: Record<string, string>, values: number[]) => {
      const set = labelsFromRecord(labels);
      return { key: labelsKey(set), labels: set, timestamps: values.map((_, i) => T0 + i * 15_000), values };
    };
    await store.write(
      'default',
      [
        series({ __name__: 'http_requests_total', job: 'api', code: '200' }, [0, 10, 20, 30, 40]),
        series({ __name__: 'http_requests_total', job: 'api', code: '500' }, [0, 1, 2, 3, 4]),
        series({ __name__: 'temperature', job: 'sensor', room: 'lab' }, [20.5, 21, 21.5, 22, 22.5]),
        series(
          { __name__: 'dense', job: 'load' },
          Array.from({ length: 1200 }, (_, i) => i),
        ),
      ],
      T0 + 60_000,
    );
    await store.writeMetadata('default', [
      { metric: 'http_requests_total', type: 'counter', help: 'Requests served.', unit: '' },
    ]);
    await store.write('acme', [series({ __name__: 'secret_metric', job: 'acme' }, [1])], T0);
  });
  afterAll(async () => {
    await t.close();
  });

  const get = (path: string, authorization = auth) =>
    t.http.get(`/prometheus/api/v1/${path}`).set('Authorization', authorization);

  it('instant query: a vector with Prometheus values and labels; GET and form POST alike', async () => {
    const q = encodeURIComponent('sum by (job) (rate(http_requests_total[1m]))');
    const res = await get(`query?query=${q}&time=${(T0 + 60_000) / 1000}`).expect(200);
    expect(res.body).toEqual({
      status: 'success',
      data: {
        resultType: 'vector',
        result: [{ metric: { job: 'api' }, value: [(T0 + 60_000) / 1000, '0.7333333333333333'] }],
      },
    });
    const posted = await t.http
      .post('/prometheus/api/v1/query')
      .set('Authorization', auth)
      .type('form')
      .send({ query: 'sum by (job) (rate(http_requests_total[1m]))', time: String((T0 + 60_000) / 1000) })
      .expect(200);
    expect(posted.body).toEqual(res.body);
    const scalar = await get('query?query=1%2B1&time=10').expect(200);
    expect(scalar.body.data).toEqual({ resultType: 'scalar', result: [10, '2'] });
  });

  it('range query: a matrix at each step', async () => {
    const res = await get(
      `query_range?query=temperature&start=${T0 / 1000}&end=${(T0 + 30_000) / 1000}&step=15s`,
    ).expect(200);
    expect(res.body.data).toEqual({
      resultType: 'matrix',
      result: [
        {
          metric: { __name__: 'temperature', job: 'sensor', room: 'lab' },
          values: [
            [T0 / 1000, '20.5'],
            [(T0 + 15_000) / 1000, '21'],
            [(T0 + 30_000) / 1000, '21.5'],
          ],
        },
      ],
    });
  });

  it('series, labels, label values and metadata', async () => {
    const series = await get(`series?match[]=http_requests_total&start=${T0 / 1000}`).expect(200);
    expect(series.body.data).toEqual([
      { __name__: 'http_requests_total', code: '200', job: 'api' },
      { __name__: 'http_requests_total', code: '500', job: 'api' },
    ]);
    // Only series with data in the range (read from chunk ranges and batches, no samples loaded).
    const later = await get(
      `series?match[]=temperature&start=${(T0 + 3_600_000) / 1000}&end=${(T0 + 7_200_000) / 1000}`,
    );
    expect(later.body.data).toEqual([]);
    expect((await get('labels').expect(200)).body.data).toEqual(['__name__', 'code', 'job', 'room']);
    expect((await get('label/job/values').expect(200)).body.data).toEqual(['api', 'load', 'sensor']);
    expect((await get('label/__name__/values?limit=1').expect(200)).body.data).toEqual(['dense']);
    expect((await get('metadata').expect(200)).body.data).toEqual({
      http_requests_total: [{ type: 'counter', help: 'Requests served.', unit: '' }],
    });
    expect((await get('status/buildinfo').expect(200)).body.data.version).toBe('2.42.0');
    expect((await get('query_exemplars?query=up').expect(200)).body.data).toEqual([]);
    expect((await get('rules').expect(200)).body.data).toEqual({ groups: [] });
    expect((await get('alerts').expect(200)).body.data).toEqual({ alerts: [] });
  });

  it('errors in Prometheus terms: bad_data 400, execution 422', async () => {
    const parse = await get('query?query=sum(').expect(400);
    expect(parse.body).toMatchObject({ status: 'error', errorType: 'bad_data' });
    expect(parse.body.error).toContain('parse error');
    const step = await get('query_range?query=up&start=0&end=1&step=0').expect(400);
    expect(step.body.error).toBe(
      'invalid parameter "step": zero or negative query resolution step widths are not accepted. Try a positive integer',
    );
    expect((await get('series').expect(400)).body.error).toBe('no match[] parameter provided');
    expect((await get('label/bad-name/values').expect(400)).body.error).toBe(
      'invalid label name: "bad-name"',
    );
    // Over the configured limits: clean execution errors.
    const samples = await get(
      `query?query=${encodeURIComponent('count_over_time(dense[1d])')}&time=${(T0 + 1200 * 15_000) / 1000}`,
    ).expect(422);
    expect(samples.body).toMatchObject({
      errorType: 'execution',
      error: expect.stringContaining('too many samples'),
    });
    const series = await get(
      `query?query=${encodeURIComponent('{job=~".+"}')}&time=${(T0 + 60_000) / 1000}`,
    ).expect(422);
    expect(series.body.error).toContain('more than 2 series');
    // Many-to-many matching fails while evaluating: 422 execution.
    const manyToMany = await get(
      `query?query=${encodeURIComponent('http_requests_total + on(job) http_requests_total')}&time=${(T0 + 60_000) / 1000}`,
    ).expect(422);
    expect(manyToMany.body.errorType).toBe('execution');
  });

  it('HTTP Basic with a client id and secret; scopes and owners hold', async () => {
    await get('query?query=up', basic(ADMIN.clientId, ADMIN.secret)).expect(200);
    const wrong = await get('query?query=up', basic(ADMIN.clientId, 'wrong')).expect(401);
    expect(wrong.headers['www-authenticate']).toContain('Basic');
    const narrow = await t.token(undefined, 'orchestrator:read');
    await get('query?query=up', `Bearer ${narrow.access_token}`).expect(403);
    // Another owner sees only its own series.
    const created = await t.http
      .post('/api/v1/auth/clients')
      .set('Authorization', auth)
      .send({ name: 'acme metrics', owner: 'acme', scopes: ['metrics:read'] })
      .expect(201);
    const acme = basic(created.body.client_id as string, created.body.client_secret as string);
    expect((await get('label/__name__/values', acme).expect(200)).body.data).toEqual(['secret_metric']);
    const theirs = await get(`query?query=http_requests_total&time=${(T0 + 60_000) / 1000}`, acme).expect(
      200,
    );
    expect(theirs.body.data.result).toEqual([]);
    // Without a token or credentials: 401.
    const anonymous = await t.http.get('/prometheus/api/v1/query?query=up').expect(401);
    expect(anonymous.headers['www-authenticate']).toMatch(
      /^Bearer realm="stack-orchestrator".*, Basic realm="stack-orchestrator"$/,
    );
    expect(anonymous.body.detail).toContain('HTTP Basic');
  });

  it('the MCP PromQL tools answer what the HTTP API answers, with its errors', async () => {
    const mcp = await connectMcp(t.url, (await t.token()).access_token);
    const time = String((T0 + 60_000) / 1000);
    const q = 'sum by (job) (rate(http_requests_total[1m]))';
    const http = await get(`query?query=${encodeURIComponent(q)}&time=${time}`).expect(200);
    expect(await mcp.ok('query_metrics', { query: q, time })).toEqual(http.body.data);
    const range = {
      query: 'temperature',
      start: String(T0 / 1000),
      end: String((T0 + 30_000) / 1000),
      step: '15s',
    };
    const httpRange = await get(`query_range?${new URLSearchParams(range).toString()}`).expect(200);
    expect(await mcp.ok('query_metrics_range', range)).toEqual(httpRange.body.data);
    expect(await mcp.refused('query_metrics', { query: 'sum(' })).toMatchObject({
      status: 400,
      code: 'bad_data',
    });
    expect(await mcp.refused('query_metrics_range', { ...range, step: '0' })).toMatchObject({
      status: 400,
      detail: expect.stringContaining('zero or negative'),
    });
    const narrow = await connectMcp(t.url, (await t.token(undefined, 'orchestrator:read')).access_token);
    expect((await narrow.listTools()).tools.map((tool) => tool.name)).not.toContain('query_metrics');
    expect(await narrow.refused('query_metrics', { query: 'up' })).toMatchObject({ status: 403 });
    await Promise.all([mcp.close(), narrow.close()]);
  });
});
