/** One line of the validate-url answer. */
export interface UrlCheck {
  name: string;
  ok: boolean;
  detail: string;
}

export const MAX_URL_LENGTH = 2048;

/** The checks of the URL text, in answer order. */
export const URL_RULE_NAMES = [
  'present',
  'length',
  'syntax',
  'scheme',
  'credentials',
  'host',
  'port',
  'query',
  'fragment',
] as const;

export interface UrlRulesResult {
  /** The parsed, normalized URL when every rule passed; null otherwise. */
  url: URL | null;
  /** The normalized URL text whenever the input parsed, even if a later rule failed. */
  href: string | null;
  checks: UrlCheck[];
}

type Rule = (url: URL) => { ok: boolean; detail: string };

// C0 controls, space, DEL and C1 controls: the URL parser silently strips or drops some of them,
// so a URL containing any would be checked in a form other than the one the user typed.
// eslint-disable-next-line no-control-regex
const CONTROL_OR_SPACE = /[\u0000-\u0020\u007f-\u009f]/;

const RULES: Record<'scheme' | 'credentials' | 'host' | 'port', Rule> = {
  scheme: (url) =>
    url.protocol === 'http:' || url.protocol === 'https:'
      ? { ok: true, detail: url.protocol.slice(0, -1) }
      : { ok: false, detail: `scheme ${clip(url.protocol, 40)} is not allowed: http or https only` },
  credentials: (url) =>
    url.username === '' && url.password === ''
      ? { ok: true, detail: 'no user name or password' }
      : { ok: false, detail: 'the URL carries a user name or password: credentials are not allowed' },
  host: (url) => {
    const host = hostOf(url);
    if (host === '') return { ok: false, detail: 'the URL has no host' };
    // DNS names are at most 253 characters, 254 with the root's trailing dot.
    if (host.length > 254)
      return { ok: false, detail: `the host name is ${host.length} characters, over 253` };
    return { ok: true, detail: clip(host, 80) };
  },
  port: (url) => {
    if (url.port === '') return { ok: true, detail: `default port ${url.protocol === 'https:' ? 443 : 80}` };
    return url.port === '0'
      ? { ok: false, detail: 'port 0 is not a usable port' }
      : { ok: true, detail: `port ${url.port}` };
  },
};

/**
 * Checks the text a user gave as the tunnel's public URL. Never throws: every problem becomes a
 * failed check, and checks that need an earlier one say they were skipped.
 */
export function checkUrlRules(input: unknown): UrlRulesResult {
  const checks: UrlCheck[] = [];
  const done = (url: URL | null, href: string | null): UrlRulesResult => {
    fillSkipped(checks, URL_RULE_NAMES);
    return { url: checks.every((c) => c.ok) ? url : null, href, checks };
  };

  if (typeof input !== 'string') {
    const what =
      input === undefined || input === null
        ? 'no URL was given'
        : `the URL must be a string, not ${kind(input)}`;
    checks.push({ name: 'present', ok: false, detail: what });
    return done(null, null);
  }
  if (input === '') {
    checks.push({ name: 'present', ok: false, detail: 'the URL is empty' });
    return done(null, null);
  }
  checks.push({ name: 'present', ok: true, detail: 'a URL was given' });

  if (input.length > MAX_URL_LENGTH) {
    checks.push({ name: 'length', ok: false, detail: `${input.length} characters, over ${MAX_URL_LENGTH}` });
    return done(null, null);
  }
  checks.push({ name: 'length', ok: true, detail: `${input.length} characters (at most ${MAX_URL_LENGTH})` });

  if (CONTROL_OR_SPACE.test(input)) {
    checks.push({ name: 'syntax', ok: false, detail: 'the URL contains whitespace or control characters' });
    return done(null, null);
  }
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    checks.push({
      name: 'syntax',
      ok: false,
      detail: 'not an absolute URL (like https://host.example.com/)',
    });
    return done(null, null);
  }
  checks.push({ name: 'syntax', ok: true, detail: `parsed as ${clip(url.href, 200)}` });

  for (const name of ['scheme', 'credentials', 'host', 'port'] as const)
    checks.push({ name, ...RULES[name](url) });
  // The serialized form keeps an empty "?" or "#", which url.search and url.hash hide.
  const [beforeHash] = url.href.split('#');
  checks.push(
    beforeHash.includes('?')
      ? {
          name: 'query',
          ok: false,
          detail: 'a query string is not allowed: the URL is a base other URLs are built on',
        }
      : { name: 'query', ok: true, detail: 'no query string' },
    url.href.includes('#')
      ? {
          name: 'fragment',
          ok: false,
          detail: 'a fragment (#...) is not allowed: it is never sent to the server',
        }
      : { name: 'fragment', ok: true, detail: 'no fragment' },
  );
  return done(url, url.href);
}

/**
 * Why a URL met on the way (a redirect's target) may not be requested, or null when it may.
 * Query strings and fragments are normal there; scheme, credentials, host and port rules hold.
 */
export function hopRefusal(url: URL): string | null {
  if (url.href.length > MAX_URL_LENGTH) return `the URL is over ${MAX_URL_LENGTH} characters`;
  for (const name of ['scheme', 'credentials', 'host', 'port'] as const) {
    const result = RULES[name](url);
    if (!result.ok) return result.detail;
  }
  return null;
}

/** Appends the checks of `names` not run yet, failed, naming the first check that failed. */
export function fillSkipped(checks: UrlCheck[], names: readonly string[]): void {
  const cause = checks.find((c) => !c.ok)?.name ?? 'previous';
  for (const name of names.slice(checks.length)) {
    checks.push({ name, ok: false, detail: `skipped: the ${cause} check failed` });
  }
}

/** The host to resolve or connect to: an IPv6 literal without its brackets. */
export function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/** Shortens text echoed back (possibly from a remote server) and makes control characters visible. */
export function clip(text: string, max: number): string {
  const safe = text.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return safe.length > max ? `${safe.slice(0, max)}...` : safe;
}

function kind(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
