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
function parseInterval(text: string): number | undefined {
  return DURATION_WITH_UNITS.test(text) ? parseDuration(text) : undefined;
}

/**
 * An HTTP path the agent requests (a health check's, a metrics endpoint's): `fallback` when absent,
 * undefined (reported) when it does not start with "/", has blanks or is longer than 2048.
 */
export function readHttpPath(
  node: YamlNode | undefined,
  path: string,
  fallback: string,
  what: string,
  issues: Issues,
): string | undefined {
  if (node === undefined) return fallback;
  const value = scalarValue(node);
  if (typeof value === 'string' && value.startsWith('/') && !/\s/.test(value) && value.length <= 2048)
    return value;
  issues.error(path, 'invalid_value', `${what} starts with "/" and has no spaces`, node.pos);
  return undefined;
}

/**
 * How often the agent does something for a service (a health check, a scrape), in milliseconds:
 * `fallback` when absent, undefined (reported) outside 1s-1h or without units.
 */
export function readInterval(
  node: YamlNode | undefined,
  path: string,
  fallback: number,
  what: string,
  issues: Issues,
): number | undefined {
  if (node === undefined) return fallback;
  const value = scalarValue(node);
  const ms = typeof value === 'string' ? parseInterval(value) : undefined;
  if (ms !== undefined && ms >= MIN_INTERVAL_MS && ms <= MAX_INTERVAL_MS) return ms;
  issues.error(
    path,
    'invalid_value',
    `${what} is a duration from 1s to 1h such as "10s", "1m" or "1m30s"`,
    node.pos,
  );
  return undefined;
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

  const checkPath = readHttpPath(present(map, 'path'), `${path}.path`, '/', 'the health check path', issues);

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

  const interval = readInterval(
    present(map, 'interval'),
    `${path}.interval`,
    DEFAULT_INTERVAL_MS,
    'the health check interval',
    issues,
  );
  return ok && port !== undefined && checkPath !== undefined && interval !== undefined
    ? { path: checkPath, port, interval_ms: interval }
    : null;
}
