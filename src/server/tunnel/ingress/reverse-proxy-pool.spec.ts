import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { LoopbackServers, SERVICE_HOST, send, target } from '../../../../test/support/ingress.js';

const servers = new LoopbackServers();
afterEach(() => servers.close());

/**
 * An upstream that counts its connections and, when `dropReused` is set, drops a connection the
 * moment a second request arrives on it: the race of a service closing an idle keep-alive connection
 * just as the proxy sends on it.
 */
async function countingUpstream(dropReused: boolean) {
  const perSocket = new WeakMap<Socket, number>();
  const seen = { connections: 0, answered: 0 };
  const port = await servers.upstream((req, res) => {
    const n = (perSocket.get(req.socket) ?? 0) + 1;
    perSocket.set(req.socket, n);
    if (n === 1) seen.connections += 1;
    if (dropReused && n > 1) return void req.socket.destroy();
    req.resume();
    req.on('end', () => {
      seen.answered += 1;
      res.end(`answer ${seen.answered}`);
    });
  });
  return { port, seen };
}

describe('IngressProxy connection pool', () => {
  it('sends requests for one service over a kept-alive connection', async () => {
    const upstream = await countingUpstream(false);
    const front = await servers.front({ [SERVICE_HOST]: target(upstream.port) });
    for (let i = 1; i <= 3; i++) {
      const got = await send(front.port);
      expect(got.status).toBe(200);
      expect(got.body.toString()).toBe(`answer ${i}`);
    }
    expect(upstream.seen.answered).toBe(3);
    expect(upstream.seen.connections).toBe(1);
  });

  it('a request without a body is sent again on a fresh connection when a reused one drops', async () => {
    const upstream = await countingUpstream(true);
    const front = await servers.front({ [SERVICE_HOST]: target(upstream.port) });
    for (let i = 1; i <= 3; i++) {
      const got = await send(front.port);
      expect(got.status, got.body.toString()).toBe(200);
    }
    expect(upstream.seen.answered).toBe(3);
  });

  it('a request with a body is not sent twice: the client gets a 502', async () => {
    const upstream = await countingUpstream(true);
    const front = await servers.front({ [SERVICE_HOST]: target(upstream.port) });
    expect((await send(front.port, { method: 'POST', body: Buffer.from('one') })).status).toBe(200);
    const second = await send(front.port, { method: 'POST', body: Buffer.from('two') });
    expect(second.status).toBe(502);
    expect(upstream.seen.answered).toBe(1);
  });
});
