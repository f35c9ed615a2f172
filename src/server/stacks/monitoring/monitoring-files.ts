import type { Catalog, MonitoringComponent } from '../catalog/catalog.js';
import type {
  MonitoringDefinition,
  ServiceDefinition,
  ServiceFileDefinition,
} from '../definition/definition.types.js';
import { grafanaDashboardProvider, grafanaDatasources } from './grafana-provisioning.js';
import { lokiConfig } from './loki-config.js';
import { CONFIG_MODE, CREDENTIAL_MODE, PATHS } from './monitoring-paths.js';
import { prometheusConfig, type ScrapeTarget } from './prometheus-config.js';
import { stackDashboard } from './stack-dashboard.js';

/**
 * The monitoring services with their generated configuration (docs/stack-definitions.md,
 * "Monitoring"): part of the normalized definition, so a revision shows them, the size limits count
 * them and the digest of a monitoring service changes when what it is wired to changes (a service
 * that starts declaring `metrics` replaces the metrics store). Containers reach each other by
 * service name on the stack's network (the docker driver's), at the ports they listen on.
 */
export function withMonitoringFiles(
  catalog: Catalog,
  stack: string,
  monitoring: MonitoringDefinition,
  monitoringServices: ServiceDefinition[],
  own: ServiceDefinition[],
): ServiceDefinition[] {
  const component = (s: ServiceDefinition): MonitoringComponent | undefined =>
    catalog.monitoring.services.find((t) => t.name === s.name)?.component;
  const serviceOf = (c: MonitoringComponent) => monitoringServices.find((s) => component(s) === c);
  const url = (s: ServiceDefinition | undefined) =>
    s && s.ports.length > 0 ? `http://${s.name}:${s.ports[0].container}` : null;
  const metricsStore = serviceOf('metrics_store');
  const logStore = serviceOf('log_store');

  // Process services are not on the stack's network: their agent scrapes them.
  // (`metrics` is absent or null when a service declares none, by the revision's age.)
  const targets: ScrapeTarget[] = own.flatMap((s) =>
    s.metrics && s.driver === 'docker'
      ? [
          {
            service: s.name,
            address: `${s.name}:${s.metrics.port}`,
            path: s.metrics.path,
            interval_ms: s.metrics.interval_ms,
          },
        ]
      : [],
  );

  const configFile = (path: string, content: string): ServiceFileDefinition => ({
    path,
    content,
    mode: CONFIG_MODE,
    credential: null,
  });
  const filesOf = (s: ServiceDefinition): ServiceFileDefinition[] => {
    switch (component(s)) {
      case 'metrics_store':
        return [
          configFile(PATHS.prometheusConfig, prometheusConfig({ stack, targets })),
          {
            path: PATHS.prometheusPassword,
            content: '',
            mode: CREDENTIAL_MODE,
            credential: 'metrics_writer',
          },
        ];
      case 'log_store':
        return [
          configFile(
            PATHS.lokiConfig,
            lokiConfig({
              stack,
              port: s.ports[0]?.container ?? 3100,
              retentionDays: monitoring.log_store?.retention_days ?? 0,
            }),
          ),
        ];
      case 'dashboard':
        return [
          configFile(
            PATHS.grafanaDatasources,
            grafanaDatasources({ stack, metricsUrl: url(metricsStore) ?? '', logsUrl: url(logStore) }),
          ),
          configFile(PATHS.grafanaDashboards, grafanaDashboardProvider(stack)),
          configFile(
            `${PATHS.grafanaDashboardDir}/${stack}.json`,
            stackDashboard({ stack, scraped: targets.map((t) => t.service), logs: logStore !== undefined }),
          ),
          { path: PATHS.grafanaPassword, content: '', mode: CREDENTIAL_MODE, credential: 'metrics_reader' },
        ];
      case undefined:
        return [];
    }
  };
  return monitoringServices.map((s) => {
    const files = filesOf(s);
    return files.length > 0 ? { ...s, files } : s;
  });
}

/**
 * Where the stack's agent pushes its containers' output: the log store's published port on the
 * node itself (a stack runs on one node), Loki's push API. Null without a log store.
 */
export function logPushUrl(catalog: Catalog, services: ServiceDefinition[]): string | null {
  const name = catalog.monitoring.services.find((t) => t.component === 'log_store')?.name;
  const store = services.find((s) => s.origin === 'monitoring' && s.name === name);
  const port = store?.ports.find((p) => p.protocol === 'tcp' && p.host > 0)?.host;
  return port === undefined ? null : `http://127.0.0.1:${port}/loki/api/v1/push`;
}
