import http, { STATUS_CODES, type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { pipeline, type Duplex } from 'node:stream';
import { downstreamResponseHeaders, upstreamRequestHeaders, type RawHeaders } from './forward-headers.js';
import {
  lookupUnavailable,
  notForwardable,
  onlyWebSocketUpgrades,
  lingerThenDestroy,
  sendIngressProblem,
  serviceUnavailable,
  subdomainNotFound,
  writeSocketProblem,
  type IngressProblem,
} from './ingress-problem.js';

/** Where a published service answers: its worker's address and the published port. */
export interface IngressTarget {
  host: string;
  port: number;
  service: string;
  stack: string;
}

export interface IngressLogger {
  warn(obj: object, msg: string): void;
}

export interface IngressProxyOptions {
  /** The published service behind a matched host (see matchIngressHost), or undefined. */
  resolve: (host: string) => Promise<IngressTarget | undefined>;
  /** How long connecting to the worker may take before the client gets a 502. */
  connectTimeoutMs?: number;
  logger?: IngressLogger;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 5000;
/**
 * Idle connections to stack services are kept this long for the next request (a fresh TCP
 * connection per request cost 10x the throughput, docs/benchmarks.md). It is below the 5 s keep-alive
 * of Node's and most servers' defaults, so the pool rarely holds a connection the service closed.
 */
const IDLE_UPSTREAM_MS = 2000;

class ConnectTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(ms: number) {
    super(`no connection within ${ms} ms`);
  }
}

type Lookup = { target: IngressTarget } | { problem: IngressProblem };

/**
 * Reverse proxy for requests to published stack services. Bodies stream both ways through pipes
 * (backpressure, nothing buffered, no size limit); each request gets a connection of its own to
 * the worker, so no idle connection can go stale under it and a stream may stay open for as long
 * as both ends want. Neither method rejects: every failure becomes an answer or a closed
 * connection, and their promises settle when the exchange is over.
 */
export class IngressProxy {
  private readonly connectTimeoutMs: number;
  /** Pooled connections for plain requests; upgrades always get a connection of their own. */
  private readonly pool = new http.Agent({
    keepAlive: true,
    timeout: IDLE_UPSTREAM_MS,
    maxFreeSockets: 64,
    scheduling: 'lifo',
  });

  constructor(private readonly opts: IngressProxyOptions) {
    this.connectTimeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  }

  async handle(req: IncomingMessage, res: ServerResponse, host: string): Promise<void> {
    const found = await this.lookup(host);
    if ('problem' in found) return sendIngressProblem(req, res, found.problem);
    if (res.destroyed || req.socket.destroyed) return;
    await new Promise<void>((done) => {
      res.once('close', done);
      this.forward(req, res, host, found.target);
    });
  }

  async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, host: string): Promise<void> {
    // A client that goes away mid-handshake must not become an unhandled 'error'.
    socket.on('error', () => socket.destroy());
    if (!isWebSocketUpgrade(req)) return writeSocketProblem(req, socket, onlyWebSocketUpgrades);
    const found = await this.lookup(host);
    if ('problem' in found) return writeSocketProblem(req, socket, found.problem);
    if (socket.destroyed) return;
    await new Promise<void>((done) => {
      socket.once('close', done);
      this.tunnel(req, socket, head, host, found.target);
    });
  }

  private async lookup(host: string): Promise<Lookup> {
    try {
      const target = await this.opts.resolve(host);
      return target ? { target } : { problem: subdomainNotFound(host) };
    } catch (err) {
      this.opts.logger?.warn({ err, host }, 'ingress lookup failed');
      return { problem: lookupUnavailable };
    }
  }

  /** Stops pooling: idle connections close, ones in use close after their request. */
  close(): void {
    this.pool.destroy();
  }

  private forward(
    req: IncomingMessage,
    res: ServerResponse,
    host: string,
    target: IngressTarget,
    pooled = true,
  ): void {
    const upstream = this.open(req, target, upstreamRequestHeaders(req, host), pooled);
    if (!upstream) return sendIngressProblem(req, res, notForwardable);
    const onClose = (): void => {
      if (!res.writableFinished) upstream.destroy();
    };
    res.once('close', onClose);
    upstream.on('error', (err) => {
      // After the whole answer went out, or once the client left, there is no one to tell.
      if (res.writableFinished || res.destroyed) return;
      // A pooled connection the service closed while it sat idle: a request without a body is
      // sent again, once, on a fresh connection (what browsers do for the same race).
      if (upstream.reusedSocket && !res.headersSent && hasNoBody(req)) {
        res.off('close', onClose);
        return this.forward(req, res, host, target, false);
      }
      this.warnUnreachable(target, err);
      sendIngressProblem(req, res, serviceUnavailable(target));
    });
    upstream.on('response', (upRes) => {
      if (res.destroyed) return upRes.destroy();
      try {
        res.writeHead(
          upRes.statusCode ?? 502,
          upRes.statusMessage || undefined,
          downstreamResponseHeaders(upRes.rawHeaders),
        );
      } catch (err) {
        upRes.destroy();
        this.warnUnreachable(target, err);
        return sendIngressProblem(req, res, serviceUnavailable(target));
      }
      // On failure pipeline destroys both ends: the client sees an aborted response, not a short one.
      pipeline(upRes, res, (err) => {
        if (err) upstream.destroy();
      });
    });
    if (req.readableEnded) upstream.end();
    else req.pipe(upstream);
  }

  private tunnel(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    host: string,
    target: IngressTarget,
  ): void {
    const headers = [
      ...upstreamRequestHeaders(req, host),
      'Connection',
      'Upgrade',
      'Upgrade',
      req.headers.upgrade ?? '',
    ];
    const upstream = this.open(req, target, headers);
    if (!upstream) return writeSocketProblem(req, socket, notForwardable);
    let answered = false;
    const abandon = (): void => void upstream.destroy();
    socket.once('close', abandon);
    upstream.on('error', (err) => {
      if (answered) return socket.destroy();
      this.warnUnreachable(target, err);
      writeSocketProblem(req, socket, serviceUnavailable(target));
    });
    upstream.on('upgrade', (upRes, upSocket, upHead) => {
      answered = true;
      socket.off('close', abandon);
      upSocket.on('error', () => upSocket.destroy());
      relayClose(upSocket, socket);
      relayClose(socket, upSocket);
      const upgrade = upRes.headers.upgrade ?? '';
      const response = [
        ...downstreamResponseHeaders(upRes.rawHeaders),
        'Connection',
        'Upgrade',
        'Upgrade',
        upgrade,
      ];
      socket.write(responseHead(upRes, response));
      if (upHead.length > 0) socket.write(upHead);
      if (head.length > 0) upSocket.write(head);
      upSocket.pipe(socket);
      socket.pipe(upSocket);
    });
    // The service declined the upgrade (401, 404, 426…): relay its answer, then close.
    upstream.on('response', (upRes) => {
      answered = true;
      socket.write(
        responseHead(upRes, [...downstreamResponseHeaders(upRes.rawHeaders), 'Connection', 'close']),
      );
      pipeline(upRes, socket, (err) => (err ? socket.destroy() : lingerThenDestroy(socket)));
    });
    upstream.end();
  }

  /** The request to the worker, or undefined when node refuses to send what the client sent. */
  private open(
    req: IncomingMessage,
    target: IngressTarget,
    headers: RawHeaders,
    pooled = false,
  ): ClientRequest | undefined {
    let upstream: ClientRequest;
    try {
      upstream = http.request({
        host: target.host,
        port: target.port,
        method: req.method,
        path: originForm(req.url),
        headers,
        agent: pooled ? this.pool : false,
      });
    } catch (err) {
      this.opts.logger?.warn(
        { err, service: target.service, stack: target.stack },
        'ingress request refused',
      );
      return undefined;
    }
    upstream.once('socket', (socket) => {
      if (!socket.connecting) return;
      const timer = setTimeout(
        () => upstream.destroy(new ConnectTimeoutError(this.connectTimeoutMs)),
        this.connectTimeoutMs,
      );
      const clear = (): void => clearTimeout(timer);
      socket.once('connect', clear);
      socket.once('close', clear);
    });
    return upstream;
  }

  private warnUnreachable(target: IngressTarget, err: unknown): void {
    this.opts.logger?.warn(
      {
        service: target.service,
        stack: target.stack,
        target: `${target.host}:${target.port}`,
        error_code: (err as { code?: unknown }).code,
        error: err instanceof Error ? err.message : String(err),
      },
      'published service unreachable',
    );
  }
}

