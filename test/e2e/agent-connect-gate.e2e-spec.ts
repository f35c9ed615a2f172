import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { connectAgent, enrollAgent, preApprovedToken } from '../support/grpc-agent.js';

/** `name{labels}` sample values of the app's /metrics, by the whole series text. */
async function metrics(t: TestApp, name: string): Promise<Map<string, number>> {
  const text = (await t.http.get('/metrics')).text;
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

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

  it('measures each connection by phase: queued, handshake, hello', async () => {
    // The test above: two connections queued, the second for about 1.5 s.
    const before = await metrics(t, 'stack_agent_connect_seconds');
    expect(before.get('stack_agent_connect_seconds_count{phase="queued"}')).toBe(2);
    expect(before.get('stack_agent_connect_seconds_sum{phase="queued"}')).toBeGreaterThan(1.4);
    expect(before.get('stack_agent_connect_seconds_bucket{le="1",phase="queued"}')).toBe(1);
    // Neither reached a Connect stream: no handshake or hello measured yet.
    expect(before.get('stack_agent_connect_seconds_count{phase="handshake"}') ?? 0).toBe(0);
    expect(before.get('stack_agent_connect_seconds_count{phase="hello"}') ?? 0).toBe(0);

    const identity = await enrollAgent(t.url, await preApprovedToken(t), 'node-phases');
    const agent = await connectAgent(`127.0.0.1:${port}`, identity, 60_000);
    const after = await metrics(t, 'stack_agent_connect_seconds');
    agent.close();
    expect(after.get('stack_agent_connect_seconds_count{phase="queued"}')).toBe(3);
    expect(after.get('stack_agent_connect_seconds_count{phase="handshake"}')).toBe(1);
    expect(after.get('stack_agent_connect_seconds_count{phase="hello"}')).toBe(1);
    for (const phase of ['handshake', 'hello']) {
      const sum = after.get(`stack_agent_connect_seconds_sum{phase="${phase}"}`)!;
      expect(sum).toBeGreaterThan(0);
      expect(sum).toBeLessThan(10);
    }
  });
});
