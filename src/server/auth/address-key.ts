import { isIPv4, isIPv6 } from 'node:net';

/**
 * The network a failed authentication is counted against: an IPv4 address as it is, an IPv6
 * address by its /64 (one subscriber or host usually holds a whole /64, so counting single IPv6
 * addresses would let one attacker rotate through billions of them).
 */
export function addressKey(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1];
  if (isIPv4(ip)) return ip;
  const bare = ip.split('%')[0];
  if (!isIPv6(bare)) return ip;
  return `${expandIpv6(bare).slice(0, 4).join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address, as lower-case hex without leading zeros. */
function expandIpv6(ip: string): string[] {
  let text = ip.toLowerCase();
  // A trailing dotted quad (::ffff:1.2.3.4, 64:ff9b::1.2.3.4) becomes two groups.
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number);
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  const missing = tail === undefined ? 0 : 8 - left.length - right.length;
  return [...left, ...Array<string>(missing).fill('0'), ...right].map((g) => parseInt(g, 16).toString(16));
}
