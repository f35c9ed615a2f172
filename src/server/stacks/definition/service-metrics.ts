import type { DriverName, MetricsDefinition } from './definition.types.js';
import { parseInterval } from './health-fields.js';
import type { Issues } from './issues.js';
import { asMap, present, scalarValue, warnUnknownKeys } from './node-readers.js';
import { PORT_RANGE, isPort, type PortUse } from './port-fields.js';
import type { YamlNode } from './yaml-tree.js';

/**
 * A service's `metrics` block: where it serves Prometheus metrics. The stack's metrics store scrapes
 * it (docker: `<service>:<port>` on the stack's network, so `port` is the port the service listens
 * on, published or not); the process driver's agent scrapes `127.0.0.1:<port>`.
 */

const DEFAULT_PATH = '/metrics';
const DEFAULT_INTERVAL_MS = 15_000;
const MIN_INTERVAL_MS = 1000;
const MAX_INTERVAL_MS = 3_600_000;
/** A Prometheus `metrics_path`: no query (Prometheus would escape it) and no fragment. */
const METRICS_PATH = /^\/[^\s?#]{0,2047}$/;

/** The block normalized, or undefined when there is none or it has errors (reported). */
export function readMetrics(
  node: YamlNode | undefined,
  path: string,
  ports: PortUse[],
  driver: DriverName,
  issues: Issues,
): MetricsDefinition | undefined {
  if (node === undefined) return undefined;
  const map = asMap(node, path, issues, 'metrics');
  if (map === null) return undefined;
  warnUnknownKeys(map, ['port', 'path', 'interval'], path, issues);
  let ok = true;

  // Without `port`, the first TCP port the service listens on.
  const first = ports.find((p) => p.port.protocol === 'tcp')?.port;
  let port = driver === 'docker' ? first?.container : first?.host;
  const portNode = present(map, 'port');
  if (portNode !== undefined) {
    const value = scalarValue(portNode);
    if (typeof value === 'number' && isPort(value)) port = value;
    else {
      ok = false;
      issues.error(`${path}.port`, 'invalid_value', PORT_RANGE, portNode.pos);
    }
  } else if (port === undefined) {
    ok = false;
    issues.error(
      `${path}.port`,
      'missing_required_field',
      'metrics.port is required when the service declares no TCP ports',
      map.pos,
    );
  }

  let metricsPath = DEFAULT_PATH;
  const pathNode = present(map, 'path');
  if (pathNode !== undefined) {
    const value = scalarValue(pathNode);
    if (typeof value === 'string' && METRICS_PATH.test(value)) metricsPath = value;
    else {
      ok = false;
      issues.error(
        `${path}.path`,
        'invalid_value',
        'metrics.path starts with "/" and has no spaces, "?" or "#"',
        pathNode.pos,
      );
    }
  }

  let interval = DEFAULT_INTERVAL_MS;
  const intervalNode = present(map, 'interval');
  if (intervalNode !== undefined) {
    const value = scalarValue(intervalNode);
    const ms = typeof value === 'string' ? parseInterval(value) : undefined;
    // Whole seconds: Prometheus durations below a second are legal but nothing here needs them.
    if (ms !== undefined && ms % 1000 === 0 && ms >= MIN_INTERVAL_MS && ms <= MAX_INTERVAL_MS) interval = ms;
    else {
      ok = false;
      issues.error(
        `${path}.interval`,
        'invalid_value',
        'metrics.interval is whole seconds from 1s to 1h such as "15s", "1m" or "1m30s"',
        intervalNode.pos,
      );
    }
  }
  return ok && port !== undefined ? { port, path: metricsPath, interval_ms: interval } : undefined;
}