/**
 * Once one side of a tunnel is closed, the other follows. A side that closed after an orderly end
 * had its end relayed by the pipe, so the other gets to flush and close in its own time (bounded
 * by lingerThenDestroy); a side that was reset or destroyed takes the other down at once.
 */
function relayClose(from: Duplex, to: Duplex): void {
  from.once('close', () => {
    if (to.destroyed) return;
    if (!from.readableEnded) return void to.destroy();
    if (to.writableFinished) return lingerThenDestroy(to);
    to.once('finish', () => lingerThenDestroy(to));
  });
}

/** GET, HEAD or OPTIONS without a body: safe to send twice, and nothing to replay. */
function hasNoBody(req: IncomingMessage): boolean {
  const method = req.method ?? '';
  return (
    (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') &&
    req.headers['transfer-encoding'] === undefined &&
    (req.headers['content-length'] === undefined || req.headers['content-length'] === '0')
  );
}

function isWebSocketUpgrade(req: IncomingMessage): boolean {
  const tokens = (req.headers.upgrade ?? '').toLowerCase().split(',');
  return req.method === 'GET' && tokens.some((token) => token.trim() === 'websocket');
}

/** An absolute-form target (`GET http://host/path`) becomes origin-form for the service. */
function originForm(url: string | undefined): string {
  if (!url) return '/';
  if (url.startsWith('/') || url === '*') return url;
  try {
    const parsed = new URL(url);
    return `${parsed.pathname}${parsed.search}`;
  } catch {
    return '/';
  }
}

/** Status line and headers for a socket; names and values come from node's parser, so no CR or LF. */
function responseHead(upRes: IncomingMessage, headers: RawHeaders): string {
  const status = upRes.statusCode ?? 502;
  const reason = upRes.statusMessage || STATUS_CODES[status] || '';
  let head = `HTTP/1.1 ${status} ${reason}\r\n`;
  for (let i = 0; i + 1 < headers.length; i += 2) head += `${headers[i]}: ${headers[i + 1]}\r\n`;
  return `${head}\r\n`;
}
