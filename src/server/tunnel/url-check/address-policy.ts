import { isIP } from 'node:net';

/**
 * What an IP address is, for deciding whether the orchestrator may connect to it on a user's
 * behalf. An address with no category is public unicast.
 */
export type AddressCategory =
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'cgnat'
  | 'multicast'
  | 'broadcast'
  | 'reserved'
  | 'documentation'
  | 'benchmarking'
  | 'ipv4-mapped'
  | 'nat64'
  | '6to4'
  | 'teredo'
  | 'metadata';

export interface AddressClassification {
  /** The address in canonical form (IPv6 lower-case, no zone). */
  address: string;
  family: 4 | 6;
  /** Empty for public unicast. An address embedding IPv4 also carries the embedded one's. */
  categories: AddressCategory[];
}

export type PolicyDecision =
  | { allowed: true; categories: AddressCategory[] }
  | { allowed: false; categories: AddressCategory[]; reason: string };

/** Decides whether a connection may go to an address. Injectable so tests can vary it. */
export type AddressPolicy = (address: string) => PolicyDecision;

/**
 * Never a target, whatever the configuration: cloud metadata holds credentials, and no TCP
 * connection can meaningfully go to the others (0.0.0.0 even reaches the local host on Linux).
 */
const ALWAYS_REFUSED: ReadonlySet<AddressCategory> = new Set([
  'metadata',
  'unspecified',
  'multicast',
  'broadcast',
  'reserved',
]);

/** Refused unless private URLs are allowed (`TUNNEL_ALLOW_PRIVATE_URLS`). */
const NON_PUBLIC: ReadonlySet<AddressCategory> = new Set([
  'loopback',
  'private',
  'link-local',
  'cgnat',
  'documentation',
  'benchmarking',
  'ipv4-mapped',
  'teredo',
]);

interface Range {
  family: 4 | 6;
  base: bigint;
  bits: number;
  /** Null marks explicitly public space inside a wider reserved block. */
  category: AddressCategory | null;
}

