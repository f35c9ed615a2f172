/**
 * The monitoring stack of a docker stack, wired (docs/stack-definitions.md, "Monitoring"), through
 * the real app and a real docker-driver agent on podman. The Prometheus, Loki and Grafana images
 * cannot be had here (no registry), so those three services fail to start; what is checked is
 * everything around them: what the agent receives for them (the generated files, filled in, with the
 * stack's own credentials), where secrets are and are not kept, and then the Debian Prometheus
 * binary run on the host with the very prometheus.yml the agent got (its one target and its
 * password file pointed at loopback paths) scraping the stack's web container and remote-writing
 * into the app with the stack's metrics:write client.
 */
import { readFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceSpecMsg } from '../../src/contracts/agent-protocol/index.js';
import { PATHS } from '../../src/server/stacks/monitoring/monitoring-paths.js';
import { AgentProcess } from '../support/agent-process.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { podman, podmanSocket, TEST_IMAGE } from '../support/podman.js';
import { PrometheusServer } from '../support/prometheus.js';
import { freePort, orchestrator } from '../support/stacks.js';

const GRAFANA_PASSWORD = 'grafana-pw-never-stored';
const WEB_TOKEN = 'web-token-never-stored';

/** busybox httpd serving a health file and a Prometheus exposition (YAML single-quoted: '' is '). */
const WEB = `
      - sh
      - -c
      - 'mkdir -p /www && echo ok > /www/health && printf ''# TYPE demo_requests_total counter\\ndemo_requests_total{code="200"} 42\\n'' > /www/metrics && trap "exit 0" TERM; httpd -f -p 8080 -h /www & wait'`;

const stackYaml = (port: number) => `
name: mon
stackkit: basement-kit
services:
  web:
    image: ${TEST_IMAGE}
    command: ${WEB}
    env:
      TOKEN: \${SO_TEST_WEB_TOKEN}
    ports: ["${port}:8080"]
    resources: { cpu: 0.25, memory: 64Mi }
    metrics: { port: 8080, interval: 1s }
monitoring:
  enabled: true
  metrics_store: { retention: 3d, storage: 1Gi }
  log_store: { retention: 2d }
  dashboard: { admin_password: "\${SO_TEST_GRAFANA_PW}" }
`;

interface Series {
  metric: Record<string, string>;
  value: [number, string];
}

