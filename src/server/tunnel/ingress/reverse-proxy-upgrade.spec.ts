import { createHash, randomBytes } from 'node:crypto';
import http, { type IncomingHttpHeaders } from 'node:http';
import net, { type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  BASE_DOMAIN,
  LoopbackServers,
  SERVICE_HOST,
  deferred,
  target,
  type Received,
} from '../../../../test/support/ingress.js';

const servers = new LoopbackServers();
afterEach(() => servers.close());

const acceptFor = (key: string): string =>
  createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');

/** One unfragmented RFC 6455 text frame under 126 bytes; masked when a client sends it. */
function frame(text: string, mask?: Buffer): Buffer {
  const payload = Buffer.from(text);
  const header = Buffer.from([0x81, (mask ? 0x80 : 0) | payload.length]);
  if (!mask) return Buffer.concat([header, payload]);
  return Buffer.concat([header, mask, payload.map((byte, i) => byte ^ mask[i % 4])]);
}

/** Reads the text of small unfragmented frames out of a byte stream, whatever its chunking. */
class FrameReader {
  private buffer = Buffer.alloc(0);

  push(chunk: Buffer): string[] {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    const texts: string[] = [];
    while (this.buffer.length >= 2) {
      const masked = (this.buffer[1] & 0x80) !== 0;
      const length = this.buffer[1] & 0x7f;
      const start = masked ? 6 : 2;
      if (this.buffer.length < start + length) break;
      const mask = this.buffer.subarray(2, 6);
      const payload = this.buffer
        .subarray(start, start + length)
        .map((b, i) => (masked ? b ^ mask[i % 4] : b));
      texts.push(Buffer.from(payload).toString());
      this.buffer = this.buffer.subarray(start + length);
    }
    return texts;
  }
}

/** Collects frame texts from a socket until `count` arrived. */
function readFrames(socket: Socket, count: number, first: Buffer = Buffer.alloc(0)): Promise<string[]> {
  const reader = new FrameReader();
  const texts = reader.push(first);
  return new Promise((resolve, reject) => {
    if (texts.length >= count) return resolve(texts);
    socket.on('data', (chunk: Buffer) => {
      texts.push(...reader.push(chunk));
      if (texts.length >= count) resolve(texts);
    });
    socket.on('close', () => reject(new Error(`socket closed after ${texts.length} frames`)));
  });
}

interface EchoService {
  port: number;
  handshakes: IncomingHttpHeaders[];
  sockets: Socket[];
}

/** A WebSocket echo service: greets with "hello", answers each text frame with "echo:<text>". */
async function echoService(): Promise<EchoService> {
  const service: EchoService = { port: 0, handshakes: [], sockets: [] };
  const server = http.createServer((_req, res) => {
    res.writeHead(426, { 'Content-Type': 'text/plain' });
    res.end('websocket only');
  });
  server.on('upgrade', (req, socket: Socket, head: Buffer) => {
    service.handshakes.push(req.headers);
    service.sockets.push(socket);
    const key = String(req.headers['sec-websocket-key']);
    const handshake =
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade, x-up-secret\r\n' +
      `Sec-WebSocket-Accept: ${acceptFor(key)}\r\nX-Up-Secret: internal\r\nX-Service: echo\r\n\r\n`;
    // The greeting travels in the same write as the 101, so the proxy gets it as upgrade head bytes.
    socket.write(Buffer.concat([Buffer.from(handshake), frame('hello')]));
    const reader = new FrameReader();
    const echo = (chunk: Buffer): void => {
      for (const text of reader.push(chunk)) socket.write(frame(`echo:${text}`));
    };
    echo(head);
    socket.on('data', echo);
    // As WebSocket servers do: the client's end of the connection ends the session.
    socket.on('end', () => socket.end());
    socket.on('error', () => socket.destroy());
  });
  service.port = await servers.listen(server);
  return service;
}

type Opened =
  | { upgraded: true; headers: IncomingHttpHeaders; socket: Socket; head: Buffer; key: string }
  | ({ upgraded: false } & Received);

