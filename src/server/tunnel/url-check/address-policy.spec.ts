import { describe, expect, it } from 'vitest';
import { type AddressCategory, classifyAddress, createAddressPolicy } from './address-policy.js';

const categories = (ip: string) => classifyAddress(ip)?.categories;
const strict = createAddressPolicy({ allowPrivate: false });
const lenient = createAddressPolicy({ allowPrivate: true });

/** [first address inside, last address inside, address just below, address just above]. */
const V4_RANGES: [AddressCategory, string, string, string | null, string | null][] = [
  ['unspecified', '0.0.0.0', '0.255.255.255', null, '1.0.0.0'],
  ['private', '10.0.0.0', '10.255.255.255', '9.255.255.255', '11.0.0.0'],
  ['cgnat', '100.64.0.0', '100.127.255.255', '100.63.255.255', '100.128.0.0'],
  ['loopback', '127.0.0.0', '127.255.255.255', '126.255.255.255', '128.0.0.0'],
  ['link-local', '169.254.0.0', '169.254.255.255', '169.253.255.255', '169.255.0.0'],
  ['private', '172.16.0.0', '172.31.255.255', '172.15.255.255', '172.32.0.0'],
  ['reserved', '192.0.0.0', '192.0.0.255', '191.255.255.255', null],
  ['documentation', '192.0.2.0', '192.0.2.255', '192.0.1.255', '192.0.3.0'],
  ['reserved', '192.88.99.0', '192.88.99.255', '192.88.98.255', '192.88.100.0'],
  ['private', '192.168.0.0', '192.168.255.255', '192.167.255.255', '192.169.0.0'],
  ['benchmarking', '198.18.0.0', '198.19.255.255', '198.17.255.255', '198.20.0.0'],
  ['documentation', '198.51.100.0', '198.51.100.255', '198.51.99.255', '198.51.101.0'],
  ['documentation', '203.0.113.0', '203.0.113.255', '203.0.112.255', '203.0.114.0'],
  ['multicast', '224.0.0.0', '239.255.255.255', '223.255.255.255', null],
  ['reserved', '240.0.0.0', '255.255.255.254', null, null],
];

