import { createSocket } from 'node:dgram';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, isIPv6 } from 'node:net';
import {
  encodeBindingRequest,
  newTransactionId,
  parseBindingResponse,
  type MappedAddress,
} from './stun-message.js';

export interface StunServer {
  host: string;
  port: number;
}

/** Resolves a server's host name; injectable so tests never ask DNS about real names. */
export type StunLookup = (host: string) => Promise<{ address: string; family: number }>;

export interface StunQueryOptions {
  /** The whole query, every server included, is over after this long. */
  deadlineMs: number;
  /** First retransmission interval, doubled after each send (RFC 5389 section 7.2.1). */
  initialRtoMs?: number;
  lookup?: StunLookup;
}

export type StunAttemptOutcome =
  'answered' | 'no-answer' | 'refused' | 'error-response' | 'unresolved' | 'socket-error';

export interface StunAttempt {
  server: string;
  outcome: StunAttemptOutcome;
  /** Binding requests sent, retransmissions included. */
  requests: number;
  detail?: string;
}

export interface StunQueryResult {
  mapped: MappedAddress | null;
  /** `host:port` of the server whose answer was taken. */
  server: string | null;
  attempts: StunAttempt[];
}

export const STUN_DEFAULT_PORT = 3478;

/** A `TUNNEL_STUN_SERVERS` entry that is not `host:port`; the message names the entry. */
export class InvalidStunServerError extends Error {
  constructor(readonly entry: string) {
    super(`STUN server "${entry}" is not host:port (an IPv6 address goes in brackets: [::1]:3478)`);
    this.name = 'InvalidStunServerError';
  }
}

/**
 * Reads a comma-separated `host:port` list. The port defaults to 3478 (STUN's); an IPv6 literal
 * with a port is written in brackets.
 */
export function parseStunServers(text: string): StunServer[] {
  return text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry);
      const plain = /^([A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(entry);
      const [host, port] = bracketed
        ? [bracketed[1], bracketed[2]]
        : isIPv6(entry)
          ? [entry, undefined]
          : plain
            ? [plain[1], plain[2]]
            : [undefined, undefined];
      const number = port === undefined ? STUN_DEFAULT_PORT : Number(port);
      if (host === undefined || (bracketed && !isIPv6(host)) || number < 1 || number > 65535) {
        throw new InvalidStunServerError(entry);
      }
      return { host, port: number };
    });
}

export function serverLabel(server: StunServer): string {
  return isIPv6(server.host) ? `[${server.host}]:${server.port}` : `${server.host}:${server.port}`;
}

/**
 * Asks every server at once for this machine's public address and takes the first answer: asked
 * one after the other, a silent first server would use up the whole deadline. Never rejects; each
 * server's attempt says what happened to it.
 */
export async function queryPublicAddress(
  servers: readonly StunServer[],
  options: StunQueryOptions,
): Promise<StunQueryResult> {
  const attempts: StunAttempt[] = servers.map((s) => ({
    server: serverLabel(s),
    outcome: 'no-answer',
    requests: 0,
  }));
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), Math.max(0, options.deadlineMs));
  let winner: { mapped: MappedAddress; server: string } | null = null;
  try {
    // Every attempt ends promptly once the signal aborts, so waiting for all of them costs
    // nothing and leaves each attempt's record complete.
    await Promise.all(
      servers.map(async (server, i) => {
        const mapped = await askServer(server, attempts[i], controller.signal, options);
        if (mapped && !winner) {
          winner = { mapped, server: attempts[i].server };
          controller.abort();
        }
      }),
    );
  } finally {
    clearTimeout(timer);
  }
  const result = winner as { mapped: MappedAddress; server: string } | null;
  return { mapped: result?.mapped ?? null, server: result?.server ?? null, attempts };
}

async function askServer(
  server: StunServer,
  attempt: StunAttempt,
  signal: AbortSignal,
  options: StunQueryOptions,
): Promise<MappedAddress | null> {
  const target = await resolve(server.host, signal, options.lookup ?? defaultLookup).catch((err: unknown) => {
    attempt.outcome = 'unresolved';
    attempt.detail = err instanceof Error ? err.message : String(err);
    return null;
  });
  if (!target) {
    if (attempt.outcome === 'no-answer') attempt.detail = 'the name was still being resolved at the deadline';
    return null;
  }
  if (signal.aborted) return null;
  return new Promise<MappedAddress | null>((done) => {
    const socket = createSocket(target.family === 6 ? 'udp6' : 'udp4');
    const transactionId = newTransactionId();
    const request = encodeBindingRequest(transactionId);
    let rto = options.initialRtoMs ?? 500;
    let retransmit: NodeJS.Timeout | undefined;
    let finished = false;
    const finish = (mapped: MappedAddress | null) => {
      if (finished) return;
      finished = true;
      clearTimeout(retransmit);
      signal.removeEventListener('abort', onAbort);
      try {
        socket.close();
      } catch {
        // Already closed after an error: nothing left to release.
      }
      done(mapped);
    };
    const onAbort = () => finish(null);
    const fail = (err: NodeJS.ErrnoException) => {
      // A connected UDP socket hears the ICMP "port unreachable" as ECONNREFUSED: no need to wait.
      attempt.outcome = err.code === 'ECONNREFUSED' ? 'refused' : 'socket-error';
      attempt.detail = err.message;
      finish(null);
    };
    const send = () => {
      if (finished) return;
      attempt.requests++;
      socket.send(request, (err) => {
        if (err) fail(err);
      });
      retransmit = setTimeout(send, rto);
      rto *= 2;
    };
    signal.addEventListener('abort', onAbort, { once: true });
    socket.on('error', fail);
    socket.on('message', (packet) => {
      const response = parseBindingResponse(packet, transactionId);
      if (response.kind === 'success') {
        attempt.outcome = 'answered';
        finish(response.mapped);
      } else if (response.kind === 'error') {
        attempt.outcome = 'error-response';
        attempt.detail = `STUN error ${response.code}`;
        finish(null);
      }
      // Anything else is junk or someone else's answer: keep waiting for ours.
    });
    // Connecting makes the kernel drop datagrams from any other address and report refusals.
    try {
      socket.connect(server.port, target.address, (err?: Error) => (err ? fail(err) : send()));
    } catch (err) {
      // A port out of range is refused synchronously: still an attempt that failed, not a throw.
      fail(err as NodeJS.ErrnoException);
    }
  });
}

async function resolve(
  host: string,
  signal: AbortSignal,
  lookup: StunLookup,
): Promise<{ address: string; family: number } | null> {
  if (isIP(host)) return { address: host, family: isIP(host) };
  if (signal.aborted) return null;
  let onAbort: () => void = () => undefined;
  const aborted = new Promise<null>((done) => {
    onAbort = () => done(null);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([lookup(host), aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

const defaultLookup: StunLookup = (host) => dnsLookup(host);
