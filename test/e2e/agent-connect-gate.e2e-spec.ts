import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';

/**
 * The agent port admits connections in turn (AGENT_CONNECT_CONCURRENCY, connection-gate.ts): with
 * one turn, a connection that holds it (here one that never starts TLS) keeps the next waiting,
 * accepted but unread, and the next's handshake starts when the first goes away.
 */
describe('the agent port admits connections in turn', () => {
  let t: TestApp;
  let port: number;

  beforeAll(async () => {
    t = await startTestApp({ env: { AGENT_CONNECT_CONCURRENCY: '1' } });
    const info = await t.http.get('/api/v1/orchestrator/info').set('Authorization', await t.adminAuth());
    port = Number(String(info.body.agent_endpoint).split(':').at(-1));
  });
  afterAll(() => t?.close());

  it('a second connection waits for the first one’s turn to end', async () => {
    const holder = await new Promise<Socket>((resolve, reject) => {
      const s = tcpConnect(port, '127.0.0.1', () => resolve(s));
      s.once('error', reject);
    });
    let handshaken = 0;
    const tls = tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      handshaken = Date.now();
    });
    tls.on('error', () => {});
    await new Promise((r) => setTimeout(r, 1500));
    // Still waiting: the server has not read its ClientHello.
    expect(handshaken).toBe(0);
    const released = Date.now();
    holder.destroy();
    await new Promise<void>((resolve, reject) => {
      const deadline = setTimeout(() => reject(new Error('no handshake after the turn ended')), 10_000);
      const check = setInterval(() => {
        if (handshaken === 0) return;
        clearInterval(check);
        clearTimeout(deadline);
        resolve();
      }, 20);
    });
    expect(handshaken).toBeGreaterThanOrEqual(released);
    tls.destroy();
  });
});
