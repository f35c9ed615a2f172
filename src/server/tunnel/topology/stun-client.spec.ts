import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { freeUdpPort, startBindingResponder, type StunEndpoint } from '../../../../test/support/stun.js';
import { InvalidStunServerError, parseStunServers, queryPublicAddress } from './stun-client.js';
import { encodeBindingResponse, parseBindingRequest } from './stun-message.js';

const running: { stop(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop()));
});

async function responder(...args: Parameters<typeof startBindingResponder>) {
  const r = await startBindingResponder(...args);
  running.push(r);
  return r;
}

/** A loopback UDP server that answers each Binding request with whatever `reply` sends. */
async function udpServer(
  host: '127.0.0.1' | '::1',
  reply: (id: Buffer, send: (packet: Buffer) => void, from: RemoteInfo) => void,
): Promise<StunEndpoint> {
  const socket: Socket = createSocket(host === '::1' ? 'udp6' : 'udp4');
  socket.on('message', (packet, from) => {
    const id = parseBindingRequest(packet);
    if (id) reply(id, (out) => socket.send(out, from.port, from.address), from);
  });
  await new Promise<void>((resolve) => socket.bind(0, host, resolve));
  const server = {
    host,
    port: socket.address().port,
    stop: () => new Promise<void>((r) => socket.close(() => r())),
  };
  running.push(server);
  return server;
}

