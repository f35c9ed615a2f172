import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

/** A `host:port` the agent dials for its stream, as the operator or the service wrote it. */
export interface Endpoint {
  /** A DNS name or an IP address, without brackets. */
  host: string;
  port: number;
}

/**
 * One address to dial in a round: an IP (or the name itself when it did not resolve), and the name
 * the server's certificate must carry, which is the name that was given, never the IP it resolved to.
 */
export interface Candidate {
  address: string;
  port: number;
  name: string;
}

/** Every address a DNS name resolves to, IPv4 and IPv6, in the resolver's order. */
export type Lookup = (host: string) => Promise<string[]>;

export const systemLookup: Lookup = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** The entries of repeated and comma-separated values, blanks dropped. */
export function listEntries(values: readonly string[]): string[] {
  return values
    .flatMap((value) => value.split(','))
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}

const HOST_PORT = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9_.-]+)):(\d{1,5})$/;

/** `host:port` (an IPv6 address in brackets); undefined for anything else. */
export function parseEndpoint(entry: string): Endpoint | undefined {
  const m = HOST_PORT.exec(entry.trim());
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return undefined;
  if (m[1] !== undefined && isIP(m[1]) !== 6) return undefined;
  return { host: m[1] ?? m[2], port };
}

/** `--agent-endpoint` values: at least one `host:port` entry; an Error that names the bad one. */
export function parseEndpointList(values: readonly string[], flag = '--agent-endpoint'): Endpoint[] {
  const entries = listEntries(values);
  if (entries.length === 0) throw new Error(`${flag} wants host:port entries`);
  return entries.map((entry) => {
    const endpoint = parseEndpoint(entry);
    if (!endpoint)
      throw new Error(
        `${flag} wants host:port entries (an IPv6 address in brackets, port 1-65535), got ${JSON.stringify(entry)}`,
      );
    return endpoint;
  });
}

/** `--server` values: at least one http:// or https:// URL of the service, without credentials. */
export function parseServerList(values: readonly string[]): string[] {
  const entries = listEntries(values);
  if (entries.length === 0) throw new Error('--server is required');
  return entries.map((entry) => {
    const url = URL.canParse(entry) ? new URL(entry) : undefined;
    if (url?.protocol !== 'http:' && url?.protocol !== 'https:')
      throw new Error(
        `--server wants the service's http:// or https:// URL, got ${JSON.stringify(entry)}` +
          ' (the agent port goes in --agent-endpoint host:port)',
      );
    if (url.username || url.password) throw new Error('--server URLs must not carry credentials');
    return entry;
  });
}

/** The endpoints in the identity file: what the service advertised, or an earlier --agent-endpoint. */
export function storedEndpoints(value: string): Endpoint[] {
  return listEntries([value]).flatMap((entry) => {
    const endpoint = parseEndpoint(entry);
    if (endpoint) return [endpoint];
    // Written by a service whose host setting this agent's stricter check would refuse: dial it as is.
    const m = /^\[?(.+?)\]?:(\d{1,5})$/.exec(entry);
    return m ? [{ host: m[1], port: Number(m[2]) }] : [];
  });
}

export function formatEndpoint(e: { host: string; port: number }): string {
  return isIP(e.host) === 6 ? `[${e.host}]:${e.port}` : `${e.host}:${e.port}`;
}

/** The gRPC target for a candidate: its address and port. */
export const candidateTarget = (c: Candidate): string => formatEndpoint({ host: c.address, port: c.port });

/** The endpoint a candidate came from, as given. */
export const candidateEndpoint = (c: Candidate): string => formatEndpoint({ host: c.name, port: c.port });

/**
 * This round's candidates: every address each endpoint's name resolves to (IP endpoints as they
 * are), without duplicates. A name that does not resolve stays a candidate under its own name, so
 * the connection attempt reports the failure; `unresolved` tells which.
 */
export async function resolveCandidates(
  endpoints: readonly Endpoint[],
  resolve: Lookup = systemLookup,
): Promise<{ candidates: Candidate[]; unresolved: { endpoint: string; error: string }[] }> {
  const unresolved: { endpoint: string; error: string }[] = [];
  const lists = await Promise.all(
    endpoints.map(async ({ host, port }): Promise<Candidate[]> => {
      if (isIP(host)) return [{ address: host, port, name: host }];
      try {
        const addresses = await resolve(host);
        if (addresses.length > 0) return addresses.map((address) => ({ address, port, name: host }));
        unresolved.push({ endpoint: formatEndpoint({ host, port }), error: 'no addresses' });
      } catch (err) {
        unresolved.push({
          endpoint: formatEndpoint({ host, port }),
          error: (err as NodeJS.ErrnoException).code ?? (err as Error).message,
        });
      }
      return [{ address: host, port, name: host }];
    }),
  );
  const seen = new Set<string>();
  const candidates = lists.flat().filter((c) => {
    const key = candidateTarget(c);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return { candidates, unresolved };
}

/**
 * Which of several servers to use. The first pick is random, so a fleet spreads over them; after
 * that it stays with the one in use until told to move on, then takes the next in a fixed order
 * (by key, so a resolver that shuffles its answers cannot send it back to the one that failed). A
 * server that left the list is followed by the one after its place.
 */
export class Rotation<T> {
  private current: string | undefined;
  private moving = false;

  constructor(
    private readonly keyOf: (item: T) => string,
    private readonly random: () => number = Math.random,
  ) {}

  pick(items: readonly T[]): T {
    if (items.length === 0) throw new Error('no server to pick');
    const sorted = [...items].sort((a, b) => compare(this.keyOf(a), this.keyOf(b)));
    const current = this.current;
    let chosen: T;
    if (current === undefined) {
      chosen = sorted[Math.min(sorted.length - 1, Math.floor(this.random() * sorted.length))];
    } else {
      const same = this.moving ? undefined : sorted.find((item) => this.keyOf(item) === current);
      chosen = same ?? sorted.find((item) => compare(this.keyOf(item), current) > 0) ?? sorted[0];
    }
    this.current = this.keyOf(chosen);
    this.moving = false;
    return chosen;
  }

  /** The next pick takes the server after the one in use. */
  advance(): void {
    this.moving = true;
  }
}

/**
 * Exponential backoff with full jitter (a delay anywhere between 0 and the ceiling, so a fleet does
 * not reconnect in step). The ceiling doubles once every server has failed since the last success,
 * not at each failure: one dead replica among several costs a short wait, not a growing one.
 */
export class Backoff {
  private ceiling: number;
  private failures = 0;

  constructor(
    private readonly min: number,
    private readonly max: number,
    private readonly random: () => number = Math.random,
  ) {
    this.ceiling = min;
  }

  /** One attempt at one of `servers` failed: the delay before the next. */
  failed(servers: number): number {
    const delay = Math.round(this.random() * this.ceiling);
    if (++this.failures >= Math.max(1, servers)) {
      this.failures = 0;
      this.ceiling = Math.min(this.max, this.ceiling * 2);
    }
    return delay;
  }

  reset(): void {
    this.ceiling = this.min;
    this.failures = 0;
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
