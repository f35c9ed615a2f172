import type { MetricsDefinition } from './definition.types.js';
import { readHttpPath, readInterval } from './health-fields.js';
import type { Issues } from './issues.js';
import { asMap, present, scalarValue, warnUnknownKeys } from './node-readers.js';
import { PORT_RANGE, isPort } from './port-fields.js';
import type { YamlNode } from './yaml-tree.js';

/**
 * The `metrics` of a service: where it serves Prometheus metrics. `port` is required (a metrics
 * port is rarely the service's first one), `path` defaults to `/metrics` and `interval` to `15s`
 * (Prometheus's own default scrape interval), from 1s to 1h.
 */

export const DEFAULT_METRICS_PATH = '/metrics';
export const DEFAULT_SCRAPE_INTERVAL_MS = 15_000;

/** The endpoint, or null when there is none or it has errors (reported). */
export function readMetrics(
  node: YamlNode | undefined,
  path: string,
  issues: Issues,
): MetricsDefinition | null {
  if (node === undefined) return null;
  const map = asMap(node, path, issues, 'metrics');
  if (map === null) return null;
  warnUnknownKeys(map, ['port', 'path', 'interval'], path, issues);

  let port: number | undefined;
  const portNode = present(map, 'port');
  if (portNode === undefined) {
    issues.error(
      `${path}.port`,
      'missing_required_field',
      'metrics.port is required: the port the service serves its metrics on',
      map.entries.get('port')?.key.pos ?? map.pos,
    );
  } else {
    const value = scalarValue(portNode);
    if (typeof value === 'number' && isPort(value)) port = value;
    else issues.error(`${path}.port`, 'invalid_value', PORT_RANGE, portNode.pos);
  }
  const metricsPath = readHttpPath(
    present(map, 'path'),
    `${path}.path`,
    DEFAULT_METRICS_PATH,
    'the metrics path',
    issues,
  );
  const interval = readInterval(
    present(map, 'interval'),
    `${path}.interval`,
    DEFAULT_SCRAPE_INTERVAL_MS,
    'the metrics interval',
    issues,
  );
  return port !== undefined && metricsPath !== undefined && interval !== undefined
    ? { port, path: metricsPath, interval_ms: interval }
    : null;
}
