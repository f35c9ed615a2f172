/**
 * The monitoring stack's generated files, as a valid definition carries them and as a job fills
 * them in: their structure, what they point at, and `promtool check config` (the Debian
 * Prometheus 2.42's, /usr/bin/promtool) on every prometheus.yml.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { service, valid } from '../../../../test/support/definitions.js';
import type { VectorSelector } from '../../metric-store/promql/ast.js';
import { parseExpr, type Expr } from '../../metric-store/promql/index.js';
import { NODE_SERIES, SERVICE_SERIES } from '../../metric-store/node-metrics.js';
import { getCatalog } from '../catalog/catalog.js';
import type { ServiceDefinition, StackDefinition } from '../definition/definition.types.js';
import { provisionPayload, serviceDigest } from '../service-spec.js';
import { credentialRoles, deploySpecs } from './deploy-values.js';
import { DATASOURCE_UID } from './grafana-provisioning.js';
import { logPushUrl } from './monitoring-files.js';
import { PATHS } from './monitoring-paths.js';

const PROMTOOL = '/usr/bin/promtool';

/** The vector selectors of a parsed PromQL expression. */
function selectors(e: Expr): VectorSelector[] {
  switch (e.type) {
    case 'vectorSelector':
      return [e];
    case 'matrixSelector':
      return [e.selector];
    case 'binary':
      return [...selectors(e.lhs), ...selectors(e.rhs)];
    case 'aggregate':
      return selectors(e.expr);
    case 'call':
      return e.args.flatMap(selectors);
    case 'paren':
    case 'unary':
    case 'subquery':
      return selectors(e.expr);
    case 'number':
    case 'string':
      return [];
  }
}
const STACK_ID = '3f2a9c1d-0b7e-4c2a-9d1e-5f6a7b8c9d0e';

const definition = (
  services: string,
  monitoring = 'enabled: true\n  dashboard: { admin_password: "${GRAFANA_PW}" }',
) =>
  valid(`name: shop
stackkit: cloud-kit
services:
${services}monitoring:
  ${monitoring}
`).definition;

const SHOP = `  web:
    image: nginx:1.27
    ports: ["8080:80"]
    metrics: { port: 80 }
  api:
    image: registry.example.com/team/api:2.1
    metrics: { port: 9100, path: /internal/metrics, interval: 5s }
  slow:
    image: registry.example.com/team/batch:1
    metrics: { port: 9200, interval: 1h }
  worker:
    image: registry.example.com/team/worker:1
`;

const file = (s: ServiceDefinition, path: string): string => {
  const found = s.files?.find((f) => f.path === path);
  if (!found) throw new Error(`${s.name} has no ${path}`);
  return found.content;
};

const values = (d: StackDefinition) => ({
  stackId: STACK_ID,
  orchestratorUrl: 'https://so.example.com',
  clients: new Map(
    credentialRoles(d.services).map((role) => [
      role,
      { clientId: `cli_${role}`, secret: `sos_${role}_secret` },
    ]),
  ),
});

/** The definition's files filled in as a job sends them (secrets sealed by a reversible stand-in). */
function deployed(d: StackDefinition) {
  const seal = (plaintext: string, context: string) => `sealed(${context})=${plaintext}`;
  return deploySpecs(d.services, values(d), seal);
}

interface PromConfig {
  global: { scrape_interval: string; external_labels: Record<string, string> };
  scrape_configs: {
    job_name: string;
    scrape_interval: string;
    scrape_timeout: string;
    metrics_path: string;
    static_configs: { targets: string[]; labels: Record<string, string> }[];
  }[];
  remote_write: { url: string; basic_auth: { username: string; password_file: string } }[];
}

