// A real Prometheus 2.42 for bench/metric-store.mjs (the Debian package): started on loopback with
// its remote-write receiver and no scrape targets, its own metrics, and its blocks on disk.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './lib.mjs';

/** The Debian Prometheus 2.42 with its remote-write receiver, on loopback, no scrape targets. */
export async function startPrometheus() {
  const dir = mkdtempSync(join(tmpdir(), 'so-bench-prometheus-'));
  writeFileSync(join(dir, 'prometheus.yml'), JSON.stringify({ global: { evaluation_interval: '1m' } }));
  const port = await freePort();
  const data = join(dir, 'data');
  const child = spawn(
    '/usr/bin/prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${data}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--web.enable-remote-write-receiver',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr.on('data', (b) => (log = (log + b.toString()).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) break;
    if (
      await fetch(`${url}/-/ready`).then(
        (r) => r.status === 200,
        () => false,
      )
    )
      return { url, data, child, stop };
    await new Promise((r) => setTimeout(r, 100));
  }
  await stop();
  throw new Error(`Prometheus did not start: ${log}`);
}

/** A gauge or counter of Prometheus's own /metrics. */
export async function promMetric(url, name) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? NaN : Number(line.split(' ')[1]);
}

/** Waits until Prometheus's head has been compacted to at most 3 h and nothing moved for 3 s. */
export async function prometheusSettled(url) {
  let last = '';
  let stable = 0;
  const started = performance.now();
  while (stable < 3) {
    if (performance.now() - started > 180_000) throw new Error('Prometheus did not settle within 3 minutes');
    await new Promise((r) => setTimeout(r, 1000));
    const [blocks, min, max] = await Promise.all(
      ['prometheus_tsdb_blocks_loaded', 'prometheus_tsdb_head_min_time', 'prometheus_tsdb_head_max_time'].map(
        (m) => promMetric(url, m),
      ),
    );
    const now = `${blocks}/${min}`;
    stable = now === last && max - min <= 3 * 3_600_000 ? stable + 1 : 0;
    last = now;
  }
  return (performance.now() - started) / 1000;
}

/** Prometheus's persistent blocks: count, samples, bytes of the chunk files and of the whole blocks. */
export function prometheusBlocks(data) {
  let samples = 0;
  let chunkBytes = 0;
  let bytes = 0;
  let count = 0;
  for (const name of readdirSync(data)) {
    const dir = join(data, name);
    let meta;
    try {
      meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8'));
    } catch {
      continue; // wal, chunks_head, lock, queries.active
    }
    count++;
    samples += meta.stats.numSamples;
    chunkBytes += du(join(dir, 'chunks'));
    bytes += du(dir);
  }
  return { count, samples, chunkBytes, bytes, total: du(data) };
}

/** Bytes of the files under a path. */
export function du(path) {
  const st = statSync(path);
  if (!st.isDirectory()) return st.size;
  return readdirSync(path).reduce((n, name) => n + du(join(path, name)), 0);
}
