import { describe, expect, it } from 'vitest';
import { invalid, names, service, valid } from '../../../../test/support/definitions.js';

describe('validateDefinition: monitoring', () => {
  const base = `name: s
stackkit: cloud-kit
services:
  app: { image: x }
`;

  it('appends the catalogue’s monitoring services, filled in from the file', () => {
    const result = valid(`${base}monitoring:
  enabled: true
  metrics_store: { retention: 30d, storage: 20Gi }
  dashboard:
    enabled: true
    admin_password: \${GRAFANA_ADMIN_PASSWORD}
  log_store: { enabled: true, retention: 14d }
`);
    expect(result.definition.monitoring).toEqual({
      enabled: true,
      metrics_store: { retention_days: 30, storage_bytes: 20 * 2 ** 30 },
      dashboard: { enabled: true, admin_password_env: 'GRAFANA_ADMIN_PASSWORD' },
      log_store: { enabled: true, retention_days: 14 },
    });
    expect(names(result)).toEqual(['app', 'log-store', 'metrics-store', 'dashboard']);
    const metrics = service(result, 'metrics-store');
    expect(metrics).toMatchObject({ origin: 'monitoring', driver: 'docker', restart: 'always' });
    expect(metrics.image).toMatch(/^prom\/prometheus:/);
    expect(metrics.command).toContain('--storage.tsdb.retention.time=30d');
    expect(metrics.command).toContain('--storage.tsdb.retention.size=20GB');
    const dashboard = service(result, 'dashboard');
    expect(dashboard.image).toMatch(/^grafana\/grafana:/);
    expect(dashboard.env.GF_SECURITY_ADMIN_PASSWORD).toBe('${GRAFANA_ADMIN_PASSWORD}');
    expect(dashboard.depends_on).toEqual(['metrics-store', 'log-store']);
    const logs = service(result, 'log-store');
    expect(logs.image).toMatch(/^grafana\/loki:/);
    // Loki keeps its retention in the generated configuration (monitoring/loki-config.ts).
    expect(logs.command).toEqual(['-config.file=/etc/loki/stack/loki.yaml']);
    expect(logs.files?.[0].content).toContain('retention_period: 336h');
    expect(service(result, 'app').origin).toBe('definition');
  });

  it('uses the catalogue defaults and leaves out disabled parts', () => {
    const result = valid(`${base}monitoring:
  enabled: true
  dashboard: { enabled: false }
  log_store: { enabled: false }
`);
    expect(names(result)).toEqual(['app', 'metrics-store']);
    expect(service(result, 'metrics-store').command).toContain('--storage.tsdb.retention.time=15d');
    expect(result.definition.monitoring.metrics_store).toEqual({
      retention_days: 15,
      storage_bytes: 10 * 2 ** 30,
    });
  });

  it('adds nothing when monitoring is off', () => {
    expect(names(valid(`${base}monitoring: { enabled: false }\n`))).toEqual(['app']);
  });

  it('keeps a log retention the file gives when monitoring is off (the service keeps the output)', () => {
    const result = valid(`${base}monitoring:
  log_store: { retention: 1d }
`);
    expect(names(result)).toEqual(['app']);
    expect(result.definition.monitoring).toEqual({
      enabled: false,
      metrics_store: null,
      dashboard: null,
      log_store: { enabled: true, retention_days: 1 },
    });
    expect(valid(`${base}monitoring: { enabled: false }\n`).definition.monitoring.log_store).toBeNull();
  });

  it('checks retention, storage and flags', () => {
    const result = invalid(`${base}monitoring:
  enabled: yes
  metrics_store: { retention: 2w, storage: 10GB }
  dashboard: { admin_password: "\${P}" }
  log_store: { retention: 7 }
`);
    expect(result.errors.map((e) => [e.path, e.category, e.line, e.column])).toEqual([
      ['monitoring.enabled', 'invalid_value', 6, 12],
      ['monitoring.metrics_store.retention', 'invalid_value', 7, 31],
      ['monitoring.metrics_store.storage', 'invalid_value', 7, 44],
      ['monitoring.log_store.retention', 'invalid_value', 9, 27],
    ]);
  });

  it('requires the dashboard password when the dashboard runs', () => {
    const result = invalid(`${base}monitoring:\n  enabled: true\n`);
    expect(result.errors).toEqual([
      {
        path: 'monitoring.dashboard.admin_password',
        category: 'missing_required_field',
        message: expect.stringContaining('${GRAFANA_ADMIN_PASSWORD}') as string,
        line: 6,
        column: 3,
      },
    ]);
  });

  it('refuses a literal admin password without ever repeating it', () => {
    for (const literal of ['hunter2-Secret!', '"${NOT A REF}"', '12345678']) {
      const source = `${base}monitoring:
  enabled: false
  dashboard:
    admin_password: ${literal}
`;
      const result = invalid(source);
      expect(result.errors).toEqual([
        {
          path: 'monitoring.dashboard.admin_password',
          category: 'invalid_value',
          message: expect.stringContaining('environment reference') as string,
          line: 8,
          column: 21,
        },
      ]);
      const text = JSON.stringify(result);
      expect(text).not.toContain(literal.replace(/"/g, ''));
      expect(text).not.toContain('hunter2');
    }
  });
});
