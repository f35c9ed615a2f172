/** Parsers of environment values: each returns the typed value or throws a message for ConfigError. */
import { parseDuration } from '../common/duration.js';

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface VariableSpec<T> {
  /** Default used when the variable is unset or empty. `undefined` means "unset is allowed". */
  default?: string;
  sensitive?: boolean;
  /**
   * For a sensitive value that is useful to see in part (a URL's host and database): what views
   * show instead of "[REDACTED]", with every secret part replaced.
   */
  redact?: (value: string) => string;
  description: string;
  parse: (value: string) => T;
}

export const REDACTED = '[REDACTED]';

/** Query parameters of a connection URL that carry secrets (libpq and node-postgres names). */
const SECRET_URL_PARAMS = /pass|secret|token|key$/i;

/**
 * A URL with its password and any secret-looking query parameter replaced by "[REDACTED]"; text
 * that does not parse as a URL is redacted whole.
 */
export function redactUrl(value: string): string {
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    return REDACTED;
  }
  if (parsed.password !== '') parsed.password = REDACTED;
  for (const name of [...parsed.searchParams.keys()])
    if (SECRET_URL_PARAMS.test(name)) parsed.searchParams.set(name, REDACTED);
  // URL percent-encodes the brackets: views show the marker as it is written everywhere else.
  return parsed.toString().replaceAll(encodeURIComponent(REDACTED), REDACTED);
}

export const port = (value: string): number => {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 0 || n > 65535) throw new Error('must be a port number (0-65535)');
  return n;
};

export const positiveInt =
  (min: number, max: number) =>
  (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < min || n > max)
      throw new Error(`must be an integer from ${min} to ${max}`);
    return n;
  };

export const duration =
  (minMs: number, maxMs: number) =>
  (value: string): number => {
    const ms = parseDuration(value);
    if (ms === undefined) throw new Error('must be a duration such as 500ms, 10s, 5m or 1h');
    if (ms < minMs || ms > maxMs) throw new Error(`must be between ${minMs} ms and ${maxMs} ms`);
    return ms;
  };

export const url =
  (protocols: string[]) =>
  (value: string): string => {
    let parsed: URL;
    try {
      parsed = new URL(value);
    } catch {
      throw new Error('must be an absolute URL');
    }
    if (!protocols.includes(parsed.protocol)) throw new Error(`must use ${protocols.join(' or ')}`);
    return value;
  };

export const logLevel = (value: string): LogLevel => {
  const v = value.toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(v))
    throw new Error(`must be one of ${LOG_LEVELS.join(', ')}`);
  return v as LogLevel;
};

export const text = (value: string): string => value;

const BYTE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

/** A size in bytes: a bare number, or with a unit (`500MB`, `2GiB`); `0` means no limit. */
export const byteSize = (value: string): number => {
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(value.trim());
  const unit = m ? BYTE_UNITS[m[2].toLowerCase()] : undefined;
  if (!m || unit === undefined) throw new Error('must be a size such as 0 (no limit), 500MB or 2GiB');
  const bytes = Math.round(Number(m[1]) * unit);
  if (!Number.isSafeInteger(bytes)) throw new Error('is too large');
  return bytes;
};

/** A `byteSize` from `min` to `max` bytes; `range` says which in the error. */
export const byteSizeIn =
  (min: number, max: number, range: string) =>
  (value: string): number => {
    const bytes = byteSize(value);
    if (bytes < min || bytes > max) throw new Error(`must be ${range}`);
    return bytes;
  };

export const boolean = (value: string): boolean => {
  const v = value.toLowerCase();
  if (['true', '1', 'yes'].includes(v)) return true;
  if (['false', '0', 'no'].includes(v)) return false;
  throw new Error('must be true or false');
};

export const oneOf =
  <T extends string>(...values: T[]) =>
  (value: string): T => {
    if (!(values as string[]).includes(value)) throw new Error(`must be one of ${values.join(', ')}`);
    return value as T;
  };

export interface HostPort {
  host: string;
  port: number;
}

/** `host:port[,host:port...]` (IPv6 in brackets), or `none` for an empty list. */
export const hostPortList = (value: string): HostPort[] => {
  if (value.toLowerCase() === 'none') return [];
  return value.split(',').map((item) => {
    const m = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(item.trim());
    const portNumber = Number(m?.[3]);
    if (!m || portNumber < 1 || portNumber > 65535)
      throw new Error(
        `must be host:port entries separated by commas, or none (bad entry ${JSON.stringify(item)})`,
      );
    return { host: m[1] ?? m[2], port: portNumber };
  });
};

/** An SSH host key fingerprint as `ssh-keygen -lf` prints it. */
export const sshFingerprint = (value: string): string => {
  if (!/^SHA256:[A-Za-z0-9+/]{43}$/.test(value))
    throw new Error(
      'must be a SHA256 fingerprint as ssh-keygen -lf prints it (SHA256: and 43 base64 characters)',
    );
  return value;
};

/** A DNS name of at least two labels, lower-cased, without a trailing dot. */
export const domainName = (value: string): string => {
  const v = value.toLowerCase().replace(/\.$/, '');
  const label = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
  if (v.length > 200 || v.split('.').length < 2 || !v.split('.').every((l) => label.test(l)))
    throw new Error('must be a DNS name such as tunnel.example.com');
  return v;
};