function openWebSocket(port: number, headers: Record<string, string> = {}): Promise<Opened> {
  const key = randomBytes(16).toString('base64');
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port,
      agent: false,
      headers: {
        host: SERVICE_HOST,
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-key': key,
        'sec-websocket-version': '13',
        ...headers,
      },
    });
    req.on('upgrade', (res, socket: Socket, head) => {
      servers.track(socket);
      resolve({ upgraded: true, headers: res.headers, socket, head, key });
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          upgraded: false,
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks),
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

const mask = (): Buffer => randomBytes(4);

describe('IngressProxy.upgrade', () => {
  it('relays the 101 and frames both ways between client and service', async () => {
    const service = await echoService();
    const front = await servers.front({ [SERVICE_HOST]: target(service.port) });
    const opened = await openWebSocket(front.port, {
      connection: 'Upgrade, x-secret',
      'x-secret': 'do not forward',
    });
    if (!opened.upgraded) throw new Error(`no upgrade: ${opened.status}`);
    expect(opened.headers['sec-websocket-accept']).toBe(acceptFor(opened.key));
    expect(opened.headers['x-service']).toBe('echo');
    expect(opened.headers).not.toHaveProperty('x-up-secret');
    expect(opened.headers.upgrade).toBe('websocket');
    const frames = readFrames(opened.socket, 3, opened.head);
    opened.socket.write(frame('one', mask()));
    opened.socket.write(frame('two', mask()));
    expect(await frames).toEqual(['hello', 'echo:one', 'echo:two']);
    expect(service.handshakes[0]).toMatchObject({
      host: SERVICE_HOST,
      upgrade: 'websocket',
      'sec-websocket-key': opened.key,
      'x-forwarded-for': '127.0.0.1',
      'x-forwarded-host': SERVICE_HOST,
      'x-forwarded-proto': 'http',
    });
    expect(service.handshakes[0]).not.toHaveProperty('x-secret');
  });

  it('passes on bytes the client sent right behind its handshake', async () => {
    const service = await echoService();
    const front = await servers.front({ [SERVICE_HOST]: target(service.port) });
    const socket = servers.track(net.connect(front.port, '127.0.0.1'));
    const request =
      `GET /ws HTTP/1.1\r\nHost: ${SERVICE_HOST}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
      `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`;
    socket.write(Buffer.concat([Buffer.from(request), frame('early', mask())]));
    const received = await new Promise<Buffer>((resolve) => {
      let bytes = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => {
        bytes = Buffer.concat([bytes, chunk]);
        if (bytes.includes('echo:early')) resolve(bytes);
      });
    });
    const headEnd = received.indexOf('\r\n\r\n') + 4;
    expect(received.subarray(0, headEnd).toString()).toMatch(/^HTTP\/1\.1 101 /);
    expect(new FrameReader().push(received.subarray(headEnd))).toEqual(['hello', 'echo:early']);
  });

  it.each([
    ['the client ends', 'client', 'end'],
    ['the client resets', 'client', 'reset'],
    ['the service ends', 'service', 'end'],
    ['the service resets', 'service', 'reset'],
  ] as const)('closes the other side when %s', async (_what, closer, how) => {
    const service = await echoService();
    const front = await servers.front({ [SERVICE_HOST]: target(service.port) });
    const opened = await openWebSocket(front.port);
    if (!opened.upgraded) throw new Error(`no upgrade: ${opened.status}`);
    const [closing, other] =
      closer === 'client' ? [opened.socket, service.sockets[0]] : [service.sockets[0], opened.socket];
    const otherClosed = deferred();
    other.once('close', () => otherClosed.resolve());
    if (how === 'end') closing.end();
    else closing.resetAndDestroy();
    await otherClosed.promise;
    await Promise.all(front.settled);
  });

  it('closes a client that keeps its half of the connection open after the service left', async () => {
    const service = await echoService();
    const front = await servers.front({ [SERVICE_HOST]: target(service.port) });
    // allowHalfOpen: this client never answers the relayed end with its own.
    const client = servers.track(net.connect({ port: front.port, host: '127.0.0.1', allowHalfOpen: true }));
    client.write(
      `GET / HTTP/1.1\r\nHost: ${SERVICE_HOST}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
        `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
    const greeted = deferred();
    const ended = deferred();
    client.on('data', (chunk: Buffer) => chunk.includes('hello') && greeted.resolve());
    client.once('end', () => ended.resolve());
    await greeted.promise;
    service.sockets[0].end();
    await ended.promise;
    // The front lets go of the connection on its own: the exchange settles when its socket closes.
    await Promise.all(front.settled);
  }, 20_000);

  it('answers 404 problem+json for an unknown subdomain', async () => {
    const front = await servers.front({});
    const opened = await openWebSocket(front.port, { host: `ghost.b1.${BASE_DOMAIN}` });
    if (opened.upgraded) throw new Error('upgraded');
    expect(opened.status).toBe(404);
    expect(opened.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(opened.body.toString())).toMatchObject({ code: 'subdomain_not_found', status: 404 });
  });

  it('answers 502 problem+json when the service is down', async () => {
    const front = await servers.front({ [SERVICE_HOST]: target(await servers.closedPort()) });
    const opened = await openWebSocket(front.port);
    if (opened.upgraded) throw new Error('upgraded');
    expect(opened.status).toBe(502);
    const problem = JSON.parse(opened.body.toString());
    expect(problem).toMatchObject({ code: 'service_unavailable', status: 502 });
    expect(problem.detail).not.toContain('127.0.0.1');
  });

  it("relays the service's refusal of the upgrade", async () => {
    const plain = await servers.upstream((_req, res) => {
      res.writeHead(426, { 'Content-Type': 'text/plain', Connection: 'x-up-secret', 'X-Up-Secret': '1' });
      res.end('websocket only');
    });
    const front = await servers.front({ [SERVICE_HOST]: target(plain) });
    const opened = await openWebSocket(front.port);
    if (opened.upgraded) throw new Error('upgraded');
    expect(opened.status).toBe(426);
    expect(opened.body.toString()).toBe('websocket only');
    expect(opened.headers).not.toHaveProperty('x-up-secret');
  });

  it('refuses upgrades to anything but WebSocket with 400', async () => {
    const service = await echoService();
    const front = await servers.front({ [SERVICE_HOST]: target(service.port) });
    const opened = await openWebSocket(front.port, { upgrade: 'h2c' });
    if (opened.upgraded) throw new Error('upgraded');
    expect(opened.status).toBe(400);
    expect(JSON.parse(opened.body.toString())).toMatchObject({ code: 'bad_request' });
    expect(service.handshakes).toHaveLength(0);
  });
});