const work = mkdtempSync(join(tmpdir(), 'promtool-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function promtool(config: string): string {
  const path = join(work, `prometheus-${Math.random().toString(36).slice(2)}.yml`);
  writeFileSync(path, config);
  try {
    return execFileSync(PROMTOOL, ['check', 'config', path], { encoding: 'utf8', stdio: 'pipe' });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`promtool refused ${config}\n${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: err });
  }
}

describe('monitoring files: prometheus.yml', () => {
  it('scrapes every docker service that declares metrics by name on the stack network, and remote-writes with the stack client', () => {
    const d = definition(SHOP);
    const store = service({ definition: d }, 'metrics-store');
    expect(store.command).toContain(`--config.file=${PATHS.prometheusConfig}`);
    const template = load(file(store, PATHS.prometheusConfig)) as PromConfig;
    expect(template.remote_write[0]).toEqual({
      url: '{{orchestrator_url}}/prometheus/api/v1/write',
      basic_auth: { username: '{{metrics_writer_id}}', password_file: PATHS.prometheusPassword },
    });
    expect(store.files?.find((f) => f.path === PATHS.prometheusPassword)).toEqual({
      path: PATHS.prometheusPassword,
      content: '',
      mode: 0o444,
      credential: 'metrics_writer',
    });

    const spec = deployed(d).services.find((s) => s.name === 'metrics-store')!;
    const config = load(spec.files!.find((f) => f.path === PATHS.prometheusConfig)!.content) as PromConfig;
    expect(config.global.external_labels).toEqual({ stack: 'shop', stack_id: STACK_ID });
    expect(
      config.scrape_configs.map((c) => [
        c.job_name,
        c.static_configs[0].targets,
        c.metrics_path,
        c.scrape_interval,
        c.scrape_timeout,
      ]),
    ).toEqual([
      ['shop/web', ['web:80'], '/metrics', '15s', '10s'],
      ['shop/api', ['api:9100'], '/internal/metrics', '5s', '5s'],
      ['shop/slow', ['slow:9200'], '/metrics', '3600s', '10s'],
    ]);
    expect(
      config.scrape_configs.every((c) => `shop/${c.static_configs[0].labels.service}` === c.job_name),
    ).toBe(true);
    expect(config.remote_write).toEqual([
      {
        url: 'https://so.example.com/prometheus/api/v1/write',
        basic_auth: { username: 'cli_metrics_writer', password_file: PATHS.prometheusPassword },
      },
    ]);
    promtool(spec.files!.find((f) => f.path === PATHS.prometheusConfig)!.content);
  });

  it('leaves a container to the stack metrics store when it runs: the agent scrapes no published metrics port then', () => {
    const scrapePorts = (d: StackDefinition) =>
      Object.fromEntries(
        provisionPayload(d, 1).command.services.map((s) => [s.name, s.metrics?.port ?? null]),
      );
    const mixed = `  web:\n    image: nginx:1.27\n    ports: ["8080:80"]\n    metrics: { port: 80 }\n  proc:\n    command: [/bin/app]\n    ports: [9000]\n    metrics: { port: 9000 }\n`;
    // Without a metrics store the agent scrapes the published port (and the process's own).
    expect(scrapePorts(definition(mixed, 'enabled: false'))).toEqual({ web: 8080, proc: 9000 });
    const d = definition(mixed);
    const withStore = scrapePorts(d);
    expect([withStore.web, withStore.proc]).toEqual([0, 9000]);
    expect(deployed(d).services.find((s) => s.name === 'web')!.metrics).toEqual({
      port: 0,
      path: '/metrics',
      interval_ms: 15_000,
    });
    // The store's own configuration has the container and not the process.
    const text = file(service({ definition: d }, 'metrics-store'), PATHS.prometheusConfig);
    expect((load(text) as PromConfig).scrape_configs.map((c) => c.static_configs[0].targets)).toEqual([
      ['web:80'],
    ]);
  });

  it('passes promtool for several definitions: none scraped, the shortest and longest intervals, process services left to their agent, monitoring parts off', () => {
    const cases = [
      definition(`  web:\n    image: nginx:1.27\n`),
      definition(`  fast:\n    image: nginx:1.27\n    metrics: { port: 80, interval: 1s }\n`),
      definition(
        `  hourly:\n    image: nginx:1.27\n    metrics: { port: 80, interval: 1h, path: /a/b.c-d_e }\n`,
      ),
      definition(
        `  proc:\n    command: [/bin/app]\n    ports: [9000]\n    metrics: { port: 9000 }\n  web:\n    image: nginx:1.27\n    metrics: { port: 81 }\n`,
      ),
      definition(SHOP, 'enabled: true\n  dashboard: { enabled: false }\n  log_store: { enabled: false }'),
      definition(
        SHOP,
        'enabled: true\n  metrics_store: { retention: 90d, storage: 50Gi }\n  dashboard: { admin_password: "${PW}" }',
      ),
    ];
    const checked: string[][] = [];
    for (const d of cases) {
      const spec = deployed(d).services.find((s) => s.name === 'metrics-store')!;
      const text = spec.files!.find((f) => f.path === PATHS.prometheusConfig)!.content;
      expect(promtool(text)).toMatch(/SUCCESS/);
      checked.push((load(text) as PromConfig).scrape_configs.map((c) => c.static_configs[0].targets[0]));
    }
    expect(checked).toEqual([
      [],
      ['fast:80'],
      ['hourly:80'],
      ['web:81'],
      ['web:80', 'api:9100', 'slow:9200'],
      ['web:80', 'api:9100', 'slow:9200'],
    ]);
    // Retention and size are flags (the catalogue's command), not configuration.
    const store = service({ definition: cases[5] }, 'metrics-store');
    expect(store.command).toEqual(
      expect.arrayContaining(['--storage.tsdb.retention.time=90d', '--storage.tsdb.retention.size=50GB']),
    );
  });

  it('fails promtool on a configuration it must refuse, so the check above means something', () => {
    const d = definition(`  fast:\n    image: nginx:1.27\n    metrics: { port: 80, interval: 1s }\n`);
    const text = deployed(d).services.find((s) => s.name === 'metrics-store')!.files![0].content;
    expect(() => promtool(text.replace('scrape_timeout: 1s', 'scrape_timeout: 10s'))).toThrow(
      /promtool refused/,
    );
  });
});

describe('monitoring files: Loki', () => {
  it('keeps log_store.retention in the generated configuration the command names', () => {
    const d = definition(
      SHOP,
      'enabled: true\n  dashboard: { enabled: false }\n  log_store: { retention: 30d }',
    );
    const loki = service({ definition: d }, 'log-store');
    expect(loki.command).toEqual([`-config.file=${PATHS.lokiConfig}`]);
    const config = load(file(loki, PATHS.lokiConfig)) as Record<string, Record<string, unknown>>;
    expect(config.limits_config).toEqual({ retention_period: '720h' });
    expect(config.compactor).toMatchObject({ retention_enabled: true, delete_request_store: 'filesystem' });
    expect(config.server).toMatchObject({ http_listen_port: 3100 });
    expect(config.auth_enabled).toBe(false);
    expect(logPushUrl(getCatalog(), d.services)).toBe('http://127.0.0.1:3100/loki/api/v1/push');
    const noLogs = definition(
      SHOP,
      'enabled: true\n  dashboard: { enabled: false }\n  log_store: { enabled: false }',
    );
    expect(logPushUrl(getCatalog(), noLogs.services)).toBeNull();
  });
});

interface Datasource {
  name: string;
  uid: string;
  type: string;
  url: string;
  basicAuth?: boolean;
  basicAuthUser?: string;
  secureJsonData?: Record<string, string>;
}

interface Panel {
  type: string;
  title: string;
  datasource: { uid: string; type: string };
  targets: { expr: string; datasource: { uid: string } }[];
  gridPos: { x: number; y: number; w: number; h: number };
}

/** The panels every stack dashboard has, from the orchestrator's series. */
const ALWAYS = ['Node CPU', 'Node memory', 'Services running', 'Restarts', 'Health-check latency'];

describe('monitoring files: Grafana', () => {
  it('provisions the stack metrics store, its log store and the orchestrator with the stack reader client', () => {
    const d = definition(SHOP);
    const dashboard = service({ definition: d }, 'dashboard');
    expect(dashboard.env.GF_SECURITY_ADMIN_PASSWORD).toBe('${GRAFANA_PW}');
    const spec = deployed(d).services.find((s) => s.name === 'dashboard')!;
    const text = (path: string) => spec.files!.find((f) => f.path === path)!.content;
    const { apiVersion, datasources } = load(text(PATHS.grafanaDatasources)) as {
      apiVersion: number;
      datasources: Datasource[];
    };
    expect(apiVersion).toBe(1);
    expect(datasources.map((s) => [s.uid, s.type, s.url])).toEqual([
      [DATASOURCE_UID.metrics, 'prometheus', 'http://metrics-store:9090'],
      [DATASOURCE_UID.logs, 'loki', 'http://log-store:3100'],
      [DATASOURCE_UID.orchestrator, 'prometheus', 'https://so.example.com/prometheus'],
    ]);
    expect(datasources[2]).toMatchObject({
      basicAuth: true,
      basicAuthUser: 'cli_metrics_reader',
      secureJsonData: { basicAuthPassword: `$__file{${PATHS.grafanaPassword}}` },
    });
    // Grafana expands `$` in every provisioned value: the file reference is the only one.
    expect(text(PATHS.grafanaDatasources).match(/\$/g)).toHaveLength(1);
    // The credential file the data source reads is one of the container's files, sent empty and sealed aside.
    expect(spec.files!.find((f) => f.path === PATHS.grafanaPassword)).toEqual({
      path: PATHS.grafanaPassword,
      content: '',
      mode: 0o444,
    });
    const providers = (load(text(PATHS.grafanaDashboards)) as { providers: { options: { path: string } }[] })
      .providers;
    expect(providers[0].options.path).toBe(PATHS.grafanaDashboardDir);
    expect(spec.files!.some((f) => f.path === `${PATHS.grafanaDashboardDir}/shop.json`)).toBe(true);
  });

  it('builds a dashboard whose panels query existing series through provisioned data sources, laid out without overlap', () => {
    const d = definition(SHOP);
    const spec = deployed(d).services.find((s) => s.name === 'dashboard')!;
    const board = JSON.parse(spec.files!.find((f) => f.path.endsWith('/shop.json'))!.content) as {
      uid: string;
      title: string;
      panels: Panel[];
    };
    expect(board.uid).toBe(`so-${STACK_ID}`);
    expect(board.uid.length).toBeLessThanOrEqual(40);
    expect(board.title).toBe('Stack shop');
    expect(board.panels.map((p) => p.title)).toEqual([
      ...ALWAYS,
      'Scrape targets up',
      'Request rate',
      'Logs',
    ]);
    const known = new Set<string>([...Object.values(NODE_SERIES), ...Object.values(SERVICE_SERIES), 'up']);
    for (const panel of board.panels) {
      expect(Object.values(DATASOURCE_UID)).toContain(panel.datasource.uid);
      for (const target of panel.targets) {
        expect(target.datasource.uid).toBe(panel.datasource.uid);
        if (panel.type === 'logs') {
          expect(target.expr).toBe(`{stack_id="${STACK_ID}"}`);
          continue;
        }
        // Every selector names a series that exists, or is the request-rate pattern over `*_requests_total`.
        for (const selector of selectors(parseExpr(target.expr))) {
          if (selector.name) expect(known).toContain(selector.name);
          else
            expect(selector.matchers).toContainEqual({
              type: '=~',
              name: '__name__',
              value: '.+_requests_total',
            });
        }
        if (panel.datasource.uid === DATASOURCE_UID.orchestrator)
          expect(target.expr).toContain(`stack_id="${STACK_ID}"`);
      }
    }
    const cells = new Set<string>();
    for (const { gridPos: g } of board.panels)
      for (let x = g.x; x < g.x + g.w; x++)
        for (let y = g.y; y < g.y + g.h; y++) {
          expect(cells.has(`${x},${y}`)).toBe(false);
          cells.add(`${x},${y}`);
        }
  });

  it('leaves out what the stack does not have: no scraped service, no log store', () => {
    const d = definition(
      `  web:\n    image: nginx:1.27\n`,
      'enabled: true\n  dashboard: { admin_password: "${PW}" }\n  log_store: { enabled: false }',
    );
    const spec = deployed(d).services.find((s) => s.name === 'dashboard')!;
    const board = JSON.parse(spec.files!.find((f) => f.path.endsWith('.json'))!.content) as {
      panels: Panel[];
    };
    expect(board.panels.map((p) => p.title)).toEqual(ALWAYS);
    const { datasources } = load(spec.files!.find((f) => f.path === PATHS.grafanaDatasources)!.content) as {
      datasources: Datasource[];
    };
    expect(datasources.map((s) => s.uid)).toEqual([DATASOURCE_UID.metrics, DATASOURCE_UID.orchestrator]);
  });
});

describe('monitoring files: deploy-time values', () => {
  it('seals credential files aside, keeps the definition digests, and needs every value it fills in', () => {
    const d = definition(SHOP);
    const { services, secrets } = deployed(d);
    expect(secrets).toEqual([
      {
        service: 'metrics-store',
        path: PATHS.prometheusPassword,
        sealed: `sealed(job-file:${STACK_ID}:metrics-store:${PATHS.prometheusPassword})=sos_metrics_writer_secret`,
      },
      {
        service: 'dashboard',
        path: PATHS.grafanaPassword,
        sealed: `sealed(job-file:${STACK_ID}:dashboard:${PATHS.grafanaPassword})=sos_metrics_reader_secret`,
      },
    ]);
    for (const spec of services) {
      expect(spec.digest).toBe(serviceDigest(d.services.find((s) => s.name === spec.name)!));
      for (const f of spec.files ?? []) {
        expect(f.content).not.toMatch(
          /\{\{(orchestrator_url|stack_id|metrics_writer_id|metrics_reader_id)\}\}/,
        );
        expect(f.content).not.toContain('sos_');
      }
    }
    expect(() =>
      deploySpecs(d.services, { ...values(d), orchestratorUrl: "https://x.example.com/'a" }, (p) => p),
    ).toThrow(/orchestrator_url/);
    expect(() => deploySpecs(d.services, { ...values(d), clients: new Map() }, (p) => p)).toThrow(
      /metrics_writer_id|metrics_writer/,
    );
  });

  it('changes the metrics store digest when what it scrapes changes, and nothing else', () => {
    const before = definition(SHOP);
    const after = definition(SHOP.replace('interval: 1h', 'interval: 30m'));
    const digest = (d: StackDefinition, name: string) => serviceDigest(service({ definition: d }, name));
    expect(digest(after, 'metrics-store')).not.toBe(digest(before, 'metrics-store'));
    expect(digest(after, 'log-store')).toBe(digest(before, 'log-store'));
    expect(digest(after, 'web')).toBe(digest(before, 'web'));
  });
});
