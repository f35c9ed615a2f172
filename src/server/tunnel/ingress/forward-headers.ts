import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';

/** RFC 9110 section 7.6.1, plus Keep-Alive and Proxy-Connection that old clients still send. */
const HOP_BY_HOP = [
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
];

/**
 * Set by this hop and never taken from the client: Host is re-added once (a second Host header
 * would let client and service disagree on the name), `Expect` was already answered by this
 * server's 100 Continue, and the X-Forwarded trio is rebuilt below.
 */
const REPLACED_ON_REQUEST = ['host', 'expect', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host'];

/** A raw header list as node keeps it: name, value, name, value, … */
export type RawHeaders = string[];

/** The hop-by-hop names of a message: the fixed list and every token its Connection headers name. */
export function hopByHopNames(raw: RawHeaders): Set<string> {
  const names = new Set(HOP_BY_HOP);
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i].toLowerCase() !== 'connection') continue;
    for (const token of raw[i + 1].split(',')) {
      const name = token.trim().toLowerCase();
      if (name) names.add(name);
    }
  }
  return names;
}

/** The raw list without the pairs whose lower-cased name is in `drop`; order and case are kept. */
export function withoutHeaders(raw: RawHeaders, drop: ReadonlySet<string>): RawHeaders {
  const kept: RawHeaders = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (!drop.has(raw[i].toLowerCase())) kept.push(raw[i], raw[i + 1]);
  }
  return kept;
}

/** The peer's address, with an IPv4-mapped IPv6 address written as the IPv4 address it is. */
export function clientAddress(req: IncomingMessage): string | undefined {
  const address = req.socket.remoteAddress;
  return address?.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/**
 * `https` when this server terminated TLS itself; otherwise what the previous hop said, if it said
 * `http` or `https`: the tunnel relay (or cloudflared) terminates TLS in front of us and tells us
 * so in this header. Without a usable value the request arrived as plain HTTP.
 */
export function forwardedProto(req: IncomingMessage): 'http' | 'https' {
  if ((req.socket as Partial<TLSSocket>).encrypted) return 'https';
  const sent = req.headers['x-forwarded-proto'];
  const first = (Array.isArray(sent) ? sent[0] : sent)?.split(',')[0].trim().toLowerCase();
  return first === 'https' || first === 'http' ? first : 'http';
}

/**
 * What the service receives: the client's end-to-end headers, the original Host, a body re-framed
 * as chunked when the client sent one without a length, and the X-Forwarded trio (the client's
 * address appended to any X-Forwarded-For already present).
 */
export function upstreamRequestHeaders(req: IncomingMessage, host: string): RawHeaders {
  const drop = hopByHopNames(req.rawHeaders);
  for (const name of REPLACED_ON_REQUEST) drop.add(name);
  const originalHost = req.headers.host ?? host;
  const headers = ['Host', originalHost, ...withoutHeaders(req.rawHeaders, drop)];
  // Node has already decoded the client's chunks; the body length is still unknown, so the next
  // hop needs chunks of its own (without this a GET or DELETE body would go out unframed).
  if (req.headers['transfer-encoding'] !== undefined) headers.push('Transfer-Encoding', 'chunked');
  const forwardedFor = [req.headers['x-forwarded-for'], clientAddress(req)].filter(Boolean).join(', ');
  if (forwardedFor) headers.push('X-Forwarded-For', forwardedFor);
  headers.push('X-Forwarded-Proto', forwardedProto(req), 'X-Forwarded-Host', originalHost);
  return headers;
}

/** What the client receives from the service: everything but the hop-by-hop headers. */
export function downstreamResponseHeaders(raw: RawHeaders): RawHeaders {
  return withoutHeaders(raw, hopByHopNames(raw));
}
