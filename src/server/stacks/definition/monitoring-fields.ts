import type { Catalog } from '../catalog/catalog.js';
import type { MonitoringDefinition } from './definition.types.js';
import { ENV_REF } from './env-fields.js';
import type { Issues } from './issues.js';
import { variantLabel, type KitChoice } from './kit-fields.js';
import { asBoolean, asMap, isNull, present, scalarValue, warnUnknownKeys } from './node-readers.js';
import { parseDays, parseGi } from './quantities.js';
import type { YamlMap } from './yaml-tree.js';

/**
 * The file's `monitoring` block, read into a {@link MonitoringDefinition} with the catalogue's
 * defaults. The services it stands for are built from the catalogue afterwards
 * (catalog/monitoring-expansion.ts).
 */

const OFF: MonitoringDefinition = { enabled: false, metrics_store: null, dashboard: null, log_store: null };

export function readMonitoring(
  top: YamlMap,
  catalog: Catalog,
  kit: KitChoice,
  issues: Issues,
): MonitoringDefinition {
  const off: MonitoringDefinition = { ...OFF };
  const entry = top.entries.get('monitoring');
  if (entry === undefined) return off;
  const map = asMap(entry.value, 'monitoring', issues, 'monitoring');
  if (map === null) return off;
  warnUnknownKeys(map, ['enabled', 'metrics_store', 'dashboard', 'log_store'], 'monitoring', issues);
  const defaults = catalog.monitoring.defaults;

  const enabledNode = present(map, 'enabled');
  const enabled =
    enabledNode === undefined ? false : (asBoolean(enabledNode, 'monitoring.enabled', issues) ?? false);

  // Every block is checked even when monitoring is off: a literal password is wrong either way.
  const section = (key: string, keys: string[]): YamlMap | null => {
    const node = map.entries.get(key)?.value;
    if (node === undefined) return null;
    const m = asMap(node, `monitoring.${key}`, issues, `monitoring.${key}`);
    if (m !== null) warnUnknownKeys(m, keys, `monitoring.${key}`, issues);
    return m;
  };
  const days = (m: YamlMap | null, path: string, fallback: number): number => {
    const node = present(m, 'retention');
    if (node === undefined) return fallback;
    const value = parseDays(scalarValue(node));
    if (value === undefined) {
      issues.error(path, 'invalid_value', `${path} must be whole days such as "15d"`, node.pos);
      return fallback;
    }
    return value;
  };
  const flag = (m: YamlMap | null, path: string): boolean => {
    const node = present(m, 'enabled');
    if (node === undefined) return true;
    return asBoolean(node, path, issues) ?? true;
  };

  const metricsMap = section('metrics_store', ['retention', 'storage']);
  const metricsRetention = days(
    metricsMap,
    'monitoring.metrics_store.retention',
    defaults.metrics_retention_days,
  );
  let storageGi = defaults.metrics_storage_gi;
  const storageNode = present(metricsMap, 'storage');
  if (storageNode !== undefined) {
    const gi = parseGi(scalarValue(storageNode));
    if (gi === undefined) {
      issues.error(
        'monitoring.metrics_store.storage',
        'invalid_value',
        'monitoring.metrics_store.storage must be whole GiB such as "10Gi"',
        storageNode.pos,
      );
    } else storageGi = gi;
  }

  const dashboardMap = section('dashboard', ['enabled', 'admin_password']);
  const dashboardEnabled = flag(dashboardMap, 'monitoring.dashboard.enabled');
  let passwordEnv: string | null = null;
  const passwordEntry = dashboardMap?.entries.get('admin_password');
  if (passwordEntry !== undefined && !isNull(passwordEntry.value)) {
    const node = passwordEntry.value;
    const ref = node.kind === 'scalar' && typeof node.value === 'string' ? ENV_REF.exec(node.value) : null;
    if (ref === null) {
      // Never echo the value: it is most likely the password itself.
      issues.error(
        'monitoring.dashboard.admin_password',
        'invalid_value',
        'monitoring.dashboard.admin_password must be an environment reference such as ${GRAFANA_ADMIN_PASSWORD}, never a literal password; the agent resolves it from its environment',
        node.pos,
      );
    } else passwordEnv = ref[1];
  } else if (enabled && dashboardEnabled) {
    issues.error(
      'monitoring.dashboard.admin_password',
      'missing_required_field',
      'monitoring.dashboard.admin_password is required when the dashboard is enabled: an environment reference such as ${GRAFANA_ADMIN_PASSWORD}',
      passwordEntry?.key.pos ?? dashboardMap?.pos ?? map.pos,
    );
  }

  const logMap = section('log_store', ['enabled', 'retention']);
  const logEnabled = flag(logMap, 'monitoring.log_store.enabled');
  const logRetention = days(logMap, 'monitoring.log_store.retention', defaults.log_retention_days);

  if (enabled && kit.variant !== null && !kit.variant.limits.monitoring_allowed) {
    issues.error(
      'monitoring.enabled',
      'resource_constraint',
      `${variantLabel(kit)} does not allow the monitoring stack`,
      enabledNode?.pos ?? map.pos,
    );
  }
  // The service keeps the stack's output itself whether or not the monitoring stack runs
  // (docs/stack-logs.md): a retention the file gives counts either way.
  if (!enabled)
    return logMap === null
      ? off
      : { ...off, log_store: { enabled: logEnabled, retention_days: logRetention } };
  return {
    enabled: true,
    metrics_store: { retention_days: metricsRetention, storage_bytes: storageGi * 2 ** 30 },
    dashboard: { enabled: dashboardEnabled, admin_password_env: passwordEnv },
    log_store: { enabled: logEnabled, retention_days: logRetention },
  };
}
