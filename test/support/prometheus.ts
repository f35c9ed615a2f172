/**
 * A real Prometheus (the Debian 2.42 package): started on 127.0.0.1 at a free port with a
 * temporary data directory and the given configuration, queried over its HTTP API, stopped and
 * removed at the end. The differential test's default has no scrape targets (its own samples
 * would move the head past the test's old timestamps) and feeds it through its remote-write
 * receiver; metric-prometheus has it scrape and remote-write to us.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MemorySeries } from './promql-diff/memory-queryable.js';
import { remoteWrite } from './promql-diff/remote-write.js';
import { freePort } from './service-process.js';

export const PROMETHEUS_BINARY = '/usr/bin/prometheus';
export const PROMTOOL_BINARY = '/usr/bin/promtool';

export interface PrometheusOptions {
  /** prometheus.yml (YAML is a superset of JSON, so an object is written as JSON). */
  config?: object;
  /** Extra command-line flags. */
  args?: string[];
}

export class PrometheusServer {
  private constructor(
    private readonly child: ChildProcess,
    private readonly dir: string,
    readonly url: string,
    private readonly log: string[],
  ) {}

  static async start(
    options: PrometheusOptions = {
      config: { global: { evaluation_interval: '1m' } },
      args: ['--web.enable-remote-write-receiver'],
    },
  ): Promise<PrometheusServer> {
    if (!existsSync(PROMETHEUS_BINARY))
      throw new Error(
        `${PROMETHEUS_BINARY} is missing: apt-get install -y prometheus (the Debian 2.42 package)`,
      );
    const dir = mkdtempSync(join(tmpdir(), 'prometheus-'));
    writeFileSync(join(dir, 'prometheus.yml'), JSON.stringify(options.config ?? {}));
    const port = await freePort();
    const child = spawn(
      PROMETHEUS_BINARY,
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--query.lookback-delta=5m',
        ...(options.args ?? []),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const log: string[] = [];
    child.stdout?.on('data', (b: Buffer) => log.push(b.toString()));
    child.stderr?.on('data', (b: Buffer) => log.push(b.toString()));
    const server = new PrometheusServer(child, dir, `http://127.0.0.1:${port}`, log);
    for (let i = 0; i < 300; i++) {
      if (child.exitCode !== null) break;
      const ready = await fetch(`${server.url}/-/ready`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ready) return server;
      await new Promise((r) => setTimeout(r, 100));
    }
    await server.stop();
    throw new Error(`Prometheus did not become ready:\n${log.join('').slice(-2000)}`);
  }

  /** What Prometheus logged so far (for failure messages). */
  output(): string {
    return this.log.join('');
  }

  get exited(): boolean {
    return this.child.exitCode !== null;
  }

  async version(): Promise<string> {
    const body = (await (await fetch(`${this.url}/api/v1/status/buildinfo`)).json()) as {
      data: { version: string };
    };
    return body.data.version;
  }

  /** Writes the series in time order, a window at a time: the head refuses samples an hour older than its newest. */
  async write(series: MemorySeries[], from: number, to: number): Promise<void> {
    await remoteWrite(`${this.url}/api/v1/write`, {}, series, from, to);
  }

  /** A query over the HTTP API: the HTTP status and the parsed JSON body. */
  async query(
    path: 'query' | 'query_range',
    params: Record<string, string>,
  ): Promise<{ status: number; body: unknown }> {
    const response = await fetch(`${this.url}/api/v1/${path}`, {
      method: 'POST',
      body: new URLSearchParams(params),
    });
    return { status: response.status, body: await response.json() };
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      this.child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (this.child.exitCode === null) this.child.kill('SIGKILL');
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
