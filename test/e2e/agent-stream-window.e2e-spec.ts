import { connect as h2Connect, type Settings } from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServerMessage } from '../../src/contracts/agent-protocol/index.js';
import { startTestApp, type TestApp } from '../support/app.js';
import {
  agentClient,
  agentEndpoint,
  enrollAgent,
  helloMessage,
  preApprovedToken,
  type AgentIdentity,
} from '../support/grpc-agent.js';

/** The SETTINGS the agent port sends a client with `identity`'s certificate. */
async function portSettings(endpoint: string, identity: AgentIdentity): Promise<Settings> {
  const session = h2Connect(`https://${endpoint}`, {
    ca: identity.caPem,
    cert: identity.certPem,
    key: identity.keyPem,
  });
  try {
    return await new Promise<Settings>((resolve, reject) => {
      session.once('remoteSettings', resolve);
      session.once('error', reject);
    });
  } finally {
    session.destroy();
  }
}

/**
 * A welcomed agent sends one heartbeat carrying `bytes` of check detail: resolves with the ack of
 * that heartbeat, so the whole upload crossed the port's flow control and was read.
 */
async function uploadAcknowledged(endpoint: string, identity: AgentIdentity, bytes: number): Promise<number> {
  const client = agentClient(endpoint, identity);
  const stream = client.Connect();
  try {
    return await new Promise<number>((resolve, reject) => {
      const deadline = setTimeout(() => reject(new Error('no ack of the large heartbeat')), 20_000);
      stream.on('data', (m: ServerMessage) => {
        if (m.welcome)
          stream.write({
            heartbeat: {
              sequence: 7,
              metrics: { cpu_percent: 1, memory_percent: 1, disk_percent: 1, containers_running: 0 },
              checks: [{ name: 'large', ok: true, critical: false, detail: 'x'.repeat(bytes) }],
            },
          });
        const ack = (m as { heartbeat_ack?: { sequence: number | string } }).heartbeat_ack;
        if (ack) {
          clearTimeout(deadline);
          resolve(Number(ack.sequence));
        }
      });
      stream.on('error', (err) => {
        clearTimeout(deadline);
        reject(err);
      });
      stream.write(helloMessage(identity.id));
    });
  } finally {
    stream.cancel();
    client.close();
  }
}

/**
 * AGENT_STREAM_WINDOW sets the HTTP/2 window the agent port gives each stream (how much an agent
 * may send before the gateway has read it), with the stream limit kept: docs/workers.md.
 */
describe('the agent port’s HTTP/2 stream window', () => {
  // One app at a time: two apps in one test process do not keep each other's admin tokens apart.
  describe('unset', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp();
    });
    afterAll(() => t?.close());

    it('is HTTP/2’s default, with eight streams per connection', async () => {
      const identity = await enrollAgent(t.url, await preApprovedToken(t), 'window-default');
      const settings = await portSettings(await agentEndpoint(t), identity);
      expect(settings.initialWindowSize).toBe(65_535);
      expect(settings.maxConcurrentStreams).toBe(8);
    });
  });

  describe('AGENT_STREAM_WINDOW=16KiB', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ env: { AGENT_STREAM_WINDOW: '16KiB' } });
    });
    afterAll(() => t?.close());

    it('is the window advertised, and an upload many windows long still gets through', async () => {
      const identity = await enrollAgent(t.url, await preApprovedToken(t), 'window-small');
      const endpoint = await agentEndpoint(t);
      const settings = await portSettings(endpoint, identity);
      expect(settings.initialWindowSize).toBe(16 * 1024);
      expect(settings.maxConcurrentStreams).toBe(8);
      expect(await uploadAcknowledged(endpoint, identity, 200_000)).toBe(7);
    });
  });
});
