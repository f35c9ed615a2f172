import { createServer, connect, type Server, type AddressInfo } from 'node:net';
import type { ProbeResultMsg, ProbeTargetMsg } from '../agent-protocol/index.js';

const MAX_LINE = 64;

/**
 * The agent's probe listener: answers `ping <nonce>` with `pong <nonce>` on one line, nothing else.
 * Peers measure reachability and round-trip time against it.
 */
export async function startProbeListener(
  host: string,
  port: number,
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
      if (line.startsWith('ping ')) socket.end(`pong ${line.slice(5)}\n`);
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
 * One probe: connect, ping, wait for the pong; the time from ping to pong is the round trip. The
 * result is reachable or not, never why not: a socket error would tell open, closed and filtered
 * ports apart.
 */
export function probe(target: ProbeTargetMsg, timeoutMs: number): Promise<ProbeResultMsg> {
  return new Promise((resolve) => {
    const [host, portText] = splitHostPort(target.address);
    const nonce = Math.random().toString(36).slice(2, 10);
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
    if (!host || !Number.isInteger(port) || port < 1 || port > 65535) {
      resolve({ worker_id: target.worker_id, reachable: false, rtt_ms: 0, error: '' });
      return;
    }
    const timer = setTimeout(() => finish(false), timeoutMs);
    const socket = connect({ host, port }, () => {
      sentAt = performance.now();
      socket.write(`ping ${nonce}\n`);
    });
    socket.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('latin1');
      if (buffer.includes(`pong ${nonce}\n`)) finish(true);
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
