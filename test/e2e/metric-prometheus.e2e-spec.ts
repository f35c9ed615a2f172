/**
 * A real Prometheus 2.42 and promtool against the metric store, configured as an operator would
 * (docs/metric-store-design.md, "Tested with Prometheus and promtool"): Prometheus scrapes a
 * loopback exporter every second and remote-writes twice, once with basic_auth and once with its
 * oauth2 client-credentials block against /oauth/token, each as a client of its own owner, so each
 * owner's data can only have come through its own block. Then promtool queries us.
 */
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { createClient, type Credentials } from '../support/mcp-clients.js';
import { PROMTOOL_BINARY, PrometheusServer } from '../support/prometheus.js';

const run = promisify(execFile);
type Sample = [number, string];
interface Series {
  metric: Record<string, string>;
  value?: Sample;
  values?: Sample[];
}

const GAUGE = 21.5;
const BUCKETS: Record<string, number> = { '0.1': 3, '0.5': 7, '+Inf': 9 };
/** The exporter's sample count per scrape: counter, gauge, three buckets, sum and count. */
const SAMPLES_PER_SCRAPE = 7;

describe('a real Prometheus 2.42 and promtool against the metric store', { timeout: 90_000 }, () => {
  let t: TestApp;
  let prometheus: PrometheusServer;
  let exporter: Server;
  let target: string;
  /** The counter's value at each scrape; a failing exporter answers 500. */
  let counter = 100;
  let failing = false;
  const served = new Set<number>();
  /** Per owner: the client Prometheus writes with and the one the test (and promtool) reads with. */
  const owners = {} as Record<'basic' | 'oauth', { writer: Credentials; reader: Credentials }>;

  beforeAll(async () => {
    t = await startTestApp();
    const admin = await t.adminAuth();
    for (const [kind, owner] of [
      ['basic', 'prom-basic'],
      ['oauth', 'prom-oauth'],
    ] as const)
      owners[kind] = {
        writer: await createClient(t.url, admin, `${kind} writer`, ['metrics:write'], owner),
        reader: await createClient(t.url, admin, `${kind} reader`, ['metrics:read'], owner),
      };
    exporter = createServer((_req, res) => {
      if (failing) return void res.writeHead(500).end('down');
      counter += 3;
      served.add(counter);
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      res.end(
        [
          '# HELP demo_requests_total Requests served.',
          '# TYPE demo_requests_total counter',
          `demo_requests_total{path="/api"} ${counter}`,
          '# HELP demo_temperature_celsius The temperature.',
          '# TYPE demo_temperature_celsius gauge',
          `demo_temperature_celsius{room="lab"} ${GAUGE}`,
          '# HELP demo_latency_seconds Request latency.',
          '# TYPE demo_latency_seconds histogram',
          ...Object.entries(BUCKETS).map(([le, n]) => `demo_latency_seconds_bucket{le="${le}"} ${n}`),
          'demo_latency_seconds_sum 2.25',
          'demo_latency_seconds_count 9',
          '',
        ].join('\n'),
      );
    });
    await new Promise<void>((resolve) => exporter.listen(0, '127.0.0.1', resolve));
    target = `127.0.0.1:${(exporter.address() as AddressInfo).port}`;
    const write = `${t.url}/prometheus/api/v1/write`;
    const queue = { batch_send_deadline: '1s', min_backoff: '100ms', max_backoff: '1s' };
    const metadata = { send: true, send_interval: '1s' };
    prometheus = await PrometheusServer.start({
      config: {
        global: { scrape_interval: '1s', evaluation_interval: '1s' },
        scrape_configs: [{ job_name: 'demo', static_configs: [{ targets: [target] }] }],
        remote_write: [
          {
            name: 'basic',
            url: write,
            basic_auth: { username: owners.basic.writer.clientId, password: owners.basic.writer.secret },
            queue_config: queue,
            metadata_config: metadata,
          },
          {
            name: 'oauth',
            url: write,
            oauth2: {
              client_id: owners.oauth.writer.clientId,
              client_secret: owners.oauth.writer.secret,
              token_url: `${t.url}/oauth/token`,
              scopes: ['metrics:write'],
            },
            queue_config: queue,
            metadata_config: metadata,
          },
        ],
      },
      args: ['--log.level=warn'],
    });
  });

  afterAll(async () => {
    await prometheus?.stop();
    await new Promise((resolve) => exporter?.close(resolve));
    await t?.close();
  });

  const basic = (c: Credentials) => `Basic ${Buffer.from(`${c.clientId}:${c.secret}`).toString('base64')}`;

  /** An instant query of ours as `reader`, or of Prometheus itself without one; the result. */
  async function query(q: string, reader?: Credentials, time = Date.now() / 1000): Promise<Series[]> {
    const base = reader ? `${t.url}/prometheus` : prometheus.url;
    const params = new URLSearchParams({ query: q, time: String(time) });
    const response = await fetch(`${base}/api/v1/query?${params.toString()}`, {
      headers: reader ? { authorization: basic(reader) } : {},
    });
    const body = (await response.json()) as { status: string; data: { result: Series[] } };
    expect(body.status, JSON.stringify(body)).toBe('success');
    return body.data.result;
  }

  /** Waits for `check` to pass, saying what Prometheus logged if it never does. */
  async function until(check: () => Promise<boolean>): Promise<void> {
    await eventually(check, 40_000, 250).catch((err: Error) => {
      throw new Error(`${err.message}; Prometheus said:\n${prometheus.output().slice(-3000)}`);
    });
  }

  const labels = (extra: Record<string, string> = {}) => ({ job: 'demo', instance: target, ...extra });

  it.each(['basic', 'oauth'] as const)(
    'remote_write with %s: the scraped series under that owner, values as served and as Prometheus stored them',
    async (kind) => {
      const { reader } = owners[kind];
      // At least three scrapes of the counter have arrived.
      await until(
        async () => ((await query('demo_requests_total[1h]', reader))[0]?.values?.length ?? 0) >= 3,
      );
      const now = Date.now() / 1000;
      const [ours] = await query('demo_requests_total[1h]', reader, now);
      expect(ours.metric).toEqual({ __name__: 'demo_requests_total', path: '/api', ...labels() });
      const [theirs] = await query('demo_requests_total[1h]', undefined, now);
      // Every sample we hold is one Prometheus scraped (same time, same value) and one served.
      for (const sample of ours.values!) {
        expect(theirs.values).toContainEqual(sample);
        expect(served.has(Number(sample[1]))).toBe(true);
      }
      expect(await query('demo_temperature_celsius', reader)).toEqual([
        {
          metric: { __name__: 'demo_temperature_celsius', room: 'lab', ...labels() },
          value: [expect.any(Number), String(GAUGE)],
        },
      ]);
      const buckets = await query('demo_latency_seconds_bucket', reader);
      expect(Object.fromEntries(buckets.map((b) => [b.metric.le, Number(b.value![1])]))).toEqual(BUCKETS);
      expect(buckets.every((b) => b.metric.job === 'demo' && b.metric.instance === target)).toBe(true);
      expect((await query('demo_latency_seconds_sum', reader))[0].value![1]).toBe('2.25');
      expect((await query('demo_latency_seconds_count', reader))[0].value![1]).toBe('9');
      // Prometheus's own series about the scrape.
      const up = await query('up', reader);
      expect(up).toEqual([{ metric: { __name__: 'up', ...labels() }, value: [expect.any(Number), '1'] }]);
      const scraped = await query('scrape_samples_scraped', reader);
      expect(scraped[0].value![1]).toBe(String(SAMPLES_PER_SCRAPE));
      for (const name of [
        'scrape_duration_seconds',
        'scrape_samples_post_metric_relabeling',
        'scrape_series_added',
      ])
        expect(await query(name, reader), name).toEqual([
          { metric: { __name__: name, ...labels() }, value: expect.anything() },
        ]);
    },
  );

  it.each(['basic', 'oauth'] as const)(
    'remote_write with %s: metadata sent periodically arrives',
    async (kind) => {
      const { reader } = owners[kind];
      const metadata = async () => {
        const response = await fetch(`${t.url}/prometheus/api/v1/metadata`, {
          headers: { authorization: basic(reader) },
        });
        return ((await response.json()) as { data: Record<string, { type: string; help: string }[]> }).data;
      };
      await until(async () => Object.keys(await metadata()).length >= 3);
      expect(await metadata()).toMatchObject({
        demo_requests_total: [{ type: 'counter', help: 'Requests served.', unit: '' }],
        demo_temperature_celsius: [{ type: 'gauge', help: 'The temperature.', unit: '' }],
        demo_latency_seconds: [{ type: 'histogram', help: 'Request latency.', unit: '' }],
      });
    },
  );

  /** promtool with the reader's client id and secret in the URL (2.42's promtool has no --http.config.file). */
  async function promtool(args: string[], reader?: Credentials): Promise<{ code: number; out: string }> {
    const credentials = reader
      ? `${encodeURIComponent(reader.clientId)}:${encodeURIComponent(reader.secret)}@`
      : '';
    const server = `http://${credentials}${t.url.slice('http://'.length)}/prometheus`;
    const [command, ...rest] = args;
    const argv = ['query', command, ...rest.map((a) => a.replace('{server}', server))];
    return run(PROMTOOL_BINARY, argv, { timeout: 20_000 }).then(
      ({ stdout, stderr }) => ({ code: 0, out: stdout + stderr }),
      (err: { code?: number; stdout?: string; stderr?: string }) => ({
        code: err.code ?? -1,
        out: `${err.stdout ?? ''}${err.stderr ?? ''}`,
      }),
    );
  }

  it('promtool query instant, range, series and labels with basic auth; without it a clean failure', async () => {
    const { reader } = owners.basic;
    await until(async () => (await query('up', reader)).length > 0);
    const instant = await promtool(['instant', '{server}', 'up'], reader);
    expect(instant).toEqual({
      code: 0,
      out: expect.stringContaining(`up{instance="${target}", job="demo"} => 1 @[`),
    });

    const end = Math.floor(Date.now() / 1000);
    const range = await promtool(
      ['range', `--start=${end - 60}`, `--end=${end}`, '--step=1s', '{server}', 'demo_temperature_celsius'],
      reader,
    );
    expect(range.code, range.out).toBe(0);
    expect(range.out).toContain(`demo_temperature_celsius{instance="${target}", job="demo", room="lab"} =>`);
    expect(range.out).toMatch(/\n21\.5 @\[\d+(\.\d+)?\]/);

    // `query range` also takes headers: a Bearer token instead of the URL's credentials.
    const token = (await t.token(reader)).access_token;
    const bearer = await promtool([
      'range',
      `--header=Authorization=Bearer ${token}`,
      `--start=${end - 60}`,
      `--end=${end}`,
      '--step=15s',
      '{server}',
      'up',
    ]);
    expect(bearer.code, bearer.out).toBe(0);
    expect(bearer.out).toContain(`up{instance="${target}", job="demo"} =>`);

    const series = await promtool(['series', '--match=demo_latency_seconds_bucket', '{server}'], reader);
    expect(series.code, series.out).toBe(0);
    for (const le of Object.keys(BUCKETS))
      expect(series.out).toContain(
        `{__name__="demo_latency_seconds_bucket", instance="${target}", job="demo", le="${le}"}`,
      );

    const values = await promtool(['labels', '{server}', 'job'], reader);
    expect(values).toEqual({ code: 0, out: 'demo\n' });

    const refused = await promtool(['instant', '{server}', 'up']);
    expect(refused.code).toBe(1);
    expect(refused.out).toMatch(/401|unauthorized/i);
    expect(refused.out).not.toMatch(/panic|goroutine/);
    // A writer may not read: 403, cleanly.
    const writer = await promtool(['instant', '{server}', 'up'], owners.basic.writer);
    expect(writer.code).toBe(1);
    expect(writer.out).toMatch(/403|forbidden/i);
  });

  it('a target that goes down: its stale markers reach us and its series end, as in Prometheus', async () => {
    for (const { reader } of Object.values(owners))
      expect(await query('demo_temperature_celsius', reader)).toHaveLength(1);
    failing = true;
    await until(async () => (await query('demo_temperature_celsius')).length === 0);
    // Far sooner than the 5-minute lookback would end them: the markers did it.
    for (const [kind, { reader }] of Object.entries(owners)) {
      let seen = '';
      await until(async () => {
        const [gauge, requests, up] = await Promise.all(
          ['demo_temperature_celsius', 'demo_requests_total', 'up'].map((q) => query(q, reader)),
        );
        seen = `${kind} at ${Date.now()}: ${JSON.stringify({ gauge, requests, up })}`;
        return gauge.length === 0 && requests.length === 0 && up[0]?.value?.[1] === '0';
      }).catch((err: Error) => {
        throw new Error(`${err.message}\nwe answered ${seen}`);
      });
    }
  });
});