describe('queryPublicAddress', () => {
  it('takes the address a server reports and says which server answered', async () => {
    const server = await responder({ mappedAddress: { address: '203.0.113.7', port: 40000 } });
    const result = await queryPublicAddress([server], { deadlineMs: 2000 });
    expect(result.mapped).toEqual({ family: 'IPv4', address: '203.0.113.7', port: 40000 });
    expect(result.server).toBe(`127.0.0.1:${server.port}`);
    expect(result.attempts).toEqual([
      { server: `127.0.0.1:${server.port}`, outcome: 'answered', requests: 1 },
    ]);
    expect(server.requests).toBe(1);
  });

  it('talks to an IPv6 server over IPv6', async () => {
    const server = await udpServer('::1', (id, send, from) =>
      send(encodeBindingResponse(id, { address: from.address, port: from.port })),
    );
    const result = await queryPublicAddress([server], { deadlineMs: 2000 });
    expect(result.mapped).toMatchObject({ family: 'IPv6', address: '::1' });
    expect(result.server).toBe(`[::1]:${server.port}`);
  });

  it('retransmits to a silent server and gives up at the deadline with no address', async () => {
    const silent = await responder({ silent: true });
    const started = Date.now();
    const result = await queryPublicAddress([silent], { deadlineMs: 700, initialRtoMs: 100 });
    expect(Date.now() - started).toBeLessThan(3000);
    expect(result).toMatchObject({ mapped: null, server: null, attempts: [{ outcome: 'no-answer' }] });
    expect(silent.requests).toBeGreaterThanOrEqual(2);
    expect(result.attempts[0].requests).toBe(silent.requests);
  });

  it('skips junk, forged and foreign answers and takes the real one after them', async () => {
    const server = await udpServer('127.0.0.1', (id, send) => {
      const other = Buffer.from(id);
      other[0] ^= 1;
      send(Buffer.from('not stun at all'));
      send(Buffer.alloc(0));
      send(encodeBindingResponse(other, { address: '198.51.100.66', port: 1 }));
      const badCookie = encodeBindingResponse(id, { address: '198.51.100.67', port: 1 });
      badCookie.writeUInt32BE(0xdeadbeef, 4);
      send(badCookie);
      send(encodeBindingResponse(id, { address: '203.0.113.9', port: 9 }));
    });
    const result = await queryPublicAddress([server], { deadlineMs: 2000 });
    expect(result.mapped).toMatchObject({ address: '203.0.113.9', port: 9 });
  });

  it('ends a transaction on an error response or a refusal without waiting for the deadline', async () => {
    const refusing = await udpServer('127.0.0.1', (id, send) => {
      const error = encodeBindingResponse(id, { address: '127.0.0.1', port: 1 });
      error.writeUInt16BE(0x0111, 0);
      send(error);
    });
    const closed = await freeUdpPort();
    const result = await queryPublicAddress(
      [refusing, { host: '127.0.0.1', port: closed }],
      // A deadline the test would time out on: only an early end lets it pass.
      { deadlineMs: 60_000 },
    );
    expect(result.mapped).toBeNull();
    expect(result.attempts.map((a) => a.outcome)).toEqual(['error-response', 'refused']);
  });

  it('asks all servers at once, so a silent first one does not hold up the answer', async () => {
    const silent = await responder({ silent: true });
    const answering = await responder({ mappedAddress: { address: '203.0.113.7' } });
    const result = await queryPublicAddress([silent, answering], { deadlineMs: 60_000 });
    expect(result.server).toBe(`127.0.0.1:${answering.port}`);
    expect(result.attempts.map((a) => a.outcome)).toEqual(['no-answer', 'answered']);
    expect(silent.requests).toBe(1);
  });

  it('resolves names through the injected lookup, and bounds a lookup that hangs', async () => {
    const server = await responder();
    const names: string[] = [];
    const result = await queryPublicAddress([{ host: 'stun.test', port: server.port }], {
      deadlineMs: 2000,
      lookup: (host) => {
        names.push(host);
        return Promise.resolve({ address: '127.0.0.1', family: 4 });
      },
    });
    expect(names).toEqual(['stun.test']);
    expect(result.mapped?.address).toBe('127.0.0.1');

    const failing = await queryPublicAddress([{ host: 'nowhere.test', port: 3478 }], {
      deadlineMs: 2000,
      lookup: () => Promise.reject(new Error('getaddrinfo ENOTFOUND nowhere.test')),
    });
    expect(failing.attempts[0]).toMatchObject({ outcome: 'unresolved', requests: 0 });

    const hanging = await queryPublicAddress([{ host: 'slow.test', port: 3478 }], {
      deadlineMs: 300,
      lookup: () => new Promise(() => undefined),
    });
    expect(hanging.attempts[0]).toMatchObject({ outcome: 'no-answer', requests: 0 });
    expect(hanging.attempts[0].detail).toContain('still being resolved');
  });

  it('records a port out of range as a failed attempt instead of throwing', async () => {
    const result = await queryPublicAddress(
      [
        { host: '127.0.0.1', port: 0 },
        { host: '127.0.0.1', port: 70_000 },
      ],
      { deadlineMs: 60_000 },
    );
    expect(result.attempts.map((a) => a.outcome)).toEqual(['socket-error', 'socket-error']);
  });

  it('answers at once for no servers', async () => {
    expect(await queryPublicAddress([], { deadlineMs: 60_000 })).toEqual({
      mapped: null,
      server: null,
      attempts: [],
    });
  });
});

describe('parseStunServers', () => {
  it('reads host:port lists, IPv6 in brackets, with 3478 as the default port', () => {
    expect(parseStunServers(' stun.example.org:19302, 127.0.0.1:3478,[::1]:5349 ,,stun.test,::1')).toEqual([
      { host: 'stun.example.org', port: 19302 },
      { host: '127.0.0.1', port: 3478 },
      { host: '::1', port: 5349 },
      { host: 'stun.test', port: 3478 },
      { host: '::1', port: 3478 },
    ]);
    expect(parseStunServers('')).toEqual([]);
  });

  it.each(['host:0', 'host:65536', 'host:port', 'a b:1', '[not-v6]:1', 'user@host:1', 'host:1:2', ':3478'])(
    'refuses %j with a typed error naming the entry',
    (entry) => {
      expect(() => parseStunServers(`127.0.0.1:3478,${entry}`)).toThrow(InvalidStunServerError);
      expect(() => parseStunServers(entry)).toThrow(entry);
    },
  );
});
