import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { AddressPolicy } from './address-policy.js';
import { clip, hopRefusal, hostOf } from './url-rules.js';

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to every address it has. Injectable so tests never ask real DNS. */
export type HostLookup = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemLookup: HostLookup = (hostname) => dnsLookup(hostname, { all: true });

/** A host name resolved once and vetted: every connection to that host goes to `address`. */
export interface PinnedTarget {
  host: string;
  address: string;
  family: 4 | 6;
}

export interface Resolution {
  /** The name lookup; an IP literal needs none. */
  resolve: { ok: boolean; detail: string };
  /** The address policy over every address; null when the lookup failed. */
  address: { ok: boolean; detail: string } | null;
  /** Set only when both passed. */
  target: PinnedTarget | null;
}

export interface PinnedFetchOptions {
  policy: AddressPolicy;
  lookup?: HostLookup;
  /** Deadline for everything: lookups, connections, redirects, the body. Default 5000. */
  timeoutMs?: number;
  /** An outer deadline (the caller's own, started earlier). */
  signal?: AbortSignal;
  /** The body is read up to this many bytes, then the connection is closed. Default 64 KiB. */
  maxBodyBytes?: number;
  /** Default 3. */
  maxRedirects?: number;
  /** The first URL's host, already resolved and vetted: it is not looked up again. */
  target?: PinnedTarget;
  headers?: Record<string, string>;
}

export interface Hop {
  url: string;
  address: string | null;
  status: number | null;
}

export type PinnedFetchResult =
  | {
      ok: true;
      status: number;
      headers: http.IncomingHttpHeaders;
      body: Buffer;
      /** The body was longer than maxBodyBytes; `body` holds its first maxBodyBytes. */
      truncated: boolean;
      hops: Hop[];
    }
  | {
      ok: false;
      /** resolve/address: the first URL's host; redirect: a later hop; request: connect, TLS, HTTP. */
      stage: 'resolve' | 'address' | 'redirect' | 'request' | 'timeout';
      detail: string;
      hops: Hop[];
    };

export const DEFAULT_TIMEOUT_MS = 5000;
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024;
export const DEFAULT_MAX_REDIRECTS = 3;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** The abort reason of a deadline, so a timeout reads as one in the answer. */
export class DeadlineExceeded extends Error {
  constructor(readonly timeoutMs: number) {
    super(`no complete answer within ${timeoutMs} ms`);
    this.name = 'DeadlineExceeded';
  }
}

/** An abort signal that fires after timeoutMs (or with `outer`); call clear() when done. */
export function startDeadline(
  timeoutMs: number,
  outer?: AbortSignal,
): { signal: AbortSignal; clear: () => void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DeadlineExceeded(timeoutMs)), timeoutMs);
  const signal = outer === undefined ? controller.signal : AbortSignal.any([outer, controller.signal]);
  return { signal, clear: () => clearTimeout(timer) };
}

/**
 * Resolves a URL's host once and applies the policy to every address it has. A name with any
 * refused address is refused as a whole: another client of this URL (an agent, a browser) may be
 * given that address, and a name mixing public and internal addresses is a rebinding set-up.
 */
export async function resolveTarget(
  url: URL,
  options: { lookup?: HostLookup; policy: AddressPolicy; signal: AbortSignal },
): Promise<Resolution> {
  const host = hostOf(url);
  let addresses: string[];
  let resolveDetail: string;
  if (isIP(host) !== 0) {
    addresses = [host];
    resolveDetail = `${host} is an IP address: no lookup`;
  } else {
    const looked = await lookupOnce(host, options.lookup ?? systemLookup, options.signal);
    if (typeof looked === 'string')
      return { resolve: { ok: false, detail: looked }, address: null, target: null };
    addresses = looked;
    resolveDetail = `${clip(host, 80)} resolved to ${clip(addresses.join(', '), 300)}`;
  }
  const decisions = addresses.map((address) => ({ address, decision: options.policy(address) }));
  const refused = decisions.flatMap(({ decision }) => (decision.allowed ? [] : [decision.reason]));
  if (refused.length > 0) {
    return {
      resolve: { ok: true, detail: resolveDetail },
      address: { ok: false, detail: clip(refused.join('; '), 400) },
      target: null,
    };
  }
  const described = decisions.map(({ address, decision }) =>
    decision.categories.length === 0
      ? `${address} (public)`
      : `${address} (${decision.categories.join(', ')})`,
  );
  const address = addresses[0];
  return {
    resolve: { ok: true, detail: resolveDetail },
    address: { ok: true, detail: clip(`allowed: ${described.join(', ')}; connecting to ${address}`, 400) },
    target: { host, address, family: isIP(address) === 6 ? 6 : 4 },
  };
}

