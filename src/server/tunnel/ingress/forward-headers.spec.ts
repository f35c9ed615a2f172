import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import {
  clientAddress,
  downstreamResponseHeaders,
  forwardedProto,
  hopByHopNames,
  upstreamRequestHeaders,
} from './forward-headers.js';

/** The fields of a request these functions read, as node's parser fills them. */
function request(
  rawHeaders: string[],
  socket: { remoteAddress?: string; encrypted?: boolean } = {},
): IncomingMessage {
  const headers: Record<string, string> = {};
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i].toLowerCase();
    if (name === 'host' && headers.host !== undefined) continue;
    headers[name] =
      headers[name] === undefined ? rawHeaders[i + 1] : `${headers[name]}, ${rawHeaders[i + 1]}`;
  }
  return {
    rawHeaders,
    headers,
    socket: { remoteAddress: '127.0.0.1', ...socket },
  } as unknown as IncomingMessage;
}

describe('forward headers', () => {
  it('takes hop-by-hop names from every Connection header, case-insensitively', () => {
    const names = hopByHopNames(['Connection', 'close, X-One', 'connection', ' x-two ,', 'X-Three', '3']);
    expect([...names]).toEqual(
      expect.arrayContaining(['connection', 'keep-alive', 'close', 'x-one', 'x-two']),
    );
    expect(names.has('x-three')).toBe(false);
    expect(names.has('')).toBe(false);
  });

  it.each([
    ['https from the relay', ['X-Forwarded-Proto', 'https'], {}, 'https'],
    ['the first of a list', ['X-Forwarded-Proto', 'HTTPS, http'], {}, 'https'],
    ['http from the relay', ['X-Forwarded-Proto', 'http'], {}, 'http'],
    ['an unknown scheme', ['X-Forwarded-Proto', 'gopher'], {}, 'http'],
    ['no header', [], {}, 'http'],
    ['TLS terminated here', ['X-Forwarded-Proto', 'http'], { encrypted: true }, 'https'],
  ])('says %s', (_what, raw, socket, expected) => {
    expect(forwardedProto(request(raw, socket))).toBe(expected);
  });

  it('writes an IPv4-mapped client address as IPv4 and keeps IPv6 as it is', () => {
    expect(clientAddress(request([], { remoteAddress: '::ffff:192.0.2.1' }))).toBe('192.0.2.1');
    expect(clientAddress(request([], { remoteAddress: '::1' }))).toBe('::1');
    expect(clientAddress(request([], { remoteAddress: '::ffff:0:1' }))).toBe('::ffff:0:1');
  });

  it('sends one Host, re-frames a body of unknown length as chunked and rebuilds the X-Forwarded trio', () => {
    const raw = [
      ['Host', 'web.b1.tunnel.test'],
      ['Host', 'other.example'],
      ['Transfer-Encoding', 'chunked'],
      ['X-Forwarded-Host', 'spoofed.example'],
      ['Expect', '100-continue'],
      ['X-Custom', 'a'],
      ['X-Custom', 'b'],
    ];
    const req = request(raw.flat(), { remoteAddress: undefined });
    expect(upstreamRequestHeaders(req, 'web.b1.tunnel.test')).toEqual(
      [
        ['Host', 'web.b1.tunnel.test'],
        ['X-Custom', 'a'],
        ['X-Custom', 'b'],
        ['Transfer-Encoding', 'chunked'],
        ['X-Forwarded-Proto', 'http'],
        ['X-Forwarded-Host', 'web.b1.tunnel.test'],
      ].flat(),
    );
  });

  it('uses the matched host when the request had no Host header', () => {
    const headers = upstreamRequestHeaders(request([]), 'web.b1.tunnel.test');
    expect(headers.slice(0, 2)).toEqual(['Host', 'web.b1.tunnel.test']);
    expect(headers).toContain('127.0.0.1');
  });

  it('keeps repeated end-to-end response headers in order', () => {
    const raw = [
      'Set-Cookie',
      'a=1',
      'Connection',
      'X-Hop',
      'X-Hop',
      '1',
      'Set-Cookie',
      'b=2',
      'Keep-Alive',
      't=1',
    ];
    expect(downstreamResponseHeaders(raw)).toEqual(['Set-Cookie', 'a=1', 'Set-Cookie', 'b=2']);
  });
});
