import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { labelsFromRecord, labelsKey } from '../../src/server/metric-store/labels.js';
import { MetricStoreService } from '../../src/server/metric-store/store/metric-store.service.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { connectMcp } from '../support/mcp-client.js';

// Hostile input to the Prometheus query API (found by fuzzing): every one is a clean 4xx in
// Prometheus's envelope, quickly and in little memory, never a 500, a crash or an unbounded
// allocation; and a query whose client left stops. The default limits (METRICS_QUERY_*) apply.
const T0 = Math.floor(Date.now() / 60_000) * 60_000 - 600_000;
const MB = 1024 * 1024;

describe('PromQL limits on hostile input', () => {
  let t: TestApp;
  let auth: string;

  beforeAll(async () => {
    t = await startTestApp();
    auth = await t.adminAuth();
    const labels = labelsFromRecord({ __name__: 'up', job: 'api' });
    await t.app
      .get(MetricStoreService)
      .write(
        'default',
        [{ key: labelsKey(labels), labels, timestamps: [T0, T0 + 15_000], values: [1, 1] }],
        T0 + 15_000,
      );
    await t.app
      .get(MetricStoreService)
      .writeMetadata('default', [{ metric: 'up', type: 'gauge', help: 'Up.', unit: '' }]);
  });
  afterAll(async () => {
    await t.close();
  });

  const get = (path: string) => t.http.get(`/prometheus/api/v1/${path}`).set('Authorization', auth);
  const post = (path: string, form: Record<string, string>) =>
    t.http.post(`/prometheus/api/v1/${path}`).set('Authorization', auth).type('form').send(form);
  const q = (query: string) => encodeURIComponent(query);

  /** Runs `send` while sampling the process's resident memory: the answer, its time, the growth. */
  async function measured<T>(send: () => Promise<T>): Promise<{ res: T; ms: number; growth: number }> {
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
    const started = Date.now();
    try {
      const res = await send();
      return { res, ms: Date.now() - started, growth: Math.max(peak, process.memoryUsage().rss) - before };
    } finally {
      clearInterval(sampler);
    }
  }

  it('subqueries of billions of steps: 422 execution at once, before any memory is taken', async () => {
    const huge = [
      'max_over_time(vector(1)[1y:1ms])',
      'max_over_time(max_over_time(vector(1)[1d:1s])[100y:1s])',
      'max_over_time(vector(1)[1d:1ms])',
      'sum_over_time(up[30d:1ms])',
    ];
    for (const query of huge) {
      for (const send of [
        () => get(`query?query=${q(query)}`),
        () => get(`query_range?query=${q(query)}&start=${T0 / 1000}&end=${T0 / 1000 + 3600}&step=60`),
        () => post('query', { query }),
      ]) {
        const { res, ms, growth } = await measured(send);
        expect(res.status, query).toBe(422);
        expect(res.body).toEqual({
          status: 'error',
          errorType: 'execution',
          error: 'query processing would load too many samples into memory in query execution',
        });
        // Refused before evaluating: not a timing check (the machine may be slow), a bound far below
        // what the evaluation took before it crashed.
        expect(ms, query).toBeLessThan(10_000);
        expect(growth, query).toBeLessThan(200 * MB);
      }
    }
  });

  it('times beyond what a double holds: 400 bad_data; far but finite times are clamped', async () => {
    const inf = '1e309';
    const far = '9999999999999999999999999999999999999999';
    const refused = (res: { status: number; body: { errorType: string; error: string } }, name: string) => {
      expect(res.status).toBe(400);
      expect(res.body.errorType).toBe('bad_data');
      expect(res.body.error).toBe(`invalid parameter "${name}": cannot parse "${inf}" to a valid timestamp`);
    };
    refused(await get(`labels?start=${inf}`), 'start');
    refused(await get(`labels?end=${inf}`), 'end');
    refused(await get(`series?match[]=up&start=${inf}`), 'start');
    refused(await get(`label/job/values?end=${inf}`), 'end');
    refused(await get(`query?query=up&time=${inf}`), 'time');
    refused(await get(`query_range?query=up&start=${inf}&end=${inf}&step=1`), 'start');
    // Finite but beyond Prometheus's maxTime: taken as maxTime (minTime), as for no bound at all.
    expect((await get(`labels?start=-${far}&end=${far}`).expect(200)).body.data).toEqual(['__name__', 'job']);
    expect((await get(`series?match[]=up&start=-${far}&end=${far}`).expect(200)).body.data).toEqual([
      { __name__: 'up', job: 'api' },
    ]);
    expect((await get(`label/job/values?start=-${far}&end=${far}`).expect(200)).body.data).toEqual(['api']);
    expect((await get(`query?query=up&time=${far}`).expect(200)).body.data).toEqual({
      resultType: 'vector',
      result: [],
    });
    expect((await get(`query_range?query=up&start=${far}&end=${far}&step=1`).expect(200)).body.data).toEqual({
      resultType: 'matrix',
      result: [],
    });
    // Times far out inside a query (@, offset) reach neither the database nor an endless loop.
    await get(`query?query=${q('up @ 1e17 offset -100000y')}`).expect(200);
    await get(`query?query=${q('max_over_time(vector(1)[1m:1s] @ 1e17)')}`).expect(200);
  });

  it('a NUL or invalid UTF-8 in a parameter: 400 bad_data, whichever reaches the database', async () => {
    const nul = await get('metadata?metric=%00').expect(400);
    expect(nul.body).toEqual({
      status: 'error',
      errorType: 'bad_data',
      error: 'invalid parameter "metric": "\\u0000" contains a NUL character',
    });
    expect((await get('metadata?metric=up').expect(200)).body.data).toEqual({
      up: [{ type: 'gauge', help: 'Up.', unit: '' }],
    });
    for (const path of [
      `series?match[]=${q('up{job="\0"}')}`,
      `labels?match[]=${q('up{job="\0"}')}`,
      'label/%00/values',
      `query?query=${q('up\0')}`,
      `query_range?query=${q('up')}&start=0%00&end=1&step=1`,
    ]) {
      const res = await get(path);
      expect(res.status, path).toBe(400);
      expect(res.body.errorType, path).toBe('bad_data');
    }
    // A lone surrogate has no UTF-8 (an MCP client's JSON can carry one).
    const mcp = await connectMcp(t.url, (await t.token()).access_token);
    expect(await mcp.refused('query_metrics', { query: 'up{job="\ud800"}' })).toMatchObject({
      status: 400,
      code: 'bad_data',
      detail: expect.stringContaining('not valid UTF-8'),
    });
    await mcp.close();
  });

  it('timeout=0 or negative: 400 bad_data, not a 503', async () => {
    for (const timeout of ['0', '-1', '0s']) {
      for (const path of [
        `query?query=up&timeout=${timeout}`,
        `query_range?query=up&start=0&end=60&step=15&timeout=${timeout}`,
      ]) {
        const res = await get(path).expect(400);
        expect(res.body).toEqual({
          status: 'error',
          errorType: 'bad_data',
          error: `invalid parameter "timeout": timeout must be greater than zero, got "${timeout}"`,
        });
      }
    }
    await get('query?query=up&timeout=10s').expect(200);
  });

  it('deep nesting (50,000-term chains, 10,000 parentheses): 400 bad_data naming the limit', async () => {
    const deep = [
      Array(50_000).fill('2').join('^'),
      Array(3_000).fill('2').join('^'),
      Array(50_000).fill('2').join(' + '),
      Array(50_000).fill('up').join(' or '),
      `${'('.repeat(10_000)}1${')'.repeat(10_000)}`,
      `${'('.repeat(10_000)}1`,
      `${'-'.repeat(10_000)}1`,
      `${'max_over_time('.repeat(1000)}vector(1)${'[1m:1s])'.repeat(1000)}`,
      `${'abs('.repeat(10_000)}up${')'.repeat(10_000)}`,
      `${'sum('.repeat(10_000)}up${')'.repeat(10_000)}`,
      `up${' offset 1m'.repeat(1000)}`,
    ];
    for (const query of deep) {
      const res = await post('query', { query });
      expect(res.status, query.slice(0, 40)).toBe(400);
      expect(res.body.errorType).toBe('bad_data');
      expect(res.body.error).toContain(
        'parse error: query is nested too deeply: more than 500 levels of parentheses, calls, subqueries or operators',
      );
    }
    // Within the limit, a deep query still answers (and to 2.42's precedence: right-associative ^).
    const within = await post('query', { query: Array(400).fill('1').join('^'), time: '0' }).expect(200);
    expect(within.body.data).toEqual({ resultType: 'scalar', result: [0, '1'] });
    const nested = `${'abs('.repeat(240)}-up${')'.repeat(240)}`;
    expect(
      (await post('query', { query: nested, time: String(T0 / 1000) }).expect(200)).body.data.result,
    ).toEqual([{ metric: { job: 'api' }, value: [T0 / 1000, '1'] }]);
    // match[] selectors go through the same parser.
    const selector = await post('series', { 'match[]': `${'('.repeat(10_000)}up${')'.repeat(10_000)}` });
    expect(selector.status).toBe(400);
    expect(selector.body.error).toContain('nested too deeply');
  });

  it('the MCP PromQL tools answer these as tool errors', async () => {
    const mcp = await connectMcp(t.url, (await t.token()).access_token);
    const range = { start: String(T0 / 1000), end: String(T0 / 1000 + 60), step: '15s' };
    expect(await mcp.refused('query_metrics', { query: 'max_over_time(vector(1)[1y:1ms])' })).toMatchObject({
      status: 422,
      code: 'execution',
    });
    expect(
      await mcp.refused('query_metrics_range', {
        query: 'max_over_time(max_over_time(vector(1)[1d:1s])[100y:1s])',
        ...range,
      }),
    ).toMatchObject({ status: 422, code: 'execution' });
    expect(await mcp.refused('query_metrics', { query: Array(5000).fill('2').join('^') })).toMatchObject({
      status: 400,
      code: 'bad_data',
      detail: expect.stringContaining('nested too deeply'),
    });
    expect(await mcp.refused('query_metrics', { query: 'up', time: '1e309' })).toMatchObject({
      status: 400,
      code: 'bad_data',
    });
    expect(await mcp.refused('query_metrics_range', { query: 'up', ...range, timeout: '0' })).toMatchObject({
      status: 400,
      code: 'bad_data',
    });
    await mcp.close();
  });

  it('a query whose client disconnects stops (logged canceled), not at the timeout', async () => {
    // About 6.6 billion window samples (11,000 steps, 7-day windows at 1 s): half a minute or more
    // of CPU, far under the 2-minute METRICS_QUERY_TIMEOUT, and little memory (616,000 points).
    const query = 'sum_over_time(vector(1)[7d:1s])';
    const path = `/prometheus/api/v1/query_range?query=${q(query)}&start=0&end=10999&step=1`;
    const outcomes = () =>
      t.logs.records().filter((r) => r.msg === 'metric query: the client closed the connection');
    const request = httpRequest(`${t.url}${path}`, { headers: { Authorization: auth } });
    const answered = new Promise<string>((resolve) => {
      request.on('response', () => resolve('answered'));
      request.on('error', () => resolve('closed'));
      request.on('close', () => resolve('closed'));
    });
    request.end();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const closedAt = Date.now();
    request.destroy();
    expect(await answered).toBe('closed');
    // The engine notices where it yields (every 50,000 window samples): well within a second.
    let logged = outcomes();
    while (logged.length === 0 && Date.now() - closedAt < 10_000) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      logged = outcomes();
    }
    const stoppedAfter = Date.now() - closedAt;
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ outcome: 'canceled', query });
    // Stopped long before the half minute the query needs: bounds for a slow machine, not timings.
    expect(stoppedAfter).toBeLessThan(10_000);
    expect(logged[0].elapsed_ms as number).toBeLessThan(15_000);
    // The service answers afterwards.
    await get(`query?query=up&time=${T0 / 1000}`).expect(200);
  });
});
