import { isIP } from 'node:net';

/**
 * The IP address in a grpc-js peer string (`getPeer()` gives `address:port`, an IPv6 address
 * without brackets): IPv4-mapped IPv6 as plain IPv4, no zone. Undefined when there is none
 * (`unknown`, a Unix socket).
 */
export function peerHost(peer: string): string | undefined {
  const unbracket = (s: string) => s.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  const withoutPort = /^(.*):\d{1,5}$/.exec(peer)?.[1];
  const host = [withoutPort, peer].map((s) => (s === undefined ? '' : unbracket(s))).find((s) => isIP(s));
  if (host === undefined) return undefined;
  return /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(host)?.[1] ?? host.toLowerCase();
}
