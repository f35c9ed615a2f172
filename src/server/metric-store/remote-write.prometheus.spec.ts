/**
 * Remote write from a real Prometheus 2.42 (the Debian package's /usr/bin/prometheus): it scrapes
 * a loopback exporter started here and remote-writes to a loopback receiver started here; the
 * bodies it sends must decode to the series, values and labels served, stale markers included.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { labelsFromRecord, labelsKey } from './labels.js';
import { decodeRemoteWrite, type DecodedWriteRequest } from './remote-write.js';
import { isStaleMarker, STALE_NAN_BITS } from './series.js';
import { parseTextExposition } from './text-import.js';

const EXPOSITION = `# HELP demo_requests_total Requests served.
# TYPE demo_requests_total counter
demo_requests_total{code="200",path="/a \\"quoted\\"\\\\ \\nnewline é"} 42
demo_requests_total{code="500",path="/b"} 3
# TYPE demo_special gauge
demo_special{kind="nan"} NaN
demo_special{kind="inf"} +Inf
demo_special{kind="neginf"} -Inf
demo_special{kind="small",} 1.5e-3
demo_special{ kind = "spaces" }	4
demo_special{kind="tab\\tkept"} -0
# HELP demo_temperature_celsius A gauge that goes away.
# TYPE demo_temperature_celsius gauge
demo_temperature_celsius 21.5
`;

function listen(server: Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
}

function body(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

describe('remote write from Prometheus 2.42', { timeout: 40_000 }, () => {
  let exposition = EXPOSITION;
  const received: DecodedWriteRequest[] = [];
  const headers: IncomingMessage['headers'][] = [];
  /** Bodies the decoder refused: there must be none. */
  const refusals: string[] = [];
  let exporter: Server;
  let receiver: Server;
  let prometheus: ChildProcess;
  let exporterPort: number;
  let dir: string;
  let log = '';

  beforeAll(async () => {
    exporter = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      res.end(exposition);
    });
    receiver = createServer((req, res) => {
      void body(req).then((b) => {
        headers.push(req.headers);
        try {
          received.push(decodeRemoteWrite(b));
          res.writeHead(204).end();
        } catch (err) {
          refusals.push(String(err));
          res.writeHead(400).end(String(err));
        }
      });
    });
    exporterPort = await listen(exporter);
    const receiverPort = await listen(receiver);
    dir = mkdtempSync(join(tmpdir(), 'prometheus-rw-'));
    writeFileSync(
      join(dir, 'prometheus.yml'),
      JSON.stringify({
        global: { scrape_interval: '1s', evaluation_interval: '1s' },
        scrape_configs: [{ job_name: 'demo', static_configs: [{ targets: [`127.0.0.1:${exporterPort}`] }] }],
        remote_write: [
          {
            url: `http://127.0.0.1:${receiverPort}/write`,
            queue_config: { batch_send_deadline: '500ms', min_backoff: '100ms', max_backoff: '1s' },
            metadata_config: { send: true, send_interval: '1s' },
          },
        ],
      }),
    );
    prometheus = spawn(
      'prometheus',
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        '--web.listen-address=127.0.0.1:0',
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    prometheus.stderr!.on('data', (c: Buffer) => (log += c.toString()));
  });

  afterAll(async () => {
    if (prometheus.exitCode === null) {
      const exited = new Promise((resolve) => prometheus.once('exit', resolve));
      prometheus.kill('SIGTERM');
      await exited;
    }
    await Promise.all([exporter, receiver].map((s) => new Promise((resolve) => s.close(resolve))));
    rmSync(dir, { recursive: true, force: true });
  });

  /** Every decoded series so far, by label-set key, with its samples in arrival order. */
  function seen(): Map<string, { t: number; v: number; bits: bigint }[]> {
    const out = new Map<string, { t: number; v: number; bits: bigint }[]>();
    for (const request of received)
      for (const s of request.series) {
        const list = out.get(labelsKey(s.labels)) ?? [];
        const view = new DataView(s.values.buffer, s.values.byteOffset, s.values.byteLength);
        s.timestamps.forEach((t, i) =>
          list.push({ t, v: s.values[i], bits: view.getBigUint64(i * 8, true) }),
        );
        out.set(labelsKey(s.labels), list);
      }
    return out;
  }

  async function until(what: string, ready: () => boolean): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (!ready()) {
      if (prometheus.exitCode !== null) throw new Error(`prometheus exited: ${log}`);
      if (Date.now() > deadline)
        throw new Error(
          `timed out waiting for ${what}; seen ${[...seen().keys()].join(' ')}; refused: ${refusals.join('; ')}; prometheus said: ${log}`,
        );
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('sends the scraped series with job and instance labels, values and metadata that decode exactly', async () => {
    const key = (name: string, extra: Record<string, string> = {}) =>
      labelsKey(
        labelsFromRecord({ __name__: name, job: 'demo', instance: `127.0.0.1:${exporterPort}`, ...extra }),
      );
    const quoted = key('demo_requests_total', { code: '200', path: '/a "quoted"\\ \nnewline é' });
    await until(
      'the scraped series',
      () => seen().has(quoted) && seen().has(key('demo_temperature_celsius')),
    );
    const series = seen();
    expect(series.get(quoted)![0].v).toBe(42);
    expect(series.get(key('demo_requests_total', { code: '500', path: '/b' }))![0].v).toBe(3);
    expect(series.get(key('demo_temperature_celsius'))![0].v).toBe(21.5);
    expect(series.get(key('up'))![0].v).toBe(1);
    for (const samples of series.values())
      for (const { t } of samples) expect(Number.isInteger(t)).toBe(true);
    expect(headers[0]['content-encoding']).toBe('snappy');
    expect(headers[0]['content-type']).toBe('application/x-protobuf');
    expect(headers[0]['x-prometheus-remote-write-version']).toBe('0.1.0');

    await until('metadata', () => received.some((r) => r.metadata.length > 0));
    const metadata = received.flatMap((r) => r.metadata);
    expect(metadata).toContainEqual({
      metric: 'demo_requests_total',
      type: 'counter',
      help: 'Requests served.',
      unit: '',
    });
    expect(metadata).toContainEqual({
      metric: 'demo_temperature_celsius',
      type: 'gauge',
      help: 'A gauge that goes away.',
      unit: '',
    });
  });

  it('scraped what the text import reads from the same exposition: series, labels and values', () => {
    const extra = [
      { name: 'job', value: 'demo' },
      { name: 'instance', value: `127.0.0.1:${exporterPort}` },
    ];
    const ours = parseTextExposition(EXPOSITION, 0).series.map((s) => ({
      key: labelsKey(
        labelsFromRecord(Object.fromEntries([...s.labels, ...extra].map((l) => [l.name, l.value]))),
      ),
      value: s.values[0],
    }));
    const theirs = seen();
    const scraped = [...theirs.keys()].filter((k) => k.startsWith('{__name__="demo_')).sort();
    expect(scraped).toEqual(ours.map((o) => o.key).sort());
    // -0 reaches us as 0: proto3 leaves a zero double off the wire, and -0 == 0 in Go.
    for (const { key, value } of ours)
      expect(Object.is(theirs.get(key)![0].v, value === 0 ? 0 : value), key).toBe(true);
  });

  it('sends a stale marker, bit for bit, when a series disappears from the target', async () => {
    const gauge = labelsKey(
      labelsFromRecord({
        __name__: 'demo_temperature_celsius',
        job: 'demo',
        instance: `127.0.0.1:${exporterPort}`,
      }),
    );
    exposition = EXPOSITION.split('\n# HELP demo_temperature_celsius')[0] + '\n';
    await until('the stale marker', () => (seen().get(gauge) ?? []).some((s) => isStaleMarker(s.v)));
    const samples = seen().get(gauge)!;
    const marker = samples.find((s) => isStaleMarker(s.v))!;
    expect(marker.bits).toBe(STALE_NAN_BITS);
    expect(samples.filter((s) => s.t < marker.t).every((s) => s.v === 21.5)).toBe(true);
  });
});