describe('the monitoring stack of a docker stack, wired', { timeout: 180_000 }, () => {
  let t: TestApp;
  let api: ReturnType<typeof orchestrator>;
  let agent: AgentProcess;
  let prometheus: PrometheusServer | undefined;
  let publicUrl: string;
  const work = mkdtempSync(join(tmpdir(), 'monitoring-e2e-'));

  beforeAll(async () => {
    const socket = await podmanSocket();
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    t = await startTestApp({
      env: {
        PORT: String(port),
        PUBLIC_URL: publicUrl,
        HEARTBEAT_INTERVAL: '300ms',
        WORKER_DEGRADED_PERCENT: '100',
        WORKER_UNHEALTHY_PERCENT: '100',
      },
    });
    api = orchestrator(t);
    const token = await api.post('/join-tokens', { pre_approved: true });
    agent = AgentProcess.start({
      server: t.url,
      token: token.body.token as string,
      name: 'monitoring-node',
      args: ['--driver', 'docker', '--docker-socket', socket],
      env: { SO_TEST_GRAFANA_PW: GRAFANA_PASSWORD, SO_TEST_WEB_TOKEN: WEB_TOKEN },
    });
    await eventually(async () => {
      const res = await api.get('/workers');
      return (res.body.workers as { name: string; connected: boolean }[]).some(
        (w) => w.name === 'monitoring-node' && w.connected,
      );
    }, 20_000);
  });

  /** Stacks made here: what a failed run leaves on the node is removed by hand. */
  const made: string[] = [];

  afterAll(async () => {
    await prometheus?.stop();
    await agent?.stop();
    for (const id of made) {
      const names = (
        await podman(['ps', '-a', '-q', '--filter', `label=io.stack-orchestrator.stack-id=${id}`])
      )
        .split('\n')
        .filter(Boolean);
      if (names.length > 0) await podman(['rm', '-f', '-t', '0', ...names]);
      await podman(['network', 'rm', '-f', `so-${id.replace(/-/g, '').slice(0, 12)}`]).catch(() => undefined);
    }
    await t?.close();
    rmSync(work, { recursive: true, force: true });
  });

  const desired = (stackId: string) =>
    JSON.parse(readFileSync(join(agent.dataDir, 'stacks', `${stackId}.json`), 'utf8')) as {
      desired: ServiceSpecMsg[];
      logPushUrl?: string;
    };
  const fileOf = (services: ServiceSpecMsg[], service: string, path: string) =>
    services.find((s) => s.name === service)!.files!.find((f) => f.path === path)!.content;
  const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
  const query = async (auth: string, expr: string) => {
    const res = await t.http
      .get('/prometheus/api/v1/query')
      .query({ query: expr })
      .set('Authorization', auth);
    return { status: res.status, series: (res.body as { data?: { result: Series[] } }).data?.result ?? [] };
  };

  it('hands the agent filled-in files and the stack’s own credentials; Prometheus with that configuration scrapes the stack and writes into the built-in store', async () => {
    const webPort = await freePort();
    const created = await api.yaml('post', '/stacks', stackYaml(webPort));
    expect(created.status, created.text).toBe(201);
    const stackId = created.body.id as string;
    made.push(stackId);
    const deploy = await api.post(`/stacks/${stackId}/deploy`);
    expect(deploy.status).toBe(202);
    const job = await api.jobUntil(deploy.body.id as string, ['succeeded', 'failed'], 120_000);
    // The monitoring images are not on this node and no registry is reachable.
    expect(job.results?.map((r) => [r.name, r.ok])).toEqual([
      ['log-store', false],
      ['metrics-store', false],
      ['dashboard', false],
      ['web', true],
    ]);
    expect(job.results?.find((r) => r.name === 'metrics-store')?.error).toMatch(/could not be pulled/);

    // What the agent got: every deploy-time value filled in, the secrets in their files only.
    const record = desired(stackId);
    expect(record.logPushUrl).toBe('http://127.0.0.1:3100/loki/api/v1/push');
    // One scraper per series: the stack's Prometheus scrapes web, so its agent is given no port.
    expect(record.desired.find((s) => s.name === 'web')?.metrics).toEqual({
      port: 0,
      path: '/metrics',
      interval_ms: 1000,
    });
    const promYaml = fileOf(record.desired, 'metrics-store', PATHS.prometheusConfig);
    const prom = load(promYaml) as {
      global: { external_labels: Record<string, string> };
      scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
      remote_write: { url: string; basic_auth: { username: string; password_file: string } }[];
    };
    expect(prom.global.external_labels).toEqual({ stack: 'mon', stack_id: stackId });
    expect(prom.scrape_configs.map((c) => [c.job_name, c.static_configs[0].targets])).toEqual([
      ['mon/web', ['web:8080']],
    ]);
    expect(prom.remote_write[0].url).toBe(`${publicUrl}/prometheus/api/v1/write`);
    const writer = {
      id: prom.remote_write[0].basic_auth.username,
      secret: fileOf(record.desired, 'metrics-store', PATHS.prometheusPassword),
    };
    const datasources = (
      load(fileOf(record.desired, 'dashboard', PATHS.grafanaDatasources)) as {
        datasources: { uid: string; url: string; basicAuthUser?: string }[];
      }
    ).datasources;
    const orchestratorSource = datasources.find((d) => d.uid === 'orchestrator')!;
    expect(orchestratorSource.url).toBe(`${publicUrl}/prometheus`);
    const reader = {
      id: orchestratorSource.basicAuthUser!,
      secret: fileOf(record.desired, 'dashboard', PATHS.grafanaPassword),
    };
    expect(writer.secret).toMatch(/^sos_/);
    expect(reader.secret).toMatch(/^sos_/);
    expect(fileOf(record.desired, 'dashboard', `${PATHS.grafanaDashboardDir}/mon.json`)).toContain(
      `stack_id=\\"${stackId}\\"`,
    );
    expect(fileOf(record.desired, 'log-store', PATHS.lokiConfig)).toContain('retention_period: 48h');
    // The admin password stays a reference in what the service sends.
    expect(record.desired.find((s) => s.name === 'dashboard')!.env.GF_SECURITY_ADMIN_PASSWORD).toBe(
      '${SO_TEST_GRAFANA_PW}',
    );

    // Two clients of the stack's owner, one scope each.
    const clients = (await t.http.get('/api/v1/auth/clients').set('Authorization', await t.adminAuth())).body
      .clients as { client_id: string; name: string; scopes: string[]; owner: string }[];
    expect(clients.find((c) => c.client_id === writer.id)).toMatchObject({
      name: 'stack mon metrics_writer',
      scopes: ['metrics:write'],
      owner: 'default',
    });
    expect(clients.find((c) => c.client_id === reader.id)).toMatchObject({
      name: 'stack mon metrics_reader',
      scopes: ['metrics:read'],
    });

    // The web container runs with its resolved token, which the state reports never carry.
    const name = `so-${stackId.replace(/-/g, '').slice(0, 12)}-web`;
    expect(await podman(['inspect', '--format', '{{json .Config.Env}}', name])).toContain(
      `TOKEN=${WEB_TOKEN}`,
    );
    const db = t.app.get(DataSource);
    // This stack's services as stored: other containers on a shared podman node may be reported
    // too (desired:false), with whatever they hold; the agent can only mask what it was told.
    const reported = async () =>
      (
        await db.query<{ report: { services: { stack_id: string }[] } }[]>(
          'SELECT report FROM worker_reports',
        )
      )
        .flatMap((r) => r.report.services)
        .filter((s) => s.stack_id === stackId);
    await eventually(
      async () => JSON.stringify(await reported()).includes('"TOKEN":"${SO_TEST_WEB_TOKEN}"'),
      20_000,
    );
    // No secret at rest in the clear: jobs, clients, reports.
    for (const [sql, rows] of [
      ['jobs', await db.query('SELECT payload FROM jobs')],
      ['stack_monitoring_clients', await db.query('SELECT secret_enc FROM stack_monitoring_clients')],
      ['oauth_clients', await db.query('SELECT secret_hash FROM oauth_clients')],
      ['worker_reports', await reported()],
      ['stack_revisions', await db.query('SELECT definition FROM stack_revisions')],
    ] as const) {
      const text = JSON.stringify(rows);
      for (const secret of [writer.secret, reader.secret, WEB_TOKEN, GRAFANA_PASSWORD])
        expect(text, sql).not.toContain(secret);
    }
    expect(t.logs.text()).not.toContain(writer.secret);
    expect(t.logs.text()).not.toContain(reader.secret);

    // The stack's services in the built-in store, from the state reports.
    const admin = await t.adminAuth();
    await eventually(
      async () =>
        (await query(admin, `stack_service_up{stack_id="${stackId}",service="web"}`)).series[0]?.value[1] ===
        '1',
      20_000,
    );

    // The Debian Prometheus with the agent's prometheus.yml: only the container-network address and
    // the password file's container path are swapped for loopback ones.
    const passwordFile = join(work, 'orchestrator-password');
    writeFileSync(passwordFile, writer.secret, { mode: 0o600 });
    const config = load(promYaml.replace(PATHS.prometheusPassword, passwordFile)) as typeof prom;
    expect(config.scrape_configs[0].static_configs[0].targets).toEqual(['web:8080']);
    config.scrape_configs[0].static_configs[0].targets = [`127.0.0.1:${webPort}`];
    prometheus = await PrometheusServer.start({ config, args: [] });
    const started = prometheus;
    await eventually(
      async () => (await query(admin, `demo_requests_total{stack="mon",service="web"}`)).series.length === 1,
      60_000,
      500,
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}\nPrometheus said:\n${started.output().slice(-3000)}`, { cause: err });
    });
    const { series } = await query(admin, `demo_requests_total{stack="mon",service="web"}`);
    expect(series[0].metric).toMatchObject({
      __name__: 'demo_requests_total',
      code: '200',
      job: 'mon/web',
      service: 'web',
      stack: 'mon',
      stack_id: stackId,
      instance: `127.0.0.1:${webPort}`,
    });
    expect(series[0].value[1]).toBe('42');
    expect((await query(admin, `up{stack_id="${stackId}",job="mon/web"}`)).series[0]?.value[1]).toBe('1');
    // The agent, which scrapes published metrics ports every second otherwise, stored nothing of web.
    // (Its samples carry `worker_id`; the stack's Prometheus's do not.)
    expect(
      (await query(admin, `{__name__=~"demo_requests_total|up",stack_id="${stackId}",worker_id!=""}`)).series,
    ).toEqual([]);

    // The dashboard's client reads; the metrics store's client only writes.
    expect((await query(basic(reader.id, reader.secret), `up{stack_id="${stackId}"}`)).series).toHaveLength(
      1,
    );
    expect((await query(basic(writer.id, writer.secret), 'up')).status).toBe(403);
    await prometheus.stop();
    prometheus = undefined;

    // A second deploy keeps the clients (same files, no forced replacement of what holds them).
    const again = await api.jobUntil(
      (await api.post(`/stacks/${stackId}/deploy`)).body.id as string,
      ['succeeded', 'failed'],
      120_000,
    );
    expect(again.results?.find((r) => r.name === 'web')).toMatchObject({ action: 'unchanged', ok: true });
    expect(fileOf(desired(stackId).desired, 'metrics-store', PATHS.prometheusPassword)).toBe(writer.secret);

    // Destroying the stack deletes its clients.
    const destroyed = await api.jobUntil(
      (await api.delete(`/stacks/${stackId}`)).body.id as string,
      ['succeeded', 'failed'],
      60_000,
    );
    expect(destroyed.status).toBe('succeeded');
    // The job reads succeeded once its stack is gone (one transaction), its clients before it.
    expect((await api.get(`/stacks/${stackId}`)).status).toBe(404);
    const left = (await t.http.get('/api/v1/auth/clients').set('Authorization', admin)).body.clients as {
      client_id: string;
    }[];
    expect(left.map((c) => c.client_id)).not.toContain(writer.id);
    expect(left.map((c) => c.client_id)).not.toContain(reader.id);
    expect(await db.query('SELECT * FROM stack_monitoring_clients')).toEqual([]);
  });
});
