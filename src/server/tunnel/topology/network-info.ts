import { readFile } from 'node:fs/promises';
import { networkInterfaces, type NetworkInterfaceInfo } from 'node:os';
import { join } from 'node:path';
import { formatIpv4, formatIpv6, isPrivateAddress, networkCidr, type IpFamily } from './ip-address.js';

export interface LocalAddress {
  interface: string;
  address: string;
  family: IpFamily;
  /** The network the address sits in (`192.168.1.0/24`), when the system gives a netmask. */
  network: string | null;
  internal: boolean;
}

export type InterfaceTable = NodeJS.Dict<NetworkInterfaceInfo[]>;

export interface DefaultRoute {
  interface: string;
  gateway: string;
  metric: number;
}

export interface DefaultRoutes {
  ipv4: DefaultRoute | null;
  ipv6: DefaultRoute | null;
}

export interface NetworkInfo {
  addresses: LocalAddress[];
  routes: DefaultRoutes;
  defaultGateway: string | null;
  privateSubnet: string | null;
}

/**
 * Every address of every interface: the ones other machines can reach first, loopback and other
 * internal ones last. Internal addresses stay in the list because "is this address one of mine"
 * must say yes for them too (a STUN server on the same machine sees 127.0.0.1).
 */
export function listLocalAddresses(table: InterfaceTable = networkInterfaces()): LocalAddress[] {
  const all: LocalAddress[] = [];
  for (const [name, entries] of Object.entries(table)) {
    for (const entry of entries ?? []) {
      const family: IpFamily = entry.family === 'IPv4' ? 'IPv4' : 'IPv6';
      const prefix = entry.cidr ? Number(entry.cidr.split('/')[1]) : NaN;
      all.push({
        interface: name,
        address: entry.address,
        family,
        network: Number.isInteger(prefix) ? networkCidr(entry.address, prefix) : null,
        internal: entry.internal,
      });
    }
  }
  return [...all.filter((a) => !a.internal), ...all.filter((a) => a.internal)];
}

const RTF_UP = 0x1;
const RTF_GATEWAY = 0x2;
const RTF_REJECT = 0x200;

/**
 * The default route in /proc/net/route: destination and mask 0, up, through a gateway; the lowest
 * metric wins. Addresses there are the kernel's 32-bit values printed in hex on a little-endian
 * machine, so the bytes come reversed (`0102A8C0` is 192.168.2.1).
 */
export function parseIpv4Routes(text: string): DefaultRoute | null {
  let best: DefaultRoute | null = null;
  for (const line of text.split('\n').slice(1)) {
    const [iface, destination, gateway, flags, , , metric, mask] = line.trim().split(/\s+/);
    if (!iface || ![destination, gateway, mask].every((f) => /^[0-9A-Fa-f]{8}$/.test(f ?? ''))) continue;
    const flagBits = parseInt(flags, 16);
    if (destination !== '00000000' || mask !== '00000000') continue;
    if (!(flagBits & RTF_UP) || !(flagBits & RTF_GATEWAY) || flagBits & RTF_REJECT) continue;
    const route = {
      interface: iface,
      gateway: formatIpv4(Buffer.from(gateway, 'hex').reverse()),
      metric: parseInt(metric, 10) || 0,
    };
    if (!best || route.metric < best.metric) best = route;
  }
  return best;
}

/**
 * The default route in /proc/net/ipv6_route (no header; destination, prefix length, source,
 * source prefix length, next hop, metric, reference count, use, flags, interface; addresses in
 * network order). The kernel keeps a rejecting ::/0 on `lo`, which the flags exclude.
 */
export function parseIpv6Routes(text: string): DefaultRoute | null {
  let best: DefaultRoute | null = null;
  for (const line of text.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 10) continue;
    const [destination, prefix, , , nextHop, metric, , , flags, iface] = fields;
    if (![destination, nextHop].every((f) => /^[0-9a-fA-F]{32}$/.test(f))) continue;
    const flagBits = parseInt(flags, 16);
    if (!/^0+$/.test(destination) || prefix !== '00' || /^0+$/.test(nextHop)) continue;
    if (!(flagBits & RTF_UP) || !(flagBits & RTF_GATEWAY) || flagBits & RTF_REJECT) continue;
    const route = {
      interface: iface,
      gateway: formatIpv6(Buffer.from(nextHop, 'hex')),
      metric: parseInt(metric, 16) || 0,
    };
    if (!best || route.metric < best.metric) best = route;
  }
  return best;
}

/**
 * One gateway for the answer: IPv4's when there is one, since that is where NAT lives. An IPv6
 * gateway is usually link-local and only means something with its interface, hence `fe80::1%eth0`.
 */
export function describeGateway(routes: DefaultRoutes): string | null {
  if (routes.ipv4) return routes.ipv4.gateway;
  if (!routes.ipv6) return null;
  const { gateway, interface: iface } = routes.ipv6;
  return /^fe[89ab]/i.test(gateway) ? `${gateway}%${iface}` : gateway;
}

/**
 * The private network this machine sits in: the one on the interface that carries the default
 * route when it is private, else the first private one on a non-internal interface; IPv4 before
 * IPv6 unique-local. A public address on the default interface gives no private subnet there.
 */
export function findPrivateSubnet(addresses: readonly LocalAddress[], routes: DefaultRoutes): string | null {
  const candidates = addresses.filter((a) => !a.internal && a.network && isPrivateAddress(a.address));
  for (const family of ['IPv4', 'IPv6'] as const) {
    const ofFamily = candidates.filter((a) => a.family === family);
    const routeInterface = (family === 'IPv4' ? routes.ipv4 : routes.ipv6)?.interface;
    const chosen = ofFamily.find((a) => a.interface === routeInterface) ?? ofFamily[0];
    if (chosen) return chosen.network;
  }
  return null;
}

export interface NetworkInfoOptions {
  root?: string;
  interfaces?: () => InterfaceTable;
}

export async function readNetworkInfo(options: NetworkInfoOptions = {}): Promise<NetworkInfo> {
  const root = options.root ?? '/';
  const read = (path: string) => readFile(join(root, path), 'utf8').catch(() => '');
  const [v4, v6] = await Promise.all([read('/proc/net/route'), read('/proc/net/ipv6_route')]);
  const routes = { ipv4: parseIpv4Routes(v4), ipv6: parseIpv6Routes(v6) };
  let table: InterfaceTable = {};
  try {
    table = (options.interfaces ?? networkInterfaces)();
  } catch {
    // Some sandboxes refuse to list interfaces (EPERM); the answer then simply has no addresses.
  }
  const addresses = listLocalAddresses(table);
  return {
    addresses,
    routes,
    defaultGateway: describeGateway(routes),
    privateSubnet: findPrivateSubnet(addresses, routes),
  };
}
