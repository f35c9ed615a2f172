/** Capped exponential backoff with jitter for the tunnel's reconnect attempts. */
export interface BackoffPolicy {
  /** Delay before the first retry. */
  baseMs: number;
  /** No delay is longer than this. */
  capMs: number;
  /** Each delay is scaled by a random factor in [1 - jitter, 1 + jitter], then capped. */
  jitter: number;
}

/** A relay that went away is usually back in seconds; one that is gone for good costs a try each 15 s. */
export const TUNNEL_BACKOFF: BackoffPolicy = { baseMs: 500, capMs: 15_000, jitter: 0.2 };

/** The delay before retry number `attempt` (1 for the first retry). */
export function backoffDelay(
  attempt: number,
  policy: BackoffPolicy,
  random: () => number = Math.random,
): number {
  const exponent = Math.min(Math.max(attempt, 1) - 1, 30);
  const raw = Math.min(policy.baseMs * 2 ** exponent, policy.capMs);
  const factor = 1 - policy.jitter + 2 * policy.jitter * random();
  return Math.round(Math.min(raw * factor, policy.capMs));
}
