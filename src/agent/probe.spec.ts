import { createServer, type AddressInfo, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { probeAnswer } from '../contracts/agent-protocol/index.js';
import { probe, startProbeListener } from './probe.js';

describe('probe', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
  });

  async function listener(key: string): Promise<number> {
    const { server, port } = await startProbeListener('127.0.0.1', 0, (c) => probeAnswer(key, c));
    servers.push(server);
    return port;
  }

  /** Something else on a port: it answers the shape of the protocol, echoing the challenge. */
  async function impostor(): Promise<number> {
    const server = createServer((socket) => {
      socket.on('data', (chunk: Buffer) => {
        const m = /^ping (\S+)\n/.exec(chunk.toString('latin1'));
        if (m) socket.end(`pong ${m[1]}\n`);
      });
      socket.on('error', () => socket.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    return (server.address() as AddressInfo).port;
  }

  const target = (port: number, key: string, challenge = 'c2hhbGxlbmdl') => ({
    worker_id: 'w',
    address: `127.0.0.1:${port}`,
    challenge,
    answer: probeAnswer(key, challenge),
  });

  it('is reachable when the listener holding the key answers the challenge', async () => {
    const result = await probe(target(await listener('k1'), 'k1'), 2000);
    expect(result.reachable).toBe(true);
    expect(result.rtt_ms).toBeGreaterThan(0);
    expect(result.error).toBe('');
  });

  it('is unreachable when another agent answers (another key)', async () => {
    expect(await probe(target(await listener('k2'), 'k1'), 2000)).toEqual({
      worker_id: 'w',
      reachable: false,
      rtt_ms: 0,
      error: '',
    });
  });

  it('an open port that echoes, and a closed port, read the same: unreachable, no reason', async () => {
    const echoing = await probe(target(await impostor(), 'k1'), 2000);
    const closedPort = await impostor();
    await new Promise((resolve) => servers.pop()!.close(resolve));
    const closed = await probe(target(closedPort, 'k1'), 2000);
    for (const r of [echoing, closed])
      expect(r).toEqual({ worker_id: 'w', reachable: false, rtt_ms: 0, error: '' });
  });

  it('without a challenge (an older service) wants its own nonce echoed', async () => {
    const port = await impostor();
    const result = await probe(
      { worker_id: 'w', address: `127.0.0.1:${port}`, challenge: '', answer: '' },
      2000,
    );
    expect(result.reachable).toBe(true);
  });
});
