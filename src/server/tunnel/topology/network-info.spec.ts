import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { NetworkInterfaceInfo } from 'node:os';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { addressSet, formatIpv6, isPrivateAddress, networkCidr, parseIp } from './ip-address.js';
import {
  describeGateway,
  findPrivateSubnet,
  listLocalAddresses,
  parseIpv4Routes,
  parseIpv6Routes,
  readNetworkInfo,
  type InterfaceTable,
} from './network-info.js';

// As a Linux kernel prints them (columns padded with spaces and tabs, lines padded at the end).
const ROUTE_HOME = `Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
wlan0\t00000000\t0102A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0
eth0\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0
eth0\t0000000A\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0
docker0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0
`;
const ROUTE_CONTAINER = `Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT                                                       
eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0                                                                               
eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0                                                                               
`;
const IPV6_ROUTE = `fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0
fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000002 00000000 00000001     eth0
00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000002 00000000 00000003     eth0
00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo
00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo
`;
const IPV6_ROUTE_RA = `00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe80000000000000021122fffe334455 00000400 00000001 00000000 00450003   enp3s0
00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe80000000000000021122fffe334466 00000064 00000001 00000000 00450003   enp4s0
`;

function entry(address: string, cidr: string | null, internal = false): NetworkInterfaceInfo {
  const family = address.includes(':') ? 'IPv6' : 'IPv4';
  return {
    address,
    cidr,
    internal,
    family,
    netmask: '',
    mac: '00:00:00:00:00:00',
    scopeid: 0,
  };
}

const HOME: InterfaceTable = {
  lo: [entry('127.0.0.1', '127.0.0.1/8', true), entry('::1', '::1/128', true)],
  docker0: [entry('172.17.0.1', '172.17.0.1/16')],
  eth0: [
    entry('10.0.0.23', '10.0.0.23/24'),
    entry('fe80::a00:27ff:fe4e:66a1', 'fe80::a00:27ff:fe4e:66a1/64'),
  ],
};

describe('default routes', () => {
  it('reads the IPv4 gateway little-endian and takes the lowest metric', () => {
    expect(parseIpv4Routes(ROUTE_HOME)).toEqual({ interface: 'eth0', gateway: '10.0.0.1', metric: 100 });
    expect(parseIpv4Routes(ROUTE_CONTAINER)).toEqual({ interface: 'eth0', gateway: '192.0.2.1', metric: 0 });
  });

  it('reads the IPv6 gateway, skipping the rejecting route on lo', () => {
    expect(parseIpv6Routes(IPV6_ROUTE)).toEqual({ interface: 'eth0', gateway: 'fd00::1', metric: 1024 });
    expect(parseIpv6Routes(IPV6_ROUTE_RA)).toEqual({
      interface: 'enp4s0',
      gateway: 'fe80::211:22ff:fe33:4466',
      metric: 100,
    });
  });

  it('finds no default route in tables without one, or in junk, without throwing', () => {
    const withoutDefault = ROUTE_HOME.split('\n')
      .filter((l) => !/^\w+\t00000000\t/.test(l))
      .join('\n');
    expect(withoutDefault.split('\n')).toHaveLength(4);
    expect(parseIpv4Routes(withoutDefault)).toBeNull();
    // A default route that is down (flags 0002: gateway but not up).
    expect(
      parseIpv4Routes('Iface\tDestination\tGateway\nwlan0\t00000000\t0102A8C0\t0002\t0\t0\t0\t00000000\n'),
    ).toBeNull();
    for (const junk of [
      '',
      'Iface\n',
      '\n\n',
      'x y z',
      'eth0 00000000 zzzzzzzz 0003 0 0 0 00000000',
      '\u0000'.repeat(50),
    ]) {
      expect(parseIpv4Routes(junk)).toBeNull();
      expect(parseIpv6Routes(junk)).toBeNull();
    }
    expect(parseIpv6Routes(IPV6_ROUTE.split('\n').slice(3).join('\n'))).toBeNull();
  });

  it('names one gateway: IPv4 first, a link-local IPv6 one with its interface', () => {
    const v4 = { interface: 'eth0', gateway: '10.0.0.1', metric: 0 };
    const ula = { interface: 'eth0', gateway: 'fd00::1', metric: 0 };
    const linkLocal = { interface: 'enp4s0', gateway: 'fe80::1', metric: 0 };
    expect(describeGateway({ ipv4: v4, ipv6: ula })).toBe('10.0.0.1');
    expect(describeGateway({ ipv4: null, ipv6: ula })).toBe('fd00::1');
    expect(describeGateway({ ipv4: null, ipv6: linkLocal })).toBe('fe80::1%enp4s0');
    expect(describeGateway({ ipv4: null, ipv6: null })).toBeNull();
  });
});

