import { isIP } from 'node:net';
import type { DriverName, PortDefinition } from './definition.types.js';
import type { Issues } from './issues.js';
import { describe, present, scalarValue, warnUnknownKeys } from './node-readers.js';
import type { Position, YamlNode } from './yaml-tree.js';

/**
 * The `ports` of a service: `8080:80`, `8080:80/udp`, `80`, a number, a mapping, and with the node
 * address to publish on first, `127.0.0.1:8080:80` or `[::1]:8080:80` (as `docker run -p`).
 */

const PORT_TEXT = /^(?:(\d{1,5}):)?(\d{1,5})(?:\/([a-z]+))?$/;
const ADDRESSED_TEXT =
  /^(?:\[([0-9A-Fa-f:.]+)\]|(\d{1,3}(?:\.\d{1,3}){3})):(\d{1,5}):(\d{1,5})(?:\/([a-z]+))?$/;
export const PORT_RANGE = 'ports are whole numbers from 1 to 65535';
const PROTOCOL_RULE = 'the protocol of a port is tcp or udp';
const ADDRESS_RULE = 'the address of a port is an IPv4 or IPv6 address of the node, such as 127.0.0.1 or ::1';
const PROCESS_ADDRESS_RULE =
  'a process service binds its own address: a port of the process driver has no address';

export const isPort = (n: number): boolean => Number.isInteger(n) && n >= 1 && n <= 65535;

/** A port as the file declares it, with where, for the stack-wide checks. */
export interface PortUse {
  service: string;
  port: PortDefinition;
  at: Position | null;
  path: string;
}

export function readPorts(
  node: YamlNode | undefined,
  path: string,
  service: string,
  driver: DriverName,
  issues: Issues,
): PortUse[] {
  if (node === undefined) return [];
  if (node.kind !== 'seq') {
    issues.error(path, 'invalid_value', 'ports must be a list such as ["8080:80", 9090]', node.pos);
    return [];
  }
  const uses: PortUse[] = [];
  node.items.forEach((item, i) => {
    const itemPath = `${path}.${i}`;
    const port = readPort(item, itemPath, issues);
    if (port === undefined) return;
    if (driver === 'process' && port.address !== undefined) {
      issues.error(itemPath, 'invalid_value', PROCESS_ADDRESS_RULE, item.pos);
      return;
    }
    if (driver === 'process' && port.host !== port.container) {
      issues.error(
        itemPath,
        'invalid_value',
        'a process service listens on the node itself: its host port must equal its container port',
        item.pos,
      );
      return;
    }
    uses.push({ service, port, at: item.pos, path: itemPath });
  });
  return uses;
}

function readPort(item: YamlNode, path: string, issues: Issues): PortDefinition | undefined {
  const bad = (message: string, at: Position): undefined => {
    issues.error(path, 'invalid_value', message, at);
    return undefined;
  };
  if (item.kind === 'scalar' && typeof item.value === 'number') {
    return isPort(item.value)
      ? { container: item.value, host: item.value, protocol: 'tcp' }
      : bad(PORT_RANGE, item.pos);
  }
  if (item.kind === 'scalar' && typeof item.value === 'string') {
    const addressed = ADDRESSED_TEXT.exec(item.value);
    if (addressed) {
      const address = addressed[1] ?? addressed[2];
      if (isIP(address) === 0) return bad(ADDRESS_RULE, item.pos);
      const [container, host] = [Number(addressed[4]), Number(addressed[3])];
      const protocol = addressed[5] ?? 'tcp';
      if (protocol !== 'tcp' && protocol !== 'udp') return bad(PROTOCOL_RULE, item.pos);
      if (!isPort(container) || !isPort(host)) return bad(PORT_RANGE, item.pos);
      return { container, host, protocol, address };
    }
    const match = PORT_TEXT.exec(item.value);
    if (!match)
      return bad(
        'a port is written "8080:80", "8080:80/udp", "127.0.0.1:8080:80", "80" or a number',
        item.pos,
      );
    const container = Number(match[2]);
    const host = match[1] === undefined ? container : Number(match[1]);
    const protocol = match[3] ?? 'tcp';
    if (protocol !== 'tcp' && protocol !== 'udp') return bad(PROTOCOL_RULE, item.pos);
    if (!isPort(container) || !isPort(host)) return bad(PORT_RANGE, item.pos);
    return { container, host, protocol };
  }
  if (item.kind === 'map') {
    warnUnknownKeys(item, ['container', 'host', 'protocol', 'address'], path, issues);
    const number = (key: string): number | null | undefined => {
      const node = present(item, key);
      if (node === undefined) return null;
      if (node.kind === 'scalar' && typeof node.value === 'number' && isPort(node.value)) return node.value;
      issues.error(`${path}.${key}`, 'invalid_value', PORT_RANGE, node.pos);
      return undefined;
    };
    const container = number('container');
    const host = number('host');
    let protocol: 'tcp' | 'udp' | undefined = 'tcp';
    const protocolNode = present(item, 'protocol');
    if (protocolNode !== undefined) {
      const value = scalarValue(protocolNode);
      if (value === 'tcp' || value === 'udp') protocol = value;
      else {
        issues.error(`${path}.protocol`, 'invalid_value', PROTOCOL_RULE, protocolNode.pos);
        protocol = undefined;
      }
    }
    let address: string | null | undefined = null;
    const addressNode = present(item, 'address');
    if (addressNode !== undefined) {
      const value = scalarValue(addressNode);
      if (typeof value === 'string' && isIP(value) !== 0) address = value;
      else {
        issues.error(`${path}.address`, 'invalid_value', ADDRESS_RULE, addressNode.pos);
        address = undefined;
      }
    }
    if (container === null) {
      issues.error(
        `${path}.container`,
        'missing_required_field',
        'a port mapping needs container (the port the service listens on)',
        item.pos,
      );
      return undefined;
    }
    if (container === undefined || host === undefined || protocol === undefined || address === undefined)
      return undefined;
    return { container, host: host ?? container, protocol, ...(address !== null ? { address } : {}) };
  }
  return bad(`a port is a number, a string such as "8080:80" or a mapping, not ${describe(item)}`, item.pos);
}
