import type { PublicDefinition } from './definition.types.js';
import type { Issues } from './issues.js';
import { asMap, required, scalarValue } from './node-readers.js';
import { PORT_RANGE, isPort, type PortUse } from './port-fields.js';
import type { YamlNode } from './yaml-tree.js';

/**
 * The `public` block of a service: the port the tunnel ingress forwards to. The service is published
 * as `<service>-<stack>.<base_id>.<TUNNEL_BASE_DOMAIN>`, so `<service>-<stack>` must be one DNS label.
 */

/** A DNS label (RFC 1123): what `<service>-<stack>` must be to name a host. */
const HOST_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const PUBLIC_KEYS = ['port'];

/**
 * The block, or null when there is none or it has errors (reported). `stack` is the stack's name,
 * undefined when the name itself is wrong (reported at `name`; the combined label is then not checked).
 */
export function readPublic(
  node: YamlNode | undefined,
  path: string,
  service: string,
  stack: string | undefined,
  ports: PortUse[],
  issues: Issues,
): PublicDefinition | null {
  if (node === undefined) return null;
  const map = asMap(node, path, issues, 'public');
  if (map === null) return null;
  let ok = true;
  // Refused rather than ignored (unlike elsewhere): a setting of what is exposed to the internet that
  // this service does not know, such as access control, must not be dropped silently.
  for (const [key, entry] of map.entries) {
    if (PUBLIC_KEYS.includes(key) || key.startsWith('x-')) continue;
    ok = false;
    issues.error(
      `${path}.${key}`,
      'invalid_value',
      `unknown key "${key}" under public: it takes only port`,
      entry.key.pos,
    );
  }

  let port: number | undefined;
  const portNode = required(
    map,
    'port',
    `${path}.port`,
    'public.port is required: the TCP host port of the service that the ingress forwards to',
    issues,
  );
  if (portNode === undefined) {
    ok = false;
  } else {
    const value = scalarValue(portNode);
    if (typeof value !== 'number' || !isPort(value)) {
      ok = false;
      issues.error(`${path}.port`, 'invalid_value', PORT_RANGE, portNode.pos);
    } else if (!ports.some((p) => p.port.host === value && p.port.protocol === 'tcp')) {
      ok = false;
      issues.error(
        `${path}.port`,
        'invalid_value',
        'public.port must be a TCP host port the service declares under ports: the ingress connects to it on the worker',
        portNode.pos,
      );
    } else port = value;
  }

  // A wrong service or stack name is reported on its own; joined, two labels can only be too long.
  const label = `${service}-${stack}`;
  if (stack !== undefined && HOST_LABEL.test(service) && !HOST_LABEL.test(label)) {
    ok = false;
    issues.error(
      path,
      'invalid_value',
      `a public service is reached as <service>-<stack>.<base>, and "${label}" has ${label.length} characters where a DNS label holds at most 63: shorten the service or stack name`,
      map.pos,
    );
  }
  return ok && port !== undefined ? { port } : null;
}