/**
 * GET a URL, connecting only to vetted addresses: each host is resolved once per call (or given
 * as `target`), and redirects are followed by hand with the URL rules and the address policy
 * applied again. Never throws.
 */
export async function pinnedFetch(url: URL, options: PinnedFetchOptions): Promise<PinnedFetchResult> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const deadline = startDeadline(timeoutMs, options.signal);
  const hops: Hop[] = [];
  try {
    return await follow(url, options, deadline.signal, hops);
  } catch (error) {
    const detail = deadline.signal.aborted
      ? abortDetail(deadline.signal)
      : `unexpected error: ${describe(error)}`;
    return { ok: false, stage: deadline.signal.aborted ? 'timeout' : 'request', detail, hops };
  } finally {
    deadline.clear();
  }
}

async function follow(
  url: URL,
  options: PinnedFetchOptions,
  signal: AbortSignal,
  hops: Hop[],
): Promise<PinnedFetchResult> {
  const maxRedirects = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  const targets = new Map<string, PinnedTarget>();
  if (options.target) targets.set(options.target.host, options.target);
  const redirectFailure = (detail: string): PinnedFetchResult => ({
    ok: false,
    stage: 'redirect',
    detail,
    hops,
  });
  let current = url;
  for (let redirects = 0; ; redirects++) {
    const hop: Hop = { url: current.href, address: null, status: null };
    hops.push(hop);
    // A refused redirect target is reported as a redirect problem, the first URL's as its own stage.
    const fail = (stage: 'resolve' | 'address', detail: string): PinnedFetchResult =>
      redirects === 0
        ? { ok: false, stage, detail, hops }
        : redirectFailure(`redirect ${redirects} to ${clip(current.href, 200)} refused: ${detail}`);

    let target = targets.get(hostOf(current));
    if (target === undefined) {
      const resolution = await resolveTarget(current, {
        lookup: options.lookup,
        policy: options.policy,
        signal,
      });
      if (signal.aborted) return { ok: false, stage: 'timeout', detail: abortDetail(signal), hops };
      if (!resolution.resolve.ok) return fail('resolve', resolution.resolve.detail);
      if (resolution.target === null) return fail('address', resolution.address?.detail ?? 'refused');
      target = resolution.target;
      targets.set(target.host, target);
    }
    hop.address = target.address;

    const answer = await requestOnce(current, target, options, signal);
    if ('error' in answer) {
      const stage = signal.aborted ? 'timeout' : 'request';
      return { ok: false, stage, detail: signal.aborted ? abortDetail(signal) : answer.error, hops };
    }
    hop.status = answer.status;
    if (answer.location === undefined) return { ok: true, ...answer, hops };

    if (redirects >= maxRedirects) return redirectFailure(`more than ${maxRedirects} redirects`);
    let next: URL;
    try {
      next = new URL(answer.location, current);
    } catch {
      return redirectFailure(`redirect ${redirects + 1} to an unparseable location`);
    }
    const refusal = hopRefusal(next);
    if (refusal !== null) {
      return redirectFailure(`redirect ${redirects + 1} to ${clip(next.href, 200)} refused: ${refusal}`);
    }
    current = next;
  }
}

