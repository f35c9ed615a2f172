import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  agentMessageBytes,
  type AgentMessage,
  type MetricSampleMsg,
  type ScrapeReportMsg,
} from '../contracts/agent-protocol/index.js';
import {
  MAX_AGENT_MESSAGE_BYTES,
  MAX_SCRAPE_BYTES,
  MAX_SCRAPE_LABELS,
  MAX_SCRAPE_NAME_CHARS,
  MAX_SCRAPE_PART_BYTES,
  MAX_SCRAPE_SAMPLES,
  MAX_SCRAPE_VALUE_CHARS,
} from '../contracts/agent-protocol/limits.js';
import { MetricsScraper, readScrape, scrapeParts } from './metrics-scraper.js';

const STACK = '6b0f3d52-3a51-4f0e-9d0c-3e1f0d1b2a40';

describe('reading a scrape', () => {
  it('keeps every sample with its labels (name first), value and timestamp (0 when absent)', () => {
    const samples = readScrape(
      [
        '# HELP requests_total Requests.',
        '# TYPE requests_total counter',
        'requests_total{code="200",path="/"} 7',
        'requests_total{code="500",path="/"} 1 1700000000123',
        'temperature NaN',
      ].join('\n'),
    );
    expect(samples).toEqual([
      {
        labels: [
          { name: '__name__', value: 'requests_total' },
          { name: 'code', value: '200' },
          { name: 'path', value: '/' },
        ],
        value: 7,
        timestamp_ms: 0,
      },
      {
        labels: [
          { name: '__name__', value: 'requests_total' },
          { name: 'code', value: '500' },
          { name: 'path', value: '/' },
        ],
        value: 1,
        timestamp_ms: 1_700_000_000_123,
      },
      { labels: [{ name: '__name__', value: 'temperature' }], value: NaN, timestamp_ms: 0 },
    ]);
  });

  it('fails the whole scrape past a limit or on a malformed line, as Prometheus does', () => {
    const labels = (n: number) => Array.from({ length: n }, (_, i) => `l${i}="x"`).join(',');
    expect(readScrape(`m{${labels(MAX_SCRAPE_LABELS - 1)}} 1`)[0].labels).toHaveLength(MAX_SCRAPE_LABELS);
    expect(() => readScrape(`m{${labels(MAX_SCRAPE_LABELS)}} 1`)).toThrow(/line 1: more than 32 labels/);
    expect(() => readScrape(`m{a="1",a="2"} 1`)).toThrow(/duplicate label name "a"/);
    expect(() => readScrape(`m{__name__="x"} 1`)).toThrow(/duplicate label name "__name__"/);
    expect(() => readScrape(`m{a="${'v'.repeat(MAX_SCRAPE_VALUE_CHARS + 1)}"} 1`)).toThrow(/too long/);
    expect(() => readScrape(`m{${'n'.repeat(MAX_SCRAPE_NAME_CHARS + 1)}="v"} 1`)).toThrow(/too long/);
    expect(() => readScrape('ok 1\nnot a sample')).toThrow(/^line 2: invalid value/);
    const many = Array.from({ length: MAX_SCRAPE_SAMPLES + 1 }, (_, i) => `m{i="${i}"} 1`).join('\n');
    expect(() => readScrape(many)).toThrow(`more than ${MAX_SCRAPE_SAMPLES} samples`);
  });

  it('splits a large scrape into parts within their budget, the outcome on the last one only', () => {
    // The largest samples the limits allow, in three-byte characters.
    const big = `m{${Array.from({ length: MAX_SCRAPE_LABELS - 1 }, (_, i) => `l${i}="${'€'.repeat(MAX_SCRAPE_VALUE_CHARS)}"`).join(',')}} 1 -1`;
    const samples = readScrape(Array.from({ length: 40 }, () => big).join('\n'));
    const outcome = {
      stack_id: STACK,
      service: 'web',
      timestamp_ms: 1_700_000_000_000,
      up: true,
      duration_seconds: 0.25,
      samples_scraped: samples.length,
      port: 9100,
    };
    const parts = scrapeParts(outcome, samples);
    expect(parts.length).toBeGreaterThan(5);
    expect(parts.flatMap((p) => p.samples)).toEqual(samples);
    expect(parts.map((p) => p.last)).toEqual([...parts.slice(1).map(() => false), true]);
    for (const part of parts) {
      const bytes = agentMessageBytes({ scrape: part });
      expect(bytes).toBeLessThanOrEqual(MAX_SCRAPE_PART_BYTES + 512);
      expect(bytes).toBeLessThan(MAX_AGENT_MESSAGE_BYTES / 3);
    }
    // The budget is used: each part but the last is too full for one more sample.
    const sampleBytes = agentMessageBytes({ scrape: { ...outcome, samples: [samples[0]], last: false } });
    expect(agentMessageBytes({ scrape: parts[0] }) + sampleBytes).toBeGreaterThan(MAX_SCRAPE_PART_BYTES);
    expect(scrapeParts({ ...outcome, up: false }, [])).toEqual([
      { ...outcome, up: false, samples: [], last: true },
    ]);
  });
});

