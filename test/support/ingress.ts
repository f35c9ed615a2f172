import http, { type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http';
import net, { type AddressInfo, type Socket } from 'node:net';
import { Worker } from 'node:worker_threads';
import { matchIngressHost } from '../../src/server/tunnel/ingress/host-match.js';
import {
  IngressProxy,
  type IngressProxyOptions,
  type IngressTarget,
} from '../../src/server/tunnel/ingress/reverse-proxy.js';

/**
 * Loopback servers for the ingress specs (not used by the service): a front server wired the way
 * the service will wire the ingress, upstream services, and a client that records what it got.
 */
export const BASE_DOMAIN = 'tunnel.test';
export const SERVICE_HOST = 'web-shop.b1.tunnel.test';

export class LoopbackServers {
  private readonly closers: (() => Promise<void>)[] = [];

  /** Listens on 127.0.0.1; close() later destroys every connection, upgraded ones included. */
  async listen(server: Server): Promise<number> {
    const sockets = new Set<Socket>();
    server.on('connection', (socket: Socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.closers.push(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
    return (server.address() as AddressInfo).port;
  }

  /** A client-side socket, destroyed at close(). */
  track<T extends Socket>(socket: T): T {
    socket.on('error', () => socket.destroy());
    this.closers.push(() => Promise.resolve(void socket.destroy()));
    return socket;
  }

  async upstream(listener: http.RequestListener): Promise<number> {
    return this.listen(http.createServer(listener));
  }

  /** A port nothing listens on: bound once, then closed. */
  async closedPort(): Promise<number> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return port;
  }

  /**
   * A loopback port where connecting never completes. A worker thread listens with a backlog of one
   * and blocks its event loop, so nothing is ever accepted; once fillers have taken the kernel's
   * accept queue, Linux drops further SYNs and connect() hangs, as with a worker that vanished.
   */
  async unansweredPort(): Promise<number> {
    const wake = new Int32Array(new SharedArrayBuffer(4));
    const worker = new Worker(
      `const { parentPort, workerData } = require('node:worker_threads');
       const server = require('node:net').createServer();
       server.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
         parentPort.postMessage(server.address().port);
         Atomics.wait(workerData, 0, 0);
       });`,
      { eval: true, workerData: wake },
    );
    const port = await new Promise<number>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    const fillers = Array.from({ length: 8 }, () => this.track(net.connect(port, '127.0.0.1')));
    this.closers.push(async () => {
      Atomics.store(wake, 0, 1);
      Atomics.notify(wake, 0);
      await worker.terminate();
    });
    // A backlog of one queues two connections; the rest of the fillers hang like the proxy will.
    let connected = 0;
    await new Promise<void>((resolve) => {
      for (const filler of fillers) filler.once('connect', () => ++connected === 2 && resolve());
    });
    return port;
  }

  /**
   * The front: requests for a matched host go to the proxy, every other one to "the API".
   * `settled` counts exchanges whose handle/upgrade promise has settled.
   */
  async front(
    targets: Record<string, IngressTarget | Error>,
    options: Partial<IngressProxyOptions> = {},
  ): Promise<Front> {
    const front: Front = { port: 0, warnings: [], settled: [] };
    const proxy = new IngressProxy({
      resolve: (host) => {
        const found = targets[host];
        return found instanceof Error ? Promise.reject(found) : Promise.resolve(found);
      },
      logger: { warn: (obj, msg) => front.warnings.push({ ...obj, msg }) },
      ...options,
    });
    const server = http.createServer((req, res) => {
      const host = matchIngressHost(req.headers.host, BASE_DOMAIN);
      if (!host) return res.end('api');
      front.settled.push(proxy.handle(req, res, host));
    });
    server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
      const host = matchIngressHost(req.headers.host, BASE_DOMAIN);
      if (!host) return socket.destroy();
      front.settled.push(proxy.upgrade(req, socket, head, host));
    });
    front.port = await this.listen(server);
    return front;
  }

  async close(): Promise<void> {
    for (const close of this.closers.splice(0).reverse()) await close();
  }
}

export interface Front {
  port: number;
  warnings: Record<string, unknown>[];
  settled: Promise<void>[];
}

export const target = (port: number): IngressTarget => ({
  host: '127.0.0.1',
  port,
  service: 'web',
  stack: 'shop',
});

export interface Received {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** One request on a connection of its own (so `Connection: close` and no Keep-Alive from the front). */
export function send(
  port: number,
  init: { method?: string; path?: string; headers?: Record<string, string | string[]>; body?: Buffer } = {},
): Promise<Received> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: init.method ?? 'GET',
        path: init.path ?? '/',
        headers: { host: SERVICE_HOST, ...init.headers },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

/** A deferred value: a test step waits on `promise` until another step calls `resolve`. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
