import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
});
