import { parseDuration } from '../../common/duration.js';
import type { DriverName, HealthCheckDefinition } from './definition.types.js';
import type { Issues } from './issues.js';
import { asMap, present, scalarValue, warnUnknownKeys } from './node-readers.js';
import { PORT_RANGE, isPort, type PortUse } from './port-fields.js';
import type { YamlNode } from './yaml-tree.js';

/** The `health_check` of a service: an HTTP path on a node port, checked at an interval. */

/** Units required: a bare number, which could mean seconds or milliseconds, is refused. */
const DURATION_WITH_UNITS = /^(\d+(ms|s|m|h))+$/;
const MIN_INTERVAL_MS = 1000;
const MAX_INTERVAL_MS = 3_600_000;
const DEFAULT_INTERVAL_MS = 10_000;

/** Duration text with its units, in milliseconds (common/duration.ts reads it). */
export function parseInterval(text: string): number | undefined {
  return DURATION_WITH_UNITS.test(text) ? parseDuration(text) : undefined;
}

/** The check, or null when there is none or it has errors (reported). */
export function readHealthCheck(
  node: YamlNode | undefined,
  path: string,
  ports: PortUse[],
  driver: DriverName,
  issues: Issues,
): HealthCheckDefinition | null {
  if (node === undefined) return null;
  const map = asMap(node, path, issues, 'health_check');
  if (map === null) return null;
  warnUnknownKeys(map, ['path', 'port', 'interval'], path, issues);
  let ok = true;

  let checkPath = '/';
  const pathNode = present(map, 'path');
  if (pathNode !== undefined) {
    const value = scalarValue(pathNode);
    if (typeof value === 'string' && value.startsWith('/') && !/\s/.test(value) && value.length <= 2048)
      checkPath = value;
    else {
      ok = false;
      issues.error(
        `${path}.path`,
        'invalid_value',
        'the health check path starts with "/" and has no spaces',
        pathNode.pos,
      );
    }
  }

  let port: number | undefined = ports[0]?.port.host;
  const portNode = present(map, 'port');
  if (portNode !== undefined) {
    const value = scalarValue(portNode);
    if (typeof value === 'number' && isPort(value)) {
      port = value;
      if (driver === 'docker' && !ports.some((p) => p.port.host === value && p.port.protocol === 'tcp')) {
        ok = false;
        issues.error(
          `${path}.port`,
          'invalid_value',
          'the health check connects to a host port of the node: publish it under ports',
          portNode.pos,
        );
      }
    } else {
      ok = false;
      issues.error(`${path}.port`, 'invalid_value', PORT_RANGE, portNode.pos);
    }
  } else if (port === undefined) {
    ok = false;
    issues.error(
      `${path}.port`,
      'missing_required_field',
      'health_check.port is required when the service declares no ports',
      map.pos,
    );
  }

  let interval = DEFAULT_INTERVAL_MS;
  const intervalNode = present(map, 'interval');
  if (intervalNode !== undefined) {
    const value = scalarValue(intervalNode);
    const ms = typeof value === 'string' ? parseInterval(value) : undefined;
    if (ms !== undefined && ms >= MIN_INTERVAL_MS && ms <= MAX_INTERVAL_MS) interval = ms;
    else {
      ok = false;
      issues.error(
        `${path}.interval`,
        'invalid_value',
        'the health check interval is a duration from 1s to 1h such as "10s", "1m" or "1m30s"',
        intervalNode.pos,
      );
    }
  }
  return ok && port !== undefined ? { path: checkPath, port, interval_ms: interval } : null;
}