describe('scraping an endpoint', () => {
  let server: Server | undefined;
  let scraper: MetricsScraper | undefined;
  afterEach(async () => {
    scraper?.close();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    server = undefined;
  });

  /** A loopback HTTP server answering with `answer`; its port. */
  const serve = async (answer: (path: string) => { status: number; body: string | Buffer }) => {
    server = createServer((req, res) => {
      const { status, body } = answer(req.url ?? '');
      res.writeHead(status, { 'content-type': 'text/plain; version=0.0.4' });
      res.end(body);
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  };

  /** One scrape of `port` + `path`, what it sent and what it warned. */
  const scrapeOnce = async (port: number, path = '/metrics') => {
    const sent: AgentMessage[] = [];
    const warnings: Record<string, unknown>[] = [];
    scraper = new MetricsScraper(
      (m) => sent.push(m) > 0,
      (fields) => warnings.push(fields),
    );
    const target = { stackId: STACK, name: 'web', spec: { port, path, interval_ms: 5000 } };
    await scraper.scrape(target as never);
    return { reports: sent.map((m) => m.scrape!), warnings };
  };

  it('sends the samples of a 200 answer with up, the port and the time it began', async () => {
    const port = await serve((path) =>
      path === '/custom'
        ? { status: 200, body: 'hits_total{route="/a"} 3\nhits_total{route="/b"} 4\n' }
        : { status: 404, body: '' },
    );
    const before = Date.now();
    const { reports, warnings } = await scrapeOnce(port, '/custom');
    expect(reports).toHaveLength(1);
    const [report] = reports;
    expect(report).toMatchObject({
      stack_id: STACK,
      service: 'web',
      up: true,
      last: true,
      samples_scraped: 2,
      port,
    });
    expect(report.timestamp_ms).toBeGreaterThanOrEqual(before);
    expect(report.duration_seconds).toBeGreaterThan(0);
    expect(report.samples.map((s: MetricSampleMsg) => [s.labels[1].value, s.value])).toEqual([
      ['/a', 3],
      ['/b', 4],
    ]);
    expect(warnings).toEqual([]);
  });

  it('reports down, without samples, for another status, a malformed body, a body over the cap and no listener', async () => {
    let answer: { status: number; body: string | Buffer } = { status: 503, body: 'm 1\n' };
    const port = await serve(() => answer);
    const down = (reports: ScrapeReportMsg[]) => {
      expect(reports).toHaveLength(1);
      expect(reports[0]).toMatchObject({ up: false, last: true, samples: [], samples_scraped: 0 });
    };
    let result = await scrapeOnce(port);
    down(result.reports);
    expect(result.warnings[0]).toMatchObject({ err: 'HTTP status 503', port });

    answer = { status: 200, body: 'm{a="1"} one\n' };
    result = await scrapeOnce(port);
    down(result.reports);
    expect(result.warnings[0].err).toMatch(/line 1: invalid value "one"/);

    answer = { status: 200, body: Buffer.alloc(MAX_SCRAPE_BYTES + 1, 'a') };
    result = await scrapeOnce(port);
    down(result.reports);
    expect(result.warnings[0].err).toMatch(/larger than/);

    await new Promise((resolve) => server!.close(resolve));
    server = undefined;
    down((await scrapeOnce(port)).reports);
  });

  it('says why a target fails once, not at every interval', async () => {
    const port = await serve(() => ({ status: 500, body: '' }));
    const warnings: unknown[] = [];
    scraper = new MetricsScraper(
      () => true,
      (fields) => warnings.push(fields),
    );
    const target = { stackId: STACK, name: 'web', spec: { port, path: '/metrics', interval_ms: 5000 } };
    for (let i = 0; i < 3; i++) await scraper.scrape(target as never);
    expect(warnings).toHaveLength(1);
  });
});