type Answer =
  | { status: number; headers: http.IncomingHttpHeaders; body: Buffer; truncated: boolean; location?: string }
  | { error: string };

/** One GET to the pinned address. Resolves with an error description instead of rejecting. */
function requestOnce(
  url: URL,
  target: PinnedTarget,
  options: PinnedFetchOptions,
  signal: AbortSignal,
): Promise<Answer> {
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const secure = url.protocol === 'https:';
  // Node's own resolver is bypassed: the socket can only go to the vetted address.
  const pinned: LookupFunction = (_hostname, lookupOptions, callback) => {
    if (lookupOptions.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
  return new Promise<Answer>((resolve) => {
    let settled = false;
    const settle = (answer: Answer) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      resolve(answer);
    };
    const where = `${target.address}:${url.port || (secure ? 443 : 80)}`;
    // No agent: a pooled keep-alive socket is keyed by host name and may lead to another address.
    const req = (secure ? https : http).request({
      protocol: url.protocol,
      hostname: target.host,
      port: url.port || (secure ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      method: 'GET',
      agent: false,
      lookup: pinned,
      headers: { Host: url.host, Accept: 'application/json', ...options.headers },
    });
    const onAbort = () => {
      req.destroy();
      settle({ error: abortDetail(signal) });
    };
    req.on('error', (error) => settle({ error: `request to ${where} failed: ${describe(error)}` }));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      if (REDIRECTS.has(status)) {
        req.destroy();
        if (typeof location !== 'string' || location === '') {
          return settle({ error: `answered ${status} without a Location header` });
        }
        return settle({ status, headers: res.headers, body: Buffer.alloc(0), truncated: false, location });
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (settled) return;
        size += chunk.length;
        chunks.push(chunk);
        if (size > maxBody) {
          req.destroy();
          settle({
            status,
            headers: res.headers,
            body: Buffer.concat(chunks).subarray(0, maxBody),
            truncated: true,
          });
        }
      });
      res.on('end', () =>
        settle({ status, headers: res.headers, body: Buffer.concat(chunks), truncated: false }),
      );
      res.on('error', (error) => settle({ error: `the answer from ${where} broke off: ${describe(error)}` }));
      res.on('close', () =>
        settle({ error: `the connection to ${where} closed before the answer was complete` }),
      );
    });
    req.end();
  });
}

async function lookupOnce(host: string, lookup: HostLookup, signal: AbortSignal): Promise<string[] | string> {
  if (signal.aborted) return `lookup of ${clip(host, 80)}: ${abortDetail(signal)}`;
  let onAbort = () => {};
  const aborted = new Promise<string>((resolve) => {
    onAbort = () => resolve(`lookup of ${clip(host, 80)}: ${abortDetail(signal)}`);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    const answer = await Promise.race([
      Promise.resolve()
        .then(() => lookup(host))
        .then(
          (list) => validLookupAnswer(host, list),
          (error) => `${clip(host, 80)} does not resolve: ${describe(error)}`,
        ),
      aborted,
    ]);
    return answer;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** The addresses of a lookup answer, or why it is unusable: the resolver is not trusted for shape. */
function validLookupAnswer(host: string, list: unknown): string[] | string {
  if (!Array.isArray(list) || list.length === 0) return `${clip(host, 80)} resolved to no address`;
  const addresses = list.map((entry: unknown) =>
    typeof entry === 'object' && entry !== null && 'address' in entry && typeof entry.address === 'string'
      ? entry.address
      : '',
  );
  if (addresses.some((a) => isIP(a) === 0))
    return `${clip(host, 80)} resolved to something that is not an IP address`;
  return [...new Set(addresses)];
}

function abortDetail(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  return reason instanceof DeadlineExceeded ? reason.message : 'cancelled';
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return clip(String(error), 200);
  const code = (error as NodeJS.ErrnoException).code;
  return clip(
    code !== undefined && !error.message.includes(code) ? `${code}: ${error.message}` : error.message,
    200,
  );
}
