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
 * that it stays with the one in use until told to move on, then takes, at random, one not tried
 * since a stream was last up: never straight back to the one that just failed, and the agents of a
 * replica that died spread over the survivors instead of all landing on the next one in some order.
 * Once every server was tried, any other than the current one is worth a try again.
 */
export class Rotation<T> {
  private current: string | undefined;
  private moving = false;
  private readonly tried = new Set<string>();

  constructor(
    private readonly keyOf: (item: T) => string,
    private readonly random: () => number = Math.random,
  ) {}

  pick(items: readonly T[]): T {
    if (items.length === 0) throw new Error('no server to pick');
    const sorted = [...items].sort((a, b) => compare(this.keyOf(a), this.keyOf(b)));
    const current = this.current;
    const same =
      current === undefined || this.moving ? undefined : sorted.find((i) => this.keyOf(i) === current);
    let chosen = same;
    if (chosen === undefined) {
      let fresh = sorted.filter((item) => !this.tried.has(this.keyOf(item)));
      if (fresh.length === 0) {
        this.tried.clear();
        fresh = sorted.filter((item) => this.keyOf(item) !== current);
      }
      if (fresh.length === 0) fresh = sorted;
      chosen = fresh[Math.min(fresh.length - 1, Math.floor(this.random() * fresh.length))];
    }
    this.current = this.keyOf(chosen);
    this.tried.add(this.current);
    this.moving = false;
    return chosen;
  }

  /** The next pick takes another server. */
  advance(): void {
    this.moving = true;
  }

  /** A stream to the current server was up: every other server is worth a try again. */
  settled(): void {
    this.tried.clear();
    if (this.current !== undefined) this.tried.add(this.current);
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
