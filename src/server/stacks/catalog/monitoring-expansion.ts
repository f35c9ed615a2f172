import type { MonitoringDefinition, ServiceDefinition } from '../definition/definition.types.js';
import type { Catalog } from './catalog.js';

/**
 * The services a definition's `monitoring` block stands for: the catalogue's monitoring templates,
 * their placeholders filled in from the block. Not validation: the validator reads the block
 * (definition/monitoring-fields.ts), then checks these services with the file's own against the
 * variant's limits. Returns none when monitoring is off, or when the variant does not allow it (that
 * is an error of its own already; its services would only add noise).
 */
export function expandMonitoring(
  catalog: Catalog,
  monitoring: MonitoringDefinition,
  allowed: boolean,
): ServiceDefinition[] {
  if (!monitoring.enabled || !allowed) return [];
  const values: Record<string, string> = {
    metrics_retention_days: String(monitoring.metrics_store?.retention_days ?? 0),
    metrics_storage_gi: String(Math.floor((monitoring.metrics_store?.storage_bytes ?? 0) / 2 ** 30)),
    log_retention_days: String(monitoring.log_store?.retention_days ?? 0),
    admin_password_ref: monitoring.dashboard?.admin_password_env
      ? `\${${monitoring.dashboard.admin_password_env}}`
      : '',
  };
  const fill = (text: string): string =>
    text.replace(/\{\{([a-z_]+)\}\}/g, (_, key: string) => values[key] ?? '');
  const included = catalog.monitoring.services.filter(
    (t) =>
      t.component === 'metrics_store' ||
      (t.component === 'dashboard' && monitoring.dashboard?.enabled === true) ||
      (t.component === 'log_store' && monitoring.log_store?.enabled === true),
  );
  const names = new Set(included.map((t) => t.name));
  return included.map((t) => ({
    name: t.name,
    image: t.image,
    command: t.command.map(fill),
    env: Object.fromEntries(Object.entries(t.env).map(([k, v]) => [k, fill(v)])),
    ports: t.ports.map((p) => ({ ...p })),
    resources: { cpu: t.resources.cpu, memory_bytes: t.resources.memory_bytes },
    health_check: t.health_check ? { ...t.health_check } : null,
    metrics: null,
    public: null,
    depends_on: t.depends_on.filter((d) => names.has(d)),
    placement: { labels: {} },
    restart: 'always',
    driver: 'docker',
    origin: 'monitoring',
  }));
}