describe('local addresses and the private subnet', () => {
  it('lists reachable addresses first and internal ones last, each with its network', () => {
    const addresses = listLocalAddresses(HOME);
    expect(addresses.map((a) => a.address)).toEqual([
      '172.17.0.1',
      '10.0.0.23',
      'fe80::a00:27ff:fe4e:66a1',
      '127.0.0.1',
      '::1',
    ]);
    expect(addresses.map((a) => a.network)).toEqual([
      '172.17.0.0/16',
      '10.0.0.0/24',
      'fe80::/64',
      '127.0.0.0/8',
      '::1/128',
    ]);
    expect(addresses.filter((a) => a.internal).map((a) => a.interface)).toEqual(['lo', 'lo']);
    expect(listLocalAddresses({ eth0: [entry('10.1.2.3', null)], empty: undefined })).toEqual([
      { interface: 'eth0', address: '10.1.2.3', family: 'IPv4', network: null, internal: false },
    ]);
  });

  it("takes the default route's interface's private network, else the first private one", () => {
    const addresses = listLocalAddresses(HOME);
    const route = (iface: string) => ({
      ipv4: { interface: iface, gateway: '10.0.0.1', metric: 0 },
      ipv6: null,
    });
    expect(findPrivateSubnet(addresses, route('eth0'))).toBe('10.0.0.0/24');
    expect(findPrivateSubnet(addresses, { ipv4: null, ipv6: null })).toBe('172.17.0.0/16');
  });

  it('gives no private subnet from a public address, and falls back to IPv6 unique-local', () => {
    const publicOnly = listLocalAddresses({ eth0: [entry('198.51.100.4', '198.51.100.4/24')] });
    const routes = { ipv4: { interface: 'eth0', gateway: '198.51.100.1', metric: 0 }, ipv6: null };
    expect(findPrivateSubnet(publicOnly, routes)).toBeNull();
    const withUla = listLocalAddresses({
      eth0: [entry('192.0.2.2', '192.0.2.2/24'), entry('fd00::2', 'fd00::2/64')],
    });
    expect(findPrivateSubnet(withUla, routes)).toBe('fd00::/64');
  });

  it('reads routes under an injected root and interfaces from an injected table', async () => {
    const root = mkdtempSync(join(tmpdir(), 'so-net-'));
    try {
      mkdirSync(join(root, 'proc/net'), { recursive: true });
      writeFileSync(join(root, 'proc/net/route'), ROUTE_HOME);
      const info = await readNetworkInfo({ root, interfaces: () => HOME });
      expect(info).toMatchObject({ defaultGateway: '10.0.0.1', privateSubnet: '10.0.0.0/24' });
      expect(info.routes.ipv6).toBeNull();
      const bare = await readNetworkInfo({ root: join(root, 'missing'), interfaces: () => ({}) });
      expect(bare).toEqual({
        addresses: [],
        routes: { ipv4: null, ipv6: null },
        defaultGateway: null,
        privateSubnet: null,
      });
      const refused = await readNetworkInfo({
        root,
        interfaces: () => {
          throw Object.assign(new Error('uv_interface_addresses returned EPERM'), {
            code: 'ERR_SYSTEM_ERROR',
          });
        },
      });
      expect(refused).toMatchObject({ addresses: [], defaultGateway: '10.0.0.1', privateSubnet: null });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('IP address helpers', () => {
  it('writes IPv6 the RFC 5952 way', () => {
    const text = (s: string) => formatIpv6(parseIp(s)!);
    expect(text('2001:0db8:0000:0000:0000:0000:0002:0001')).toBe('2001:db8::2:1');
    expect(text('2001:db8:0:1:1:1:1:1')).toBe('2001:db8:0:1:1:1:1:1');
    expect(text('2001:0:0:1:0:0:0:1')).toBe('2001:0:0:1::1');
    expect(text('::')).toBe('::');
    expect(text('::ffff:c000:201')).toBe('::ffff:192.0.2.1');
    expect(text('FE80::1%eth0')).toBe('fe80::1');
    expect(text('64:ff9b::192.0.2.33')).toBe('64:ff9b::c000:221');
  });

  it('computes networks, and refuses what is not an address', () => {
    expect(networkCidr('192.168.17.200', 20)).toBe('192.168.16.0/20');
    expect(networkCidr('2001:db8:1:2:3:4:5:6', 48)).toBe('2001:db8:1::/48');
    expect(networkCidr('10.0.0.1', 33)).toBeNull();
    expect(networkCidr('not an address', 8)).toBeNull();
    expect(parseIp('1.2.3')).toBeNull();
    expect(parseIp('')).toBeNull();
  });

  it('compares addresses by value and knows the private ranges', () => {
    const mine = addressSet(['127.0.0.1', 'fd00::2', 'fe80::1%eth0', 'garbage']);
    expect(['127.0.0.1', '::ffff:127.0.0.1', 'fd00:0:0::2', 'FD00::2', 'fe80::1'].map(mine)).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(['203.0.113.7', '127.0.0.2', 'garbage', ''].map(mine)).toEqual([false, false, false, false]);
    expect(
      [
        '10.1.1.1',
        '172.31.0.1',
        '192.168.0.1',
        '100.64.0.1',
        'fd12::1',
        '172.32.0.1',
        '8.8.8.8',
        '2001:db8::1',
      ].map(isPrivateAddress),
    ).toEqual([true, true, true, true, true, false, false, false]);
  });
});
