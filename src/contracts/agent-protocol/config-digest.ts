import { createHash } from 'node:crypto';

/**
 * Digests of a service's command and environment, for state reports that leave them out
 * (`EffectiveConfig.trimmed`). The agent digests what it observed, the service what it wants; drift
 * compares the two, so both sides must compute them here.
 */

const sha256 = (text: string): string => `sha256:${createHash('sha256').update(text).digest('hex')}`;

export function commandDigest(command: readonly string[]): string {
  return sha256(JSON.stringify(command));
}

/**
 * The caller puts the `${NAME}` reference in place of a value the desired service takes from one,
 * so a resolved value (often a secret) never enters a digest and is compared only for presence.
 */
export function envDigest(env: Readonly<Record<string, string>>): string {
  const pairs = Object.entries(env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return sha256(JSON.stringify(pairs));
}
