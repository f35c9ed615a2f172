import { request, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentMonitoring } from '../../src/server/stack-monitoring/agent-monitoring.js';
import { StackLogRetention } from '../../src/server/stack-monitoring/stack-log-retention.js';
import { StackLogsService } from '../../src/server/stack-monitoring/stack-logs.service.js';
import type { AgentProcess } from '../support/agent-process.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import {
  connectedAgent,
  FAST_AGENT_ENV,
  fixtureService,
  freePort,
  httpGet,
  orchestrator,
  servicePid,
} from '../support/stacks.js';

interface LogLine {
  time: string;
  service: string;
  worker_id: string;
  stream: string;
  line: string;
}

/**
 * A process-driver stack whose services expose metrics, run by a real agent: the agent scrapes the
 * declared endpoint and ships the services' output; the samples land in the built-in metric store
 * under the stack owner, the lines are served at GET .../stacks/{id}/logs.
 */
describe('stack monitoring without containers (process driver)', () => {
  let t: TestApp;
  let api: ReturnType<typeof orchestrator>;
  let agent: AgentProcess;
  let workerId: string;
  let auth: string;
  /** Stack `mon`: `web` with metrics every second, `worker` without; log retention 1d. */
  let mon: { id: string; web: number; worker: number };
  /** Stack `other`: one service, the default log retention. */
  let other: { id: string; port: number };

  const service = fixtureService;

  const deploy = async (yaml: string): Promise<string> => {
    const created = await api.yaml('post', '/stacks', yaml);
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const job = await api.post(`/stacks/${id}/deploy`);
    expect(job.status).toBe(202);
    expect((await api.jobUntil(job.body.id as string, ['succeeded', 'failed'])).status).toBe('succeeded');
    return id;
  };

  const query = async (q: string, authorization = auth) => {
    const res = await t.http
      .get(`/prometheus/api/v1/query?query=${encodeURIComponent(q)}`)
      .set('Authorization', authorization);
    expect(res.status).toBe(200);
    return res.body.data.result as { metric: Record<string, string>; value: [number, string] }[];
  };

  const logs = async (stackId: string, params = '', authorization = auth) =>
    t.http.get(`/api/v1/orchestrator/stacks/${stackId}/logs${params}`).set('Authorization', authorization);

  const lines = async (stackId: string, params = ''): Promise<LogLine[]> => {
    const res = await logs(stackId, params);
    expect(res.status).toBe(200);
    return res.body.lines as LogLine[];
  };

  beforeAll(async () => {
    t = await startTestApp({ env: FAST_AGENT_ENV });
    api = orchestrator(t);
    auth = await t.adminAuth();
    ({ agent, workerId } = await connectedAgent(t, 'monitor-node'));
    const [web, worker, port] = [await freePort(), await freePort(), await freePort()];
    mon = {
      web,
      worker,
      id: await deploy(`
name: mon
stackkit: basement-kit
monitoring:
  log_store: { retention: 1d }
services:${service('web', web, `    metrics: { port: ${web}, interval: 1s }\n`)}${service('worker', worker)}`),
    };
    other = {
      port,
      id: await deploy(`name: other\nstackkit: basement-kit\nservices:${service('app', port)}`),
    };
  });

  afterAll(async () => {
    await agent?.stop();
    await t?.close();
  });

  it('stores the scraped series under the stack owner, labelled stack, service and worker_id, with up 1', async () => {
    // Something to count: requests the fixture answers.
    expect(await httpGet(mon.web, '/version')).toEqual({ status: 200, text: '7' });
    const selector = `{stack="mon",service="web",worker_id="${workerId}"}`;
    await eventually(
      async () =>
        (await query(`http_service_requests_total${selector}`)).some((s) => s.metric.path === '/version'),
      20_000,
    );
    const series = await query(`http_service_requests_total${selector}`);
    const version = series.find((s) => s.metric.path === '/version')!;
    expect(version.metric).toEqual({
      __name__: 'http_service_requests_total',
      path: '/version',
      stack: 'mon',
      stack_id: mon.id,
      service: 'web',
      worker_id: workerId,
      job: 'mon/web',
      instance: `${workerId}:${mon.web}`,
    });
    expect(Number(version.value[1])).toBeGreaterThanOrEqual(1);
    // The scrapes themselves are counted too (the fixture counts /metrics like any path).
    await eventually(async () => {
      const [scrapes] = await query(`http_service_requests_total{stack="mon",path="/metrics"}`);
      return scrapes !== undefined && Number(scrapes.value[1]) >= 3;
    }, 20_000);

    const [up] = await query(`up${selector}`);
    expect(up.value[1]).toBe('1');
    expect(up.metric.job).toBe('mon/web');
    const [scraped] = await query(`scrape_samples_scraped${selector}`);
    expect(Number(scraped.value[1])).toBeGreaterThanOrEqual(3);
    expect((await query(`scrape_duration_seconds${selector}`)).length).toBe(1);
    // A label the endpoint sets under a target label's name is kept as exported_<name>.
    const [info] = await query(`http_service_info${selector}`);
    expect(info.metric).toMatchObject({ job: 'mon/web', exported_job: 'fixture', version: '7' });
    // Only the service that declares metrics is scraped.
    expect(await query('up{service="worker"}')).toEqual([]);
    expect(await query('up{stack="other"}')).toEqual([]);
  });

  it("serves the services' output lines, each filter applied, oldest first", async () => {
    await eventually(async () => (await lines(mon.id)).length >= 2, 15_000);
    const all = await lines(mon.id);
    expect(all.map((l) => [l.service, l.stream, l.line, l.worker_id]).sort()).toEqual(
      [
        ['web', 'stdout', `http-service listening on ${mon.web}`, workerId],
        ['worker', 'stdout', `http-service listening on ${mon.worker}`, workerId],
      ].sort(),
    );
    for (const l of all) expect(l.time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

    // Lines of each stream, one after the other.
    expect(await httpGet(mon.web, '/log?line=first%20out')).toEqual({ status: 204, text: '' });
    expect(await httpGet(mon.web, '/log?line=then%20err&stream=stderr')).toEqual({ status: 204, text: '' });
    expect(await httpGet(mon.worker, '/log?line=from%20worker')).toEqual({ status: 204, text: '' });
    await eventually(async () => (await lines(mon.id)).length >= 5, 15_000);
    const web = await lines(mon.id, '?service=web');
    expect(web.map((l) => [l.stream, l.line])).toEqual([
      ['stdout', `http-service listening on ${mon.web}`],
      ['stdout', 'first out'],
      ['stderr', 'then err'],
    ]);
    expect((await lines(mon.id, '?service=worker')).map((l) => l.line)).toEqual([
      `http-service listening on ${mon.worker}`,
      'from worker',
    ]);
    expect(await lines(mon.id, '?service=nobody')).toEqual([]);

    // limit: the newest lines, the older ones said to be left out.
    const limited = await logs(mon.id, '?service=web&limit=2');
    expect(limited.body).toEqual({ stack_id: mon.id, lines: web.slice(1), truncated: true });
    expect((await logs(mon.id, '?service=web&limit=3')).body.truncated).toBe(false);

    // since (inclusive) and until (exclusive), as RFC 3339 times or durations back from now.
    const at = web[1].time;
    expect((await lines(mon.id, `?service=web&since=${at}`)).map((l) => l.line)).toEqual(
      web.filter((l) => l.time >= at).map((l) => l.line),
    );
    expect((await lines(mon.id, `?service=web&until=${at}`)).map((l) => l.line)).toEqual(
      web.filter((l) => l.time < at).map((l) => l.line),
    );
    expect(await lines(mon.id, '?since=2999-01-01T00:00:00Z')).toEqual([]);
    expect((await lines(mon.id, '?since=1h&service=worker')).length).toBe(2);
    expect(await lines(mon.id, '?until=1h')).toEqual([]);
    // Through the public prefix too; the other stack's lines are its own.
    const pub = await t.http
      .get(`/v1/orchestrator/stacks/${mon.id}/logs?service=worker`)
      .set('Authorization', auth);
    expect(pub.status).toBe(200);
    expect((await lines(other.id)).map((l) => l.line)).toEqual([`http-service listening on ${other.port}`]);
  });

  it('refuses bad filters with problem+json naming the parameter', async () => {
    for (const [params, path] of [
      ['?since=yesterday', 'since'],
      ['?until=2026-02-30T00:00:00Z', 'until'],
      ['?since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z', 'since'],
      ['?limit=0', 'limit'],
      ['?limit=10001', 'limit'],
      ['?limit=ten', 'limit'],
      ['?service=Not_A_Name', 'service'],
      ['?follow=maybe', 'follow'],
      ['?follow=true&until=1m', 'until'],
    ]) {
      const res = await logs(mon.id, params);
      expect(res.status, params).toBe(422);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.code).toBe('validation_failed');
      expect(
        (res.body.errors as { path: string }[]).map((e) => e.path),
        params,
      ).toContain(path);
    }
    expect((await logs(mon.id, '?color=red')).status).toBe(422);
    expect((await logs('not-a-uuid')).status).toBe(404);
    expect((await logs('6b0f3d52-3a51-4f0e-9d0c-3e1f0d1b2a40')).status).toBe(404);
  });

  /** Opens a followed stream; `lines` fills as they arrive. */
  const follow = (params: string, accept?: string) =>
    new Promise<{ res: IncomingMessage; text: () => string; close: () => void }>((resolve, reject) => {
      const req = request(`${t.url}/api/v1/orchestrator/stacks/${mon.id}/logs${params}`, {
        headers: { authorization: auth, ...(accept ? { accept } : {}) },
      });
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('error', () => undefined);
        resolve({ res, text: () => text, close: () => req.destroy() });
      });
      req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
      req.end();
    });

  it('follow streams the newest lines, then each new one, as NDJSON, and ends when the client goes', async () => {
    const streams = t.app.get(StackLogsService);
    const followed = await follow('?follow=true&service=web&limit=2');
    expect(followed.res.statusCode).toBe(200);
    expect(followed.res.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
    expect(followed.res.headers['cache-control']).toBe('no-store');
    const parsed = () =>
      followed
        .text()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as LogLine);
    await eventually(() => parsed().length === 2);
    expect(parsed().map((l) => l.line)).toEqual(['first out', 'then err']);
    expect(streams.streaming).toBe(1);

    expect(await httpGet(mon.web, '/log?line=live%20one')).toEqual({ status: 204, text: '' });
    // Another service's line does not pass the filter.
    expect(await httpGet(mon.worker, '/log?line=not%20for%20web')).toEqual({ status: 204, text: '' });
    expect(await httpGet(mon.web, '/log?line=live%20two&stream=stderr')).toEqual({ status: 204, text: '' });
    await eventually(() => parsed().length === 4, 10_000);
    expect(parsed().slice(2)).toEqual([
      {
        time: expect.any(String) as string,
        service: 'web',
        worker_id: workerId,
        stream: 'stdout',
        line: 'live one',
      },
      {
        time: expect.any(String) as string,
        service: 'web',
        worker_id: workerId,
        stream: 'stderr',
        line: 'live two',
      },
    ]);

    followed.close();
    await eventually(() => streams.streaming === 0, 5_000);
  });

  it('follow speaks server-sent events to a client that asks for them', async () => {
    const streams = t.app.get(StackLogsService);
    const followed = await follow('?follow=true&service=worker&limit=1', 'text/event-stream');
    expect(followed.res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    await eventually(() => followed.text().includes('not for web'));
    expect(await httpGet(mon.worker, '/log?line=event%20two')).toEqual({ status: 204, text: '' });
    await eventually(() => followed.text().includes('event two'), 10_000);
    const events = followed
      .text()
      .split('\n\n')
      .filter((e) => e.includes('event: line'));
    expect(events).toHaveLength(2);
    for (const e of events) expect(e).toMatch(/^id: \d+\nevent: line\ndata: \{.*\}$/);
    expect(JSON.parse(events[1].split('data: ')[1])).toMatchObject({ service: 'worker', line: 'event two' });
    followed.close();
    await eventually(() => streams.streaming === 0, 5_000);
  });

  it("hides a stack's lines and series from another owner", async () => {
    const created = await t.http
      .post('/api/v1/auth/clients')
      .set('Authorization', auth)
      .send({ name: 'acme', owner: 'acme', scopes: ['admin'] })
      .expect(201);
    const acme = `Bearer ${(await t.token({ clientId: created.body.client_id, secret: created.body.client_secret })).access_token}`;
    const res = await logs(mon.id, '', acme);
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
    expect((await logs(mon.id, '?follow=true', acme)).status).toBe(404);
    expect(await query('up{stack="mon"}', acme)).toEqual([]);
    expect(await query('http_service_requests_total', acme)).toEqual([]);
  });

  it('up turns 0 once the service is killed (restart: never keeps it down)', async () => {
    const pid = servicePid(agent.dataDir, mon.id, 'web');
    expect(pid).toBeGreaterThan(0);
    process.kill(pid, 'SIGKILL');
    await eventually(async () => (await query('up{stack="mon",service="web"}'))[0]?.value[1] === '0', 20_000);
    const [scraped] = await query('scrape_samples_scraped{stack="mon",service="web"}');
    expect(scraped.value[1]).toBe('0');
    // The failed scrape marked the service's own series stale: an instant query no longer returns
    // them, where it would return the last value for the 5-minute lookback otherwise.
    expect(await query('http_service_uptime_seconds{stack="mon",service="web"}')).toEqual([]);
    expect(await query('http_service_requests_total{stack="mon",service="web"}')).toEqual([]);
    const range = await t.http
      .get(
        `/prometheus/api/v1/query?query=${encodeURIComponent('count_over_time(http_service_uptime_seconds{stack="mon"}[10m])')}`,
      )
      .set('Authorization', auth);
    expect(Number(range.body.data.result[0].value[1])).toBeGreaterThan(0);
  });

  it('takes samples and lines only for stacks placed on the worker that sends them', async () => {
    // What the gateway hands on from an agent's stream, as a worker that does not run `mon` would send it.
    const monitoring = t.app.get(AgentMonitoring);
    const stranger = crypto.randomUUID();
    const scrape = (from: string, name: string) =>
      monitoring.scrape(from, {
        stack_id: mon.id,
        service: 'web',
        timestamp_ms: Date.now(),
        samples: [{ labels: [{ name: '__name__', value: name }], value: 42, timestamp_ms: 0 }],
        last: true,
        up: true,
        duration_seconds: 0.01,
        samples_scraped: 1,
        port: 1,
      });
    const say = (from: string, line: string) =>
      monitoring.output(from, {
        lines: [{ stack_id: mon.id, service: 'web', time_ms: Date.now(), stream: 'stdout', line }],
      });
    scrape(stranger, 'forged_total');
    say(stranger, 'forged line');
    // The same from the worker that runs it is taken: the refusal above is about the sender.
    scrape(workerId, 'genuine_total');
    say(workerId, 'genuine line');
    await eventually(async () => (await query('genuine_total{stack="mon"}')).length === 1, 10_000);
    await eventually(async () =>
      (await lines(mon.id, '?service=web')).some((l) => l.line === 'genuine line'),
    );
    expect(await query('forged_total')).toEqual([]);
    expect((await lines(mon.id, '?limit=10000')).some((l) => l.line === 'forged line')).toBe(false);
  });

  it("deletes lines past their stack's retention, and keeps the others", async () => {
    const retention = t.app.get(StackLogRetention);
    const count = async (id: string) => (await lines(id, '?limit=10000')).length;
    const before = { mon: await count(mon.id), other: await count(other.id) };
    expect(before.mon).toBeGreaterThan(0);
    // Two days on: past mon's 1d, within the default 7d of other.
    expect(await retention.sweep(new Date(Date.now() + 2 * 86_400_000))).toBe(before.mon);
    expect(await count(mon.id)).toBe(0);
    expect(await count(other.id)).toBe(before.other);
    expect(await retention.sweep(new Date(Date.now() + 8 * 86_400_000))).toBe(before.other);
    expect(await count(other.id)).toBe(0);
  });
});
