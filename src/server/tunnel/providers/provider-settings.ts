/** Checks and wording that both providers' settings use. */

/** `host:port`, with an IPv6 literal in brackets. */
export function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** A duration for a sentence: `0.3 s`, `20 s`. */
export const seconds = (ms: number): string => `${Math.round(ms / 100) / 10} s`;

export const isPort = (value: number | undefined): boolean =>
  value !== undefined && Number.isInteger(value) && value >= 1 && value <= 65535;

/**
 * The problem with TUNNEL_PUBLIC_URL, if any. `purpose` completes "is not set: ..." and says why this
 * provider needs it.
 */
export function publicUrlProblem(value: string | undefined, purpose: string): string | undefined {
  if (value === undefined || value.trim() === '') return `TUNNEL_PUBLIC_URL is not set: ${purpose}.`;
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password) {
    return 'TUNNEL_PUBLIC_URL must be an http or https URL without credentials.';
  }
  return undefined;
}

/** A file system error in words: its code says enough, and never carries the file's content. */
export function fsReason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  switch (code ?? '') {
    case 'ENOENT':
      return 'no such file';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'it is a directory';
    default:
      return code || 'unreadable';
  }
}
