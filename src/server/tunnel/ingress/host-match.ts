/**
 * Longest Host header worth parsing: a 253-character name, a colon and a port. Anything longer is
 * not a name we could have registered, so it goes to the API (which answers it as it answers any
 * request) instead of being split and compared.
 */
const MAX_HOST_HEADER = 253 + 6;
const MAX_NAME = 253;
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const PORT = /^[0-9]{1,5}$/;
// Checked before lower-casing: toLowerCase maps some non-ASCII letters (the Kelvin sign) to ASCII.
const NAME_CHARS = /^[A-Za-z0-9.-]+$/;

/**
 * The ingress host a request is for: the Host header lower-cased, without its port and trailing
 * dot, when it names `<label>.<base_id>.<baseDomain>` or deeper; otherwise undefined and the
 * request belongs to the API.
 *
 * Every label must be an ASCII DNS label (letters, digits, inner hyphens), so IPv6 literals,
 * userinfo, fragments (`evil.com#.base`), non-ASCII and empty labels never match. A suffix match
 * alone is not enough: the name must end with `.` + baseDomain, so `base.evil.com` and
 * `evilbase.domain` do not match either.
 */
export function matchIngressHost(
  hostHeader: string | undefined,
  baseDomain: string | undefined,
): string | undefined {
  if (!hostHeader || !baseDomain || hostHeader.length > MAX_HOST_HEADER) return undefined;
  const base = normalizeName(baseDomain);
  const host = normalizeName(stripPort(hostHeader));
  if (!base || !host || !host.endsWith(`.${base}`)) return undefined;
  const prefix = host.slice(0, host.length - base.length - 1);
  // Two labels at least: the base subdomain alone (`<base_id>.<domain>`) is not a service.
  return prefix.split('.').length >= 2 ? host : undefined;
}

/** `name:port` → `name`; a bracketed IPv6 literal or more than one colon → '' (no match). */
function stripPort(value: string): string {
  const colon = value.indexOf(':');
  if (colon === -1) return value;
  if (value.indexOf(':', colon + 1) !== -1) return '';
  return PORT.test(value.slice(colon + 1)) ? value.slice(0, colon) : '';
}

/** Lower-case without one trailing dot, or '' when any label is not an ASCII DNS label. */
function normalizeName(value: string): string {
  if (!NAME_CHARS.test(value)) return '';
  const name = value.toLowerCase().replace(/\.$/, '');
  if (name.length > MAX_NAME) return '';
  return name.split('.').every((label) => LABEL.test(label)) ? name : '';
}
