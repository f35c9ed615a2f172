import { X509Certificate } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { connect, createServer, type Server, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foreignClientCertificate, serverCertificate } from '../../test/support/pki.js';
import { TlsSessionStore, withoutPeerCertificate } from './tls-session.js';

// The agent keeps its last TLS session without the service's certificate in it: a real TLS 1.3
// server on loopback with client certificates, as the agent port is.

interface Outcome {
  resumed: boolean;
  authorized: boolean;
  /** The client certificate's CN as the server read it. */
  seenBy: string;
}

describe('the agent TLS session store', () => {
  let server: Server;
  let port: number;
  let serverDer: Buffer;
  let client: { caPem: string; certPem: string; keyPem: string };
  let serverCa: string;

  beforeAll(async () => {
    const s = await serverCertificate(['localhost']);
    client = await foreignClientCertificate('agent-1');
    serverCa = s.caPem;
    serverDer = new X509Certificate(s.certPem).raw;
    server = createServer(
      { cert: s.certPem, key: s.keyPem, ca: client.caPem, requestCert: true, minVersion: 'TLSv1.3' },
      (socket) => socket.end(String(socket.getPeerCertificate().subject?.CN)),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** One connection offering the store's session and keeping the new ones, as the agent's. */
  function dial(store: TlsSessionStore): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      const session = store.get(client.certPem);
      const socket: TLSSocket = connect({
        host: '127.0.0.1',
        port,
        servername: 'localhost',
        ca: serverCa,
        cert: client.certPem,
        key: client.keyPem,
        ...(session ? { session } : {}),
      });
      let resumed = false;
      let authorized = false;
      let seenBy = '';
      socket.on('secureConnect', () => {
        resumed = socket.isSessionReused();
        authorized = socket.authorized;
      });
      socket.on('session', (ticket: Buffer) => store.set(client.certPem, ticket));
      socket.on('data', (chunk: Buffer) => (seenBy += chunk.toString()));
      socket.on('error', reject);
      socket.on('close', () => resolve({ resumed, authorized, seenBy }));
    });
  }

  it("keeps the session without the service's certificate, and resumes with it", async () => {
    const store = new TlsSessionStore();
    expect(await dial(store)).toEqual({ resumed: false, authorized: true, seenBy: 'agent-1' });
    const kept = store.get(client.certPem);
    expect(kept).toBeInstanceOf(Buffer);
    expect(kept!.includes(serverDer)).toBe(false);
    // Resumed, still authorized (the session keeps the verification's result), and the server
    // still has the client's certificate (from its own ticket).
    expect(await dial(store)).toEqual({ resumed: true, authorized: true, seenBy: 'agent-1' });
    expect(await dial(store)).toEqual({ resumed: true, authorized: true, seenBy: 'agent-1' });
  });

  it('keeps the whole session when asked to (the benchmarks compare both)', async () => {
    const store = new TlsSessionStore({ keepPeerCertificate: true });
    await dial(store);
    const whole = store.get(client.certPem)!;
    expect(whole.includes(serverDer)).toBe(true);
    const lean = withoutPeerCertificate(whole);
    // One element less: the certificate and its [3] header (and the outer length's bytes at most).
    expect(whole.length - lean.length - serverDer.length).toBeGreaterThanOrEqual(2);
    expect(whole.length - lean.length - serverDer.length).toBeLessThanOrEqual(8);
    expect(lean.includes(serverDer)).toBe(false);
    expect(await dial(store)).toMatchObject({ resumed: true, authorized: true });
  });

  it('leaves alone what is not a session it can read', () => {
    const store = new TlsSessionStore({ keepPeerCertificate: true });
    for (const odd of [
      Buffer.alloc(0),
      Buffer.from([0x30]),
      Buffer.from([0x30, 0x05, 0x02, 0x01]),
      Buffer.from([0x04, 0x02, 0xa3, 0x00]),
      Buffer.from([0x30, 0x80, 0xa3, 0x00, 0x00, 0x00]),
      Buffer.from([0x30, 0x04, 0x02, 0x01, 0x01, 0xa3]),
      Buffer.from([0x30, 0x03, 0x02, 0x01, 0x01]),
    ]) {
      expect(withoutPeerCertificate(odd)).toBe(odd);
    }
    expect(store.get('none')).toBeUndefined();
    // A [3] element at the top level goes, whatever its size; the rest stays in order.
    const big = Buffer.alloc(300, 7);
    const session = Buffer.concat([
      Buffer.from([0x30, 0x82, 0x01, 0x35, 0x02, 0x01, 0x01, 0xa3, 0x82, 0x01, 0x2c]),
      big,
      Buffer.from([0x04, 0x00]),
    ]);
    expect(withoutPeerCertificate(session)).toEqual(Buffer.from([0x30, 0x05, 0x02, 0x01, 0x01, 0x04, 0x00]));
  });
});
