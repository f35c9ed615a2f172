import { randomBytes } from 'node:crypto';
import { createServer, connect, type Server, type AddressInfo } from 'node:net';
import type { ProbeResultMsg, ProbeTargetMsg } from '../contracts/agent-protocol/index.js';

const MAX_LINE = 64;
/** A challenge: base64url (what the service sends) or base36 (an older prober's nonce). */
const CHALLENGE = /^[A-Za-z0-9_-]{1,58}$/;

/**
 * The agent's probe listener: answers one line `ping <challenge>` with `pong <answer>`, nothing
 * else. `answer` is the HMAC with this connection's probe key, so only this agent can answer a
 * challenge the service made for it.
 */
export async function startProbeListener(
  host: string,
  port: number,
  answer: (challenge: string) => string,
): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => {
    socket.setTimeout(5000, () => socket.destroy());
    let buffer = '';
    socket.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('latin1');
      if (buffer.length > MAX_LINE) return socket.destroy();
      const nl = buffer.indexOf('\n');
      if (nl === -1) return;
      const line = buffer.slice(0, nl);
      const challenge = line.startsWith('ping ') ? line.slice(5) : '';
      if (CHALLENGE.test(challenge)) socket.end(`pong ${answer(challenge)}\n`);
      else socket.destroy();
    });
    socket.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return { server, port: (server.address() as AddressInfo).port };
}

/**
 * One probe: connect, send the challenge, wait for the one answer the target agent can give; the
 * time from ping to pong is the round trip. The result is reachable or not, never why not: an
 * address that is not the peer's probe listener reads the same whether its port is open, closed or
 * filtered, so the probes cannot be used to scan.
 */
export function probe(target: ProbeTargetMsg, timeoutMs: number): Promise<ProbeResultMsg> {
  return new Promise((resolve) => {
    const [host, portText] = splitHostPort(target.address);
    // An older service sends no challenge: any probe listener that echoes our nonce counts.
    const challenge = target.challenge || randomBytes(8).toString('base64url');
    const expected = `pong ${target.challenge ? target.answer : challenge}\n`;
    let sentAt = 0;
    let buffer = '';
    let settled = false;
    const finish = (reachable: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const rtt = reachable ? performance.now() - sentAt : 0;
      resolve({ worker_id: target.worker_id, reachable, rtt_ms: rtt, error: '' });
    };
    const port = Number(portText);
    if (!host || !Number.isInteger(port) || port < 1 || port > 65535 || !CHALLENGE.test(challenge)) {
      resolve({ worker_id: target.worker_id, reachable: false, rtt_ms: 0, error: '' });
      return;
    }
    const timer = setTimeout(() => finish(false), timeoutMs);
    const socket = connect({ host, port }, () => {
      sentAt = performance.now();
      socket.write(`ping ${challenge}\n`);
    });
    socket.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('latin1');
      const nl = buffer.indexOf('\n');
      if (nl !== -1) finish(buffer.slice(0, nl + 1) === expected);
      else if (buffer.length > MAX_LINE) finish(false);
    });
    socket.on('error', () => finish(false));
    socket.on('close', () => finish(false));
  });
}

function splitHostPort(address: string): [string, string] {
  const i = address.lastIndexOf(':');
  const host = address.slice(0, i).replace(/^\[|\]$/g, '');
  return [host, address.slice(i + 1)];
}