// The longest matching prefix decides the category, so the order here does not matter.
const RANGE_TABLE: [string, AddressCategory | null][] = [
  ['0.0.0.0/0', null],
  ['0.0.0.0/8', 'unspecified'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'cgnat'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'],
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', 'reserved'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
  ['255.255.255.255/32', 'broadcast'],
  // IPv6: everything outside 2000::/3 (global unicast) is unallocated or special.
  ['::/0', 'reserved'],
  ['2000::/3', null],
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['::ffff:0:0/96', 'ipv4-mapped'],
  ['64:ff9b::/96', 'nat64'],
  ['64:ff9b:1::/48', 'private'],
  ['2001::/32', 'teredo'],
  ['2001:2::/48', 'benchmarking'],
  ['2001:db8::/32', 'documentation'],
  ['2002::/16', '6to4'],
  ['3fff::/20', 'documentation'],
  ['fc00::/7', 'private'],
  ['fe80::/10', 'link-local'],
  // Site-local, deprecated but still routed inside some networks.
  ['fec0::/10', 'private'],
  ['ff00::/8', 'multicast'],
];

/**
 * Metadata services: AWS (IMDS v4/v6, ECS task credentials, EKS Pod Identity v4/v6), GCP IPv6,
 * Azure WireServer (a public-looking address), Alibaba, Oracle's legacy address.
 */
const METADATA = new Set([
  '169.254.169.254',
  '169.254.170.2',
  '169.254.170.23',
  '168.63.129.16',
  '100.100.100.200',
  '192.0.0.192',
  'fd00:ec2::254',
  'fd00:ec2::23',
  'fd20:ce::254',
]);

const RANGES: Range[] = RANGE_TABLE.map(([cidr, category]) => {
  const [ip, bits] = cidr.split('/');
  const parsed = parseIp(ip);
  if (parsed === null) throw new Error(`bad range ${cidr}`);
  return { family: parsed.family, base: parsed.value, bits: Number(bits), category };
});

const METADATA_VALUES = new Set(
  [...METADATA].map((ip) => {
    const parsed = parseIp(ip);
    if (parsed === null) throw new Error(`bad metadata address ${ip}`);
    return `${parsed.family}:${parsed.value}`;
  }),
);

/** Classifies an IP address string; null when the string is not one. Never throws. */
export function classifyAddress(input: string): AddressClassification | null {
  const parsed = typeof input === 'string' ? parseIp(input) : null;
  if (parsed === null) return null;
  const { family, value } = parsed;
  const categories = new Set<AddressCategory>();
  const base = longestMatch(family, value);
  if (base !== null) categories.add(base);
  if (METADATA_VALUES.has(`${family}:${value}`)) categories.add('metadata');
  const embedded = family === 6 ? embeddedIpv4(base, value) : null;
  if (embedded !== null) {
    const inner = classifyAddress(formatIpv4(embedded));
    for (const c of inner?.categories ?? []) categories.add(c);
  }
  return { address: format(family, value), family, categories: [...categories] };
}

/** The production policy: see ALWAYS_REFUSED and NON_PUBLIC above. */
export function createAddressPolicy(options: { allowPrivate: boolean }): AddressPolicy {
  return (address) => {
    const c = classifyAddress(address);
    if (c === null) return { allowed: false, categories: [], reason: 'not an IP address' };
    const always = c.categories.filter((x) => ALWAYS_REFUSED.has(x));
    if (always.length > 0) {
      return { allowed: false, categories: c.categories, reason: `${c.address} is ${always.join(', ')}` };
    }
    const nonPublic = c.categories.filter((x) => NON_PUBLIC.has(x));
    if (nonPublic.length > 0 && !options.allowPrivate) {
      return {
        allowed: false,
        categories: c.categories,
        reason: `${c.address} is ${nonPublic.join(', ')} (allowed only with TUNNEL_ALLOW_PRIVATE_URLS=true)`,
      };
    }
    return { allowed: true, categories: c.categories };
  };
}

function longestMatch(family: 4 | 6, value: bigint): AddressCategory | null {
  const width = family === 4 ? 32 : 128;
  let best: Range | undefined;
  for (const r of RANGES) {
    if (r.family !== family || (best !== undefined && r.bits <= best.bits)) continue;
    const shift = BigInt(width - r.bits);
    if (value >> shift === r.base >> shift) best = r;
  }
  return best?.category ?? null;
}

/** The IPv4 address inside a mapped, NAT64 (well-known prefix) or 6to4 address. */
function embeddedIpv4(category: AddressCategory | null, value: bigint): bigint | null {
  if (category === 'ipv4-mapped' || category === 'nat64') return value & 0xffffffffn;
  if (category === '6to4') return (value >> 80n) & 0xffffffffn;
  return null;
}

interface ParsedIp {
  family: 4 | 6;
  value: bigint;
}

function parseIp(input: string): ParsedIp | null {
  if (input.length > 64) return null;
  // A zone (fe80::1%eth0) only scopes a link-local address; the address itself decides.
  const ip = input.replace(/%.*$/s, '');
  const family = isIP(ip);
  if (family === 4) return { family: 4, value: parseIpv4(ip) };
  if (family === 6) return { family: 6, value: parseIpv6(ip) };
  return null;
}

/** Only called on strings node:net accepted as dotted-quad IPv4. */
function parseIpv4(ip: string): bigint {
  return ip.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

/** Only called on strings node:net accepted as IPv6, so the shape is known to be valid. */
function parseIpv6(ip: string): bigint {
  let text = ip.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const v4 = parseIpv4(dotted[1]);
    text = `${text.slice(0, dotted.index)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? [] : Array<string>(8 - headGroups.length - tailGroups.length).fill('0');
  return [...headGroups, ...zeros, ...tailGroups].reduce(
    (acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)),
    0n,
  );
}

function formatIpv4(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 0xffn)).join('.');
}

function format(family: 4 | 6, value: bigint): string {
  if (family === 4) return formatIpv4(value);
  // The URL parser's serializer gives the canonical RFC 5952 form.
  const groups = Array.from({ length: 8 }, (_, i) =>
    ((value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16),
  );
  return new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1);
}
