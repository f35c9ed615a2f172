import { describe, expect, it } from 'vitest';
import type { MonitoringDefinition } from '../definition/definition.types.js';
import { getCatalog } from './catalog.js';
import { expandMonitoring } from './monitoring-expansion.js';

const on = (overrides: Partial<MonitoringDefinition> = {}): MonitoringDefinition => ({
  enabled: true,
  metrics_store: { retention_days: 30, storage_bytes: 20 * 2 ** 30 },
  dashboard: { enabled: true, admin_password_env: 'GRAFANA_ADMIN_PASSWORD' },
  log_store: { enabled: true, retention_days: 14 },
  ...overrides,
});

describe('expandMonitoring', () => {
  it('builds the catalogue’s services with their placeholders filled in', () => {
    const services = expandMonitoring(getCatalog(), on(), true);
    expect(services.map((s) => s.name)).toEqual(['metrics-store', 'log-store', 'dashboard']);
    const [metrics, logs, dashboard] = services;
    expect(metrics.command).toContain('--storage.tsdb.retention.time=30d');
    expect(metrics.command).toContain('--storage.tsdb.retention.size=20GB');
    expect(logs.command).toEqual(['-config.file=/etc/loki/stack/loki.yaml']);
    expect(dashboard).toMatchObject({
      image: expect.stringMatching(/^grafana\/grafana:/) as string,
      env: { GF_SECURITY_ADMIN_PASSWORD: '${GRAFANA_ADMIN_PASSWORD}' },
      ports: [{ container: 3000, host: 3000, protocol: 'tcp' }],
      resources: { cpu: 0.25, memory_bytes: 256 * 2 ** 20 },
      health_check: { path: '/api/health', port: 3000, interval_ms: 15_000 },
      depends_on: ['metrics-store', 'log-store'],
      placement: { labels: {} },
      restart: 'always',
      driver: 'docker',
      origin: 'monitoring',
    });
  });

  it('leaves out disabled parts and the dependencies on them', () => {
    const noLogs = expandMonitoring(
      getCatalog(),
      on({ log_store: { enabled: false, retention_days: 7 } }),
      true,
    );
    expect(noLogs.map((s) => s.name)).toEqual(['metrics-store', 'dashboard']);
    expect(noLogs[1].depends_on).toEqual(['metrics-store']);
    const metricsOnly = expandMonitoring(
      getCatalog(),
      on({ dashboard: { enabled: false, admin_password_env: null }, log_store: null }),
      true,
    );
    expect(metricsOnly.map((s) => s.name)).toEqual(['metrics-store']);
  });

  it('adds nothing when monitoring is off or the variant does not allow it', () => {
    expect(expandMonitoring(getCatalog(), on({ enabled: false }), true)).toEqual([]);
    expect(expandMonitoring(getCatalog(), on(), false)).toEqual([]);
  });

  it('never shares the catalogue’s objects with the services it builds', () => {
    const catalog = getCatalog();
    const [metrics] = expandMonitoring(catalog, on(), true);
    metrics.ports[0].host = 1;
    if (metrics.health_check) metrics.health_check.port = 1;
    expect(catalog.monitoring.services[0].ports[0].host).toBe(9090);
    expect(catalog.monitoring.services[0].health_check?.port).toBe(9090);
  });
});
