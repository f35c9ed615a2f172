/**
 * How an agent redials, in one place because the service counts on it: after a reconnect storm the
 * unreachable sweep waits long enough for an agent that gave up to come back (docs/workers.md,
 * "Storm grace").
 */

/** The first reconnect delay's ceiling; it doubles up to the next (full jitter: 0 to the ceiling). */
export const AGENT_MIN_BACKOFF_MS = 500;
/** The largest ceiling of a reconnect delay. */
export const AGENT_MAX_BACKOFF_MS = 30_000;
/** A stream the service has not welcomed by then is given up and the next server tried. */
export const AGENT_WELCOME_TIMEOUT_MS = 15_000;
