import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { NodeMetricsRecorder } from '../../src/server/metric-store/node-metrics.js';
import { FLUSH_SLICE_SERIES } from '../../src/server/metric-store/sample-buffer.js';
import { MetricStoreService } from '../../src/server/metric-store/store/metric-store.service.js';
import type { AgentProcess } from '../support/agent-process.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { connectedAgent } from '../support/stacks.js';

// What the store records by itself: every replica's own /metrics, and each heartbeat's node
// figures, as series an operator queries through the Prometheus API.
describe('metric store sources', () => {
  let t: TestApp;
  let auth: string;
  let agent: AgentProcess | undefined;

  beforeAll(async () => {
    t = await startTestApp({ env: { METRICS_SCRAPE_INTERVAL: '1s', HEARTBEAT_INTERVAL: '500ms' } });
    auth = await t.adminAuth();
  });
  afterAll(async () => {
    agent?.child.kill('SIGKILL');
    await t.close();
  });

  const query = async (q: string) =>
    (
      await t.http
        .get(`/prometheus/api/v1/query?query=${encodeURIComponent(q)}`)
        .set('Authorization', auth)
        .expect(200)
    ).body.data.result as { metric: Record<string, string>; value: [number, string] }[];

  it('stores its own /metrics with job and instance, and up 1', async () => {
    await eventually(async () => (await query('up{job="stack-orchestrator"}')).length > 0, 15_000);
    const [up] = await query('up{job="stack-orchestrator"}');
    expect(up.value[1]).toBe('1');
    expect(up.metric.instance).toBeTruthy();
    // The service's own metrics are there under the same target labels.
    await t.http.get('/api/v1/orchestrator/info').set('Authorization', auth).expect(200);
    await eventually(
      async () => (await query('stack_api_requests_total{job="stack-orchestrator",route!=""}')).length > 0,
      15_000,
    );
    const meta = await t.http
      .get('/prometheus/api/v1/metadata?metric=stack_api_requests_total')
      .set('Authorization', auth);
    expect(meta.body.data.stack_api_requests_total[0].type).toBe('counter');
  });

  it('stores each heartbeat of a worker as node series labelled worker_id and worker', async () => {
    const connected = await connectedAgent(t, 'metrics-node');
    agent = connected.agent;
    const selector = `{worker_id="${connected.workerId}",worker="metrics-node"}`;
    for (const name of [
      'stack_node_cpu_percent',
      'stack_node_memory_percent',
      'stack_node_disk_percent',
      'stack_node_containers_running',
    ])
      await eventually(async () => (await query(`${name}${selector}`)).length === 1, 20_000);
    const [memory] = await query(`stack_node_memory_percent${selector}`);
    const value = Number(memory.value[1]);
    expect(value).toBeGreaterThan(0);
    expect(value).toBeLessThanOrEqual(100);
    // The worker view and the stored series agree within a heartbeat's change.
    const view = await t.http
      .get(`/api/v1/orchestrator/workers/${connected.workerId}`)
      .set('Authorization', auth)
      .expect(200);
    expect(view.body.metrics.memory_percent).toBeGreaterThan(0);
  });

  it('writes a large flush of node figures in slices, every sample stored', async () => {
    // 1,200 workers' heartbeats: 4,800 series, more than two slices' worth.
    const workers = Array.from({ length: 1200 }, () => randomUUID());
    const at = Date.now();
    const recorder = t.app.get(NodeMetricsRecorder);
    const store = t.app.get(MetricStoreService);
    const write = vi.spyOn(store, 'write');
    try {
      for (const id of workers)
        recorder.record(
          'default',
          id,
          'slice-node',
          {
            cpu_percent: 1,
            memory_percent: 2,
            disk_percent: 3,
            containers_running: 4,
          },
          at,
        );
      await recorder.flush();
      // The writes that carried these workers' series (the periodic flush may write others').
      const ours = write.mock.calls
        .map(([, series]) =>
          series.filter((s) => s.labels.some((l) => l.name === 'worker' && l.value === 'slice-node')),
        )
        .filter((series) => series.length > 0);
      expect(ours.length).toBeGreaterThan(1);
      expect(ours.length).toBe(Math.ceil((workers.length * 4) / FLUSH_SLICE_SERIES));
      for (const series of ours) expect(series.length).toBeLessThanOrEqual(FLUSH_SLICE_SERIES);
      expect(ours.reduce((n, series) => n + series.length, 0)).toBe(workers.length * 4);
    } finally {
      write.mockRestore();
    }
    for (const name of ['stack_node_cpu_percent', 'stack_node_containers_running']) {
      const [count] = await query(`count(${name}{worker="slice-node"})`);
      expect(count.value[1]).toBe(String(workers.length));
    }
  });

  it("keeps each heartbeat's samples, and labels them with the worker's name at the time", async () => {
    // The recorder builds a worker's label sets once; a renamed worker gets new ones.
    const recorder = t.app.get(NodeMetricsRecorder);
    const id = randomUUID();
    const figures = (cpu: number) => ({
      cpu_percent: cpu,
      memory_percent: 1,
      disk_percent: 1,
      containers_running: 0,
    });
    const at = Date.now() - 60_000;
    recorder.record('default', id, 'before-rename', figures(10), at);
    recorder.record('default', id, 'before-rename', figures(20), at + 1_000);
    await recorder.flush();
    recorder.record('default', id, 'after-rename', figures(30), at + 2_000);
    await recorder.flush();
    const range = async (worker: string) =>
      (
        await t.http
          .get(
            `/prometheus/api/v1/query_range?query=${encodeURIComponent(
              `stack_node_cpu_percent{worker_id="${id}",worker="${worker}"}`,
            )}&start=${(at - 500) / 1000}&end=${(at + 2_500) / 1000}&step=0.5`,
          )
          .set('Authorization', auth)
          .expect(200)
      ).body.data.result as { values: [number, string][] }[];
    const before = await range('before-rename');
    expect(before).toHaveLength(1);
    expect(new Set(before[0].values.map(([, v]) => v))).toEqual(new Set(['10', '20']));
    const after = await range('after-rename');
    expect(after).toHaveLength(1);
    expect(after[0].values.map(([, v]) => v)).toContain('30');
  });
});
