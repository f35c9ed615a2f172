import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startBindingResponder, startCoturn, type StunEndpoint } from '../../../../test/support/stun.js';
import { TopologyDetector, type TopologyDetectorOptions } from './topology.js';

const stopping: { stop(): Promise<void> }[] = [];
afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(stopping.splice(0).map((s) => s.stop()));
});

async function responder(...args: Parameters<typeof startBindingResponder>) {
  const r = await startBindingResponder(...args);
  stopping.push(r);
  return r;
}

const server = (s: StunEndpoint) => ({ host: s.host, port: s.port });

describe('TopologyDetector against coturn', () => {
  let coturn: Awaited<ReturnType<typeof startCoturn>>;
  beforeAll(async () => {
    coturn = await startCoturn();
  });
  afterAll(async () => {
    await coturn?.stop();
  });

  it('sees 127.0.0.1, one of our own addresses: no NAT, direct', async () => {
    const topology = await new TopologyDetector({ stunServers: [server(coturn)] }).detect();
    expect(topology).toMatchObject({ public_ip: '127.0.0.1', has_nat: false, recommended_mode: 'direct' });
    expect(topology.local_ips).toContain('127.0.0.1');
    expect(topology.reason).toContain('sees this machine as 127.0.0.1, which is one of its own addresses');
    expect(Object.keys(topology).sort()).toEqual([
      'default_gateway',
      'environment',
      'has_nat',
      'local_ips',
      'private_subnet',
      'public_ip',
      'reason',
      'recommended_mode',
    ]);
  });
});

describe('TopologyDetector', () => {
  it('reports NAT and recommends the tunnel when the server sees an address that is not ours', async () => {
    const natted = await responder({ mappedAddress: { address: '203.0.113.7', port: 61000 } });
    const topology = await new TopologyDetector({ stunServers: [server(natted)] }).detect();
    expect(topology).toMatchObject({ public_ip: '203.0.113.7', has_nat: true, recommended_mode: 'tunnel' });
    expect(topology.reason).toContain('203.0.113.7, which is not one of its own addresses: it is behind NAT');
  });

  it('answers within the deadline when STUN is silent: no public address, and the reason says so', async () => {
    const silent = await responder({ silent: true });
    const started = Date.now();
    const topology = await new TopologyDetector({ stunServers: [server(silent)], deadlineMs: 800 }).detect();
    // An upper bound only: the deadline plus generous slack for a loaded machine.
    expect(Date.now() - started).toBeLessThan(2800);
    expect(topology).toMatchObject({ public_ip: null, has_nat: false, recommended_mode: 'tunnel' });
    expect(topology.reason).toMatch(/^No STUN server answered within 0\.8 s \(asked 127\.0\.0\.1:\d+\)/);
    expect(silent.requests).toBeGreaterThan(0);
  });

  it('waits 3 s by default for a silent server, and no longer', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const silent = await responder({ silent: true });
    let settled = false;
    const detection = new TopologyDetector({ stunServers: [server(silent)] }).detect().finally(() => {
      settled = true;
    });
    await vi.advanceTimersByTimeAsync(2999);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const topology = await detection;
    expect(topology.public_ip).toBeNull();
    expect(topology.reason).toContain('within 3 s');
  });

  it('serves the same answer for a minute without asking STUN again, then detects afresh', async () => {
    const counting = await responder({ mappedAddress: { address: '203.0.113.7' } });
    let clock = 1_000_000;
    const detector = new TopologyDetector({ stunServers: [server(counting)], now: () => clock });
    const first = await detector.detect();
    clock += 59_999;
    expect(await detector.detect()).toBe(first);
    expect(counting.requests).toBe(1);
    clock += 1;
    const second = await detector.detect();
    expect(second).not.toBe(first);
    expect(second.public_ip).toBe('203.0.113.7');
    expect(counting.requests).toBe(2);
  });

  it('runs one detection for concurrent callers', async () => {
    const counting = await responder({ mappedAddress: { address: '203.0.113.7' } });
    const detector = new TopologyDetector({ stunServers: [server(counting)], cacheMs: 0 });
    const answers = await Promise.all(Array.from({ length: 5 }, () => detector.detect()));
    expect(new Set(answers).size).toBe(1);
    expect(counting.requests).toBe(1);
    // With no cache, the next call after they finished is a new detection.
    await detector.detect();
    expect(counting.requests).toBe(2);
  });

  it('says when no STUN server is configured', async () => {
    const topology = await new TopologyDetector({ stunServers: [] }).detect();
    expect(topology).toMatchObject({ public_ip: null, has_nat: false, recommended_mode: 'tunnel' });
    expect(topology.reason).toMatch(/^No STUN server is configured/);
  });

  it('takes environment, gateway, subnet and addresses from the injected root and interfaces', async () => {
    const root = mkdtempSync(join(tmpdir(), 'so-topology-'));
    try {
      writeFileSync(join(root, '.dockerenv'), '');
      const natted = await responder({ mappedAddress: { address: '203.0.113.7' } });
      const options: TopologyDetectorOptions = {
        stunServers: [server(natted)],
        root,
        env: {},
        interfaces: () => ({
          lo: [
            {
              address: '127.0.0.1',
              netmask: '255.0.0.0',
              family: 'IPv4',
              mac: '00:00:00:00:00:00',
              internal: true,
              cidr: '127.0.0.1/8',
            },
          ],
          eth0: [
            {
              address: '172.17.0.5',
              netmask: '255.255.0.0',
              family: 'IPv4',
              mac: '02:42:ac:11:00:05',
              internal: false,
              cidr: '172.17.0.5/16',
            },
          ],
        }),
      };
      const topology = await new TopologyDetector(options).detect();
      expect(topology).toEqual({
        environment: { kind: 'container', evidence: ['/.dockerenv exists'] },
        has_nat: true,
        local_ips: ['172.17.0.5', '127.0.0.1'],
        public_ip: '203.0.113.7',
        // No /proc/net/route under the fake root.
        default_gateway: null,
        private_subnet: '172.17.0.0/16',
        recommended_mode: 'tunnel',
        reason: expect.stringContaining("In a container the translation may be only the container network's"),
      });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
