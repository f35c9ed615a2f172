import type { SecureContextOptions } from 'node:tls';
import type { SecretBox } from '../common/secret-box.js';

/**
 * TLS 1.3 session tickets for the agent port, so that agents reconnecting after a restart (or to
 * another replica) resume their session instead of a full handshake with certificate verification.
 *
 * The ticket key (48 bytes: name, HMAC and AES keys) is derived from the master key for the current
 * period, so every replica and every restart of the service issues and accepts the same tickets,
 * and it changes every period. Node holds one key at a time: a ticket from the previous period is
 * refused, and its agent makes a full handshake, as it would without tickets.
 */
export const TICKET_PERIOD_MS = 7 * 86_400_000;
/** The session lifetime tickets carry: the period, which is also TLS 1.3's limit (7 days). */
const TICKET_LIFETIME_S = TICKET_PERIOD_MS / 1000;
/**
 * OpenSSL resumes a session only in the same session-id context; Node's default hashes the command
 * line, which differs between replicas started differently. One fixed value for the agent port.
 */
const SESSION_ID_CONTEXT = 'stack-orchestrator/agent-gateway';

/** The ticket period `at` falls in, and when the next one starts. */
export function ticketPeriod(at: number): { period: number; endsAt: number } {
  const period = Math.floor(at / TICKET_PERIOD_MS);
  return { period, endsAt: (period + 1) * TICKET_PERIOD_MS };
}

/** The tls options that make the agent port issue and accept the shared tickets of `at`'s period. */
export function ticketOptions(
  box: SecretBox,
  at: number,
): SecureContextOptions & {
  ticketKeys: Buffer;
  sessionIdContext: string;
  sessionTimeout: number;
} {
  const { period } = ticketPeriod(at);
  return {
    ticketKeys: box.derive(`agent-gateway/tls-ticket-keys/${period}`, 48),
    sessionIdContext: SESSION_ID_CONTEXT,
    sessionTimeout: TICKET_LIFETIME_S,
  };
}
