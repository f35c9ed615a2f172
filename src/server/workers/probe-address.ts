import { isIP } from 'node:net';
import type { HelloMsg } from '../../contracts/agent-protocol/index.js';

const LABEL = '[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
const HOST_NAME = new RegExp(`^(?=.{1,253}$)${LABEL}(\\.${LABEL})*$`);

/** A host peers can be sent to: an IP address (IPv6 with or without brackets) or a DNS name. */
export function probeHost(value: string): string | undefined {
  const host = value.replace(/^\[(.*)\]$/, '$1');
  return isIP(host) !== 0 || HOST_NAME.test(host) ? host : undefined;
}

/**
 * The port of the agent's probe listener: `probe_port`, or for older agents the port of
 * `probe_address`, whose host is ignored. 0: it has none.
 */
export function announcedProbePort(hello: Pick<HelloMsg, 'probe_port' | 'probe_address'>): number {
  const port = hello.probe_port || Number(/:([1-9]\d{0,4})$/.exec(hello.probe_address)?.[1] ?? 0);
  return Number.isInteger(port) && port >= 1 && port <= 65535 ? port : 0;
}

/**
 * Where peers probe an agent: at the address recorded at enrollment (the operator's `--address`,
 * shown on the worker they approve) when there is one, else at the address its authenticated stream
 * comes from; and at the port it announced. Never at a host the agent names in its hello, so an
 * agent cannot point its peers at someone else. Empty when there is no port or no host.
 */
export function probeAddress(recorded: string, connectedFrom: string | undefined, port: number): string {
  const host = probeHost(recorded) ?? connectedFrom;
  if (!host || port === 0) return '';
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}
