import { classifyAddress } from '../url-check/address-policy.js';
import { BlockList, isIPv4, isIPv6 } from 'node:net';

export type IpFamily = 'IPv4' | 'IPv6';

export function formatIpv4(bytes: Uint8Array): string {
  return Array.from(bytes.subarray(0, 4)).join('.');
}

/** RFC 5952 text: lower case, the longest run of two or more zero groups as `::`, mapped IPv4 dotted. */
export function formatIpv6(bytes: Uint8Array): string {
  const b = bytes.subarray(0, 16);
  if (b.subarray(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff) {
    return `::ffff:${formatIpv4(b.subarray(12))}`;
  }
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((b[i] << 8) | b[i + 1]);
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) [bestStart, bestLength] = [i, j - i];
    i = j;
  }
  const hex = (g: number[]) => g.map((x) => x.toString(16)).join(':');
  if (bestStart < 0) return hex(groups);
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLength))}`;
}

/** 4 or 16 bytes of an address in text form (an IPv6 zone is dropped), or null when it is not one. */
export function parseIp(text: string): Buffer | null {
  const address = text.split('%')[0];
  if (isIPv4(address)) return Buffer.from(address.split('.').map(Number));
  if (!isIPv6(address)) return null;
  let body = address;
  const lastColon = body.lastIndexOf(':');
  const tail = body.slice(lastColon + 1);
  if (tail.includes('.')) {
    const v4 = Buffer.from(tail.split('.').map(Number));
    body = `${body.slice(0, lastColon + 1)}${v4.readUInt16BE(0).toString(16)}:${v4.readUInt16BE(2).toString(16)}`;
  }
  const [head, rest] = body.split('::');
  const groupsOf = (part: string | undefined) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const left = groupsOf(head);
  const right = groupsOf(rest);
  const groups =
    rest === undefined
      ? left
      : [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(g, i * 2));
  return out;
}

export function familyOf(address: string): IpFamily | null {
  const bytes = parseIp(address);
  if (!bytes) return null;
  return bytes.length === 4 ? 'IPv4' : 'IPv6';
}

/** The network an address with this prefix length belongs to, as `network/prefix`. */
export function networkCidr(address: string, prefix: number): string | null {
  const bytes = parseIp(address);
  if (!bytes || !Number.isInteger(prefix) || prefix < 0 || prefix > bytes.length * 8) return null;
  for (let bit = prefix; bit < bytes.length * 8; bit++) bytes[bit >> 3] &= ~(0x80 >> (bit & 7));
  return `${bytes.length === 4 ? formatIpv4(bytes) : formatIpv6(bytes)}/${prefix}`;
}

/**
 * A set of addresses compared by value, not by spelling: `::ffff:127.0.0.1` is `127.0.0.1` and
 * `fd00:0::2` is `fd00::2` (node's BlockList does the comparison).
 */
export function addressSet(addresses: readonly string[]): (address: string) => boolean {
  const list = new BlockList();
  for (const address of addresses) {
    const plain = address.split('%')[0];
    const family = familyOf(plain);
    if (family) list.addAddress(plain, family === 'IPv4' ? 'ipv4' : 'ipv6');
  }
  return (address) => {
    const plain = address.split('%')[0];
    const family = familyOf(plain);
    return family !== null && list.check(plain, family === 'IPv4' ? 'ipv4' : 'ipv6');
  };
}

/**
 * RFC 1918, the carriers' shared NAT space (RFC 6598) and IPv6 unique local addresses: addresses
 * the internet never routes to. The one table of address ranges is url-check's.
 */
export function isPrivateAddress(address: string): boolean {
  const categories = classifyAddress(address.split('%')[0])?.categories ?? [];
  return categories.includes('private') || categories.includes('cgnat');
}
