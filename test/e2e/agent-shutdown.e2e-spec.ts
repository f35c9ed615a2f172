import { connect as http2Connect, type ClientHttp2Session } from 'node:http2';
import { describe, expect, it } from 'vitest';
import { loadAgentProto, type ServerMessage } from '../../src/contracts/agent-protocol/index.js';
import { startTestApp } from '../support/app.js';
import { agentEndpoint, enrollAgent, helloMessage, preApprovedToken } from '../support/grpc-agent.js';

// On SIGTERM the agent gateway says goodbye on every stream, then gives the agents a short grace to
// close their ends before it cuts the rest. A fleet of thousands, busy redialling, took more than
// the old 2 s grace to close, and the port stayed down for all of it. An agent that never closes
// its end (a stalled process, a half-open connection) must not hold the service's stop up either.

const CONNECT = loadAgentProto().AgentGateway.service.Connect;

/** One gRPC message frame: not compressed, 4-byte big-endian length, the protobuf bytes. */
function frame(message: object): Buffer {
  const body = CONNECT.requestSerialize(message);
  const out = Buffer.alloc(5 + body.length);
  out.writeUInt32BE(body.length, 1);
  body.copy(out, 5);
  return out;
}

/** The server's messages in `bytes` (whole frames only, as this test's messages are small). */
function messages(bytes: Buffer): ServerMessage[] {
  const out: ServerMessage[] = [];
  for (let at = 0; at + 5 <= bytes.length;) {
    const length = bytes.readUInt32BE(at + 1);
    out.push(CONNECT.responseDeserialize(bytes.subarray(at + 5, at + 5 + length)) as ServerMessage);
    at += 5 + length;
  }
  return out;
}

describe('the agent gateway stopping under an agent that never closes its end', () => {
  it('sends the goodbye, and stops within its grace instead of waiting on the agent', async () => {
    const t = await startTestApp();
    let session: ClientHttp2Session | undefined;
    try {
      const identity = await enrollAgent(t.url, await preApprovedToken(t), 'stalled-agent');
      const endpoint = await agentEndpoint(t);
      // A raw HTTP/2 client over the agent's mutual TLS: unlike grpc-js, it never ends its side of
      // the stream by itself, as a stalled agent would not.
      session = http2Connect(`https://${endpoint}`, {
        ca: identity.caPem,
        key: identity.keyPem,
        cert: identity.certPem,
      });
      session.on('error', () => undefined);
      const stream = session.request(
        { ':method': 'POST', ':path': CONNECT.path, 'content-type': 'application/grpc', te: 'trailers' },
        { endStream: false },
      );
      stream.on('error', () => undefined);
      let received = Buffer.alloc(0);
      const welcomed = new Promise<void>((resolve) =>
        stream.on('data', (chunk: Buffer) => {
          received = Buffer.concat([received, chunk]);
          if (messages(received).some((m) => m.welcome)) resolve();
        }),
      );
      stream.write(frame(helloMessage(identity.id)));
      await welcomed;
      const sessionClosed = new Promise<void>((resolve) => session!.once('close', () => resolve()));

      // The agent is told nothing by its stack and closes nothing: the stop must not wait on it for
      // long. A margin of several times the grace, so a loaded machine does not fail the test.
      const stopped = t.app.close().then(() => 'stopped' as const);
      const outcome = await Promise.race([
        stopped,
        new Promise<'still waiting'>((resolve) => setTimeout(() => resolve('still waiting'), 1_500)),
      ]);
      expect(outcome).toBe('stopped');
      // Its goodbye reached it before the connection was cut, and the cut closed its session.
      expect(messages(received).find((m) => m.disconnect)?.disconnect?.reason).toBe('service shutting down');
      const left = new Promise<void>((_, reject) =>
        setTimeout(() => reject(new Error('the connection was left open after the stop')), 5_000),
      );
      await Promise.race([sessionClosed, left]);
      expect(stream.writableEnded).toBe(false);
    } finally {
      session?.destroy();
      await t.app.close().catch(() => undefined);
      await t.db.drop();
    }
  });
});