const V6_RANGES: [AddressCategory, string, string, string | null, string | null][] = [
  ['unspecified', '::', '::', null, null],
  ['loopback', '::1', '::1', null, null],
  ['reserved', '::2', '1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', null, '2000::'],
  ['teredo', '2001::', '2001:0:ffff:ffff:ffff:ffff:ffff:ffff', null, '2001:1::'],
  [
    'benchmarking',
    '2001:2::',
    '2001:2:0:ffff:ffff:ffff:ffff:ffff',
    '2001:1:ffff:ffff:ffff:ffff:ffff:ffff',
    '2001:2:1::',
  ],
  ['documentation', '2001:db8::', '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff', '2001:db7:ffff::', '2001:db9::'],
  ['documentation', '3fff::', '3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff', '3ffe:ffff::', '3fff:1000::'],
  ['reserved', '4000::', 'fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', null, null],
  ['private', 'fc00::', 'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', null, null],
  ['reserved', 'fe00::', 'fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff', null, null],
  ['link-local', 'fe80::', 'febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff', null, null],
  ['private', 'fec0::', 'feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', null, null],
  ['multicast', 'ff00::', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', null, null],
];

describe('classifyAddress', () => {
  it.each([...V4_RANGES, ...V6_RANGES])(
    '%s: %s .. %s, outside: %s, %s',
    (category, first, last, below, above) => {
      expect(categories(first)).toEqual([category]);
      expect(categories(last)).toEqual([category]);
      for (const outside of [below, above]) {
        if (outside !== null) expect(categories(outside)).not.toContain(category);
      }
    },
  );

  it('calls ordinary unicast public', () => {
    for (const ip of ['1.1.1.1', '8.8.8.8', '93.184.216.34', '2606:4700:4700::1111', '2a00:1450::1']) {
      expect(categories(ip)).toEqual([]);
    }
  });

  it('calls 255.255.255.255 broadcast', () => {
    expect(categories('255.255.255.255')).toEqual(['broadcast']);
  });

  it('knows the cloud metadata addresses, public-looking ones included', () => {
    expect(categories('169.254.169.254')).toEqual(['link-local', 'metadata']);
    expect(categories('169.254.170.2')).toEqual(['link-local', 'metadata']);
    expect(categories('169.254.170.23')).toEqual(['link-local', 'metadata']);
    expect(categories('100.100.100.200')).toEqual(['cgnat', 'metadata']);
    expect(categories('168.63.129.16')).toEqual(['metadata']);
    expect(categories('192.0.0.192')).toEqual(['reserved', 'metadata']);
    expect(categories('fd00:ec2::254')).toEqual(['private', 'metadata']);
    expect(categories('FD00:EC2:0:0:0:0:0:254')).toEqual(['private', 'metadata']);
    expect(categories('fd20:ce::254')).toEqual(['private', 'metadata']);
    expect(categories('169.254.169.253')).toEqual(['link-local']);
  });

  it('judges IPv4-mapped IPv6 as mapped and by the address inside', () => {
    expect(categories('::ffff:127.0.0.1')).toEqual(['ipv4-mapped', 'loopback']);
    expect(categories('::ffff:7f00:1')).toEqual(['ipv4-mapped', 'loopback']);
    expect(categories('0:0:0:0:0:FFFF:0A00:0001')).toEqual(['ipv4-mapped', 'private']);
    expect(categories('::ffff:169.254.169.254')).toEqual(['ipv4-mapped', 'link-local', 'metadata']);
    expect(categories('::ffff:8.8.8.8')).toEqual(['ipv4-mapped']);
    expect(categories('::fffe:ffff:ffff')).toEqual(['reserved']);
    expect(categories('::1:0:0:0')).toEqual(['reserved']);
  });

  it('judges NAT64 and 6to4 addresses by the IPv4 address they embed', () => {
    expect(categories('64:ff9b::8.8.8.8')).toEqual(['nat64']);
    expect(categories('64:ff9b::7f00:1')).toEqual(['nat64', 'loopback']);
    expect(categories('64:ff9b::169.254.169.254')).toEqual(['nat64', 'link-local', 'metadata']);
    expect(categories('64:ff9b:1::1')).toEqual(['private']);
    expect(categories('2002:808:808::1')).toEqual(['6to4']);
    expect(categories('2002:c0a8:101::1')).toEqual(['6to4', 'private']);
    expect(categories('2002:a9fe:a9fe:ffff::1')).toEqual(['6to4', 'link-local', 'metadata']);
  });

  it('strips an IPv6 zone and canonicalizes the address', () => {
    expect(classifyAddress('fe80::1%eth0')).toEqual({
      address: 'fe80::1',
      family: 6,
      categories: ['link-local'],
    });
    expect(classifyAddress('::FFFF:127.0.0.1')?.address).toBe('::ffff:7f00:1');
    expect(classifyAddress('2001:DB8:0:0:0:0:0:1')?.address).toBe('2001:db8::1');
  });

  it('answers null for anything that is not an IP address', () => {
    for (const s of [
      '',
      'localhost',
      '127.1',
      '0x7f.0.0.1',
      '2130706433',
      '010.0.0.1',
      '1.2.3.4.5',
      '[::1]',
      ':::',
    ]) {
      expect(classifyAddress(s)).toBeNull();
    }
    expect(classifyAddress('1'.repeat(100_000))).toBeNull();
    expect(classifyAddress(undefined as unknown as string)).toBeNull();
  });
});

describe('createAddressPolicy', () => {
  it('refuses every non-public category unless private URLs are allowed', () => {
    for (const ip of [
      '127.0.0.1',
      '::1',
      '10.1.2.3',
      '172.20.0.1',
      '192.168.1.1',
      'fd12::1',
      '169.254.1.1',
      'fe80::1',
      '100.64.0.1',
      '::ffff:127.0.0.1',
      '::ffff:8.8.8.8',
      '198.18.0.1',
      '2001::1',
    ]) {
      expect(strict(ip), ip).toMatchObject({ allowed: false });
      expect(lenient(ip), ip).toMatchObject({ allowed: true });
    }
    expect(strict('10.0.0.1')).toMatchObject({
      reason: '10.0.0.1 is private (allowed only with TUNNEL_ALLOW_PRIVATE_URLS=true)',
    });
  });

  it('refuses metadata, unspecified, multicast, broadcast and reserved even when private URLs are allowed', () => {
    const always = [
      '169.254.169.254',
      '169.254.170.2',
      '100.100.100.200',
      '168.63.129.16',
      'fd00:ec2::254',
      '::ffff:169.254.169.254',
      '64:ff9b::a9fe:a9fe',
      '0.0.0.0',
      '::',
      '224.0.0.1',
      'ff02::1',
      '255.255.255.255',
      '240.0.0.1',
      '::7f00:1',
    ];
    for (const ip of always) {
      expect(lenient(ip), ip).toMatchObject({ allowed: false });
      expect(strict(ip), ip).toMatchObject({ allowed: false });
    }
    expect(lenient('169.254.169.254')).toMatchObject({ reason: '169.254.169.254 is metadata' });
  });

  it('allows public addresses, public NAT64 and 6to4 ones included', () => {
    for (const ip of ['8.8.8.8', '2606:4700::1', '64:ff9b::808:808', '2002:808:808::1']) {
      expect(strict(ip), ip).toMatchObject({ allowed: true });
    }
  });

  it('refuses a string that is not an address', () => {
    expect(lenient('localhost')).toEqual({ allowed: false, categories: [], reason: 'not an IP address' });
  });
});
