import { SERVICE_NAME } from '../../common/version.js';
import { type AddressPolicy, createAddressPolicy } from './address-policy.js';
import {
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_TIMEOUT_MS,
  type HostLookup,
  type PinnedFetchResult,
  pinnedFetch,
  resolveTarget,
  startDeadline,
} from './pinned-fetch.js';
import { checkUrlRules, clip, fillSkipped, URL_RULE_NAMES, type UrlCheck } from './url-rules.js';

/** Where an instance tells who it is (RFC 8615: at the origin's root, whatever the URL's path). */
export const WELL_KNOWN_PATH = '/.well-known/stack-orchestrator';

/**
 * Every answer lists these checks, in this order. The URL rules and the first two network checks
 * decide `valid`; all of them together decide `reachable`.
 */
export const CHECK_NAMES = [
  ...URL_RULE_NAMES,
  'resolve',
  'address',
  'redirects',
  'response',
  'instance',
] as const;

export interface ValidateTunnelUrlOptions {
  /** TUNNEL_ALLOW_PRIVATE_URLS: private, loopback, link-local... targets allowed (metadata never). */
  allowPrivate: boolean;
  /** This instance's id, as served at WELL_KNOWN_PATH. */
  instanceId: string;
  lookup?: HostLookup;
  /** Replaces the policy allowPrivate would give. */
  policy?: AddressPolicy;
  /** One deadline for the lookup, every connection, redirect and the body. Default 5000. */
  timeoutMs?: number;
  maxBodyBytes?: number;
  maxRedirects?: number;
}

export interface TunnelUrlValidation {
  /** The URL as normalized by the parser; null when the input did not parse. */
  url: string | null;
  valid: boolean;
  reachable: boolean;
  checks: UrlCheck[];
}

/**
 * The core of `POST /api/v1/tunnel/validate-url`: are this URL's rules and target acceptable, and
 * does it answer as this very instance? Never throws: every failure is a check with ok false.
 */
export async function validateTunnelUrl(
  input: unknown,
  options: ValidateTunnelUrlOptions,
): Promise<TunnelUrlValidation> {
  const rules = checkUrlRules(input);
  const checks = [...rules.checks];
  const answer = (valid: boolean): TunnelUrlValidation => {
    fillSkipped(checks, CHECK_NAMES);
    return { url: rules.href, valid, reachable: valid && checks.every((c) => c.ok), checks };
  };
  if (rules.url === null) return answer(false);

  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const deadline = startDeadline(timeoutMs);
  const policy = options.policy ?? createAddressPolicy({ allowPrivate: options.allowPrivate });
  let valid = false;
  try {
    const resolution = await resolveTarget(rules.url, {
      lookup: options.lookup,
      policy,
      signal: deadline.signal,
    });
    checks.push({ name: 'resolve', ...resolution.resolve });
    if (resolution.address) checks.push({ name: 'address', ...resolution.address });
    if (resolution.target === null) return answer(false);
    valid = true;

    const wellKnown = new URL(WELL_KNOWN_PATH, rules.url.origin);
    const fetched = await pinnedFetch(wellKnown, {
      policy,
      lookup: options.lookup,
      target: resolution.target,
      signal: deadline.signal,
      timeoutMs,
      maxBodyBytes: options.maxBodyBytes,
      maxRedirects: options.maxRedirects,
      headers: { 'User-Agent': `${SERVICE_NAME} url-check` },
    });
    checks.push(...networkChecks(fetched, options));
    return answer(true);
  } catch (error) {
    // Not expected: the parts below never throw. The answer still has its shape.
    const name = CHECK_NAMES[checks.length] ?? 'instance';
    checks.push({ name, ok: false, detail: `unexpected error: ${clip(String(error), 200)}` });
    return answer(valid);
  } finally {
    deadline.clear();
  }
}

/** The redirects, response and instance checks of a well-known fetch. */
function networkChecks(fetched: PinnedFetchResult, options: ValidateTunnelUrlOptions): UrlCheck[] {
  const followed = fetched.hops.length - 1;
  const redirects: UrlCheck =
    followed <= 0
      ? { name: 'redirects', ok: true, detail: 'no redirect' }
      : {
          name: 'redirects',
          ok: true,
          detail: clip(`followed ${followed}: ${fetched.hops.map((h) => h.url).join(' -> ')}`, 400),
        };
  if (!fetched.ok) {
    if (fetched.stage === 'redirect') return [{ name: 'redirects', ok: false, detail: fetched.detail }];
    return [redirects, { name: 'response', ok: false, detail: fetched.detail }];
  }
  const at = clip(fetched.hops[fetched.hops.length - 1].url, 200);
  if (fetched.status !== 200) {
    return [
      redirects,
      {
        name: 'response',
        ok: false,
        detail: `${at} answered ${fetched.status}, not 200: not a stack orchestrator`,
      },
    ];
  }
  if (fetched.truncated) {
    const max = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    return [
      redirects,
      { name: 'response', ok: false, detail: `${at} answered more than ${max} bytes: not read further` },
    ];
  }
  const response = {
    name: 'response',
    ok: true,
    detail: `${at} answered 200 (${fetched.body.length} bytes)`,
  };
  return [redirects, response, instanceCheck(fetched.body, options.instanceId)];
}

function instanceCheck(body: Buffer, instanceId: string): UrlCheck {
  let document: unknown;
  try {
    document = JSON.parse(body.toString('utf8'));
  } catch {
    return { name: 'instance', ok: false, detail: 'the answer is not JSON' };
  }
  const record =
    typeof document === 'object' && document !== null ? (document as Record<string, unknown>) : {};
  const id = record.instance_id;
  if (typeof id !== 'string' || id === '') {
    return { name: 'instance', ok: false, detail: 'the answer has no instance_id' };
  }
  if (id !== instanceId) {
    return { name: 'instance', ok: false, detail: `answered as another instance (${clip(id, 64)})` };
  }
  const version = typeof record.version === 'string' ? `, version ${clip(record.version, 40)}` : '';
  return { name: 'instance', ok: true, detail: `answered as this instance${version}` };
}
