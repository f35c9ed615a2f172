import type { EnvironmentKind } from './environment.js';
import type { StunAttempt } from './stun-client.js';

export type ConnectionMode = 'direct' | 'tunnel';

export interface RecommendationInput {
  environment: EnvironmentKind;
  publicIp: string | null;
  hasNat: boolean;
  /** What each configured STUN server did; empty when none is configured. */
  attempts: readonly StunAttempt[];
  deadlineMs: number;
}

export interface Recommendation {
  recommended_mode: ConnectionMode;
  reason: string;
}

const TUNNEL_WORKS = 'Use the tunnel: it works whether or not this machine can be reached from outside.';

/**
 * Direct only when a STUN server sees one of this machine's own addresses; whenever the address
 * is unknown or translated, the tunnel, because it is the mode that works in every case.
 */
export function recommend(input: RecommendationInput): Recommendation {
  const seconds = formatSeconds(input.deadlineMs);
  if (input.publicIp === null) {
    const why =
      input.attempts.length === 0
        ? 'No STUN server is configured (TUNNEL_STUN_SERVERS), so the public address could not be checked.'
        : input.attempts.every((a) => a.outcome === 'no-answer')
          ? `No STUN server answered within ${seconds} (asked ${input.attempts.map((a) => a.server).join(', ')}), ` +
            'so the public address is unknown.'
          : `No STUN server gave the public address within ${seconds} ` +
            `(${input.attempts.map((a) => `${a.server} ${describeAttempt(a, seconds)}`).join('; ')}).`;
    return { recommended_mode: 'tunnel', reason: `${why} ${TUNNEL_WORKS}` };
  }
  if (!input.hasNat) {
    const shared =
      input.environment === 'container'
        ? " This runs in a container that uses the host's network."
        : input.environment === 'kubernetes'
          ? " This runs in a Kubernetes pod that uses the host's network."
          : '';
    return {
      recommended_mode: 'direct',
      reason:
        `A STUN server sees this machine as ${input.publicIp}, which is one of its own addresses: there is ` +
        `no NAT in between, so agents can connect to it directly if the firewall lets them in.${shared}`,
    };
  }
  return {
    recommended_mode: 'tunnel',
    reason:
      `A STUN server sees this machine as ${input.publicIp}, which is not one of its own addresses: it is ` +
      'behind NAT, so agents outside its network cannot connect to it unless ports are forwarded to it. ' +
      `Use the tunnel.${natNuance(input.environment)}`,
  };
}

function natNuance(environment: EnvironmentKind): string {
  switch (environment) {
    case 'container':
      return (
        " In a container the translation may be only the container network's: if the host itself has " +
        'that public address, publishing the ports on the host works too.'
      );
    case 'kubernetes':
      return ' In Kubernetes, a Service of type LoadBalancer or NodePort is the alternative to the tunnel.';
    case 'vm':
    case 'bare-metal':
      return '';
  }
}

function describeAttempt(attempt: StunAttempt, seconds: string): string {
  switch (attempt.outcome) {
    case 'no-answer':
      return `did not answer within ${seconds}`;
    case 'refused':
      return 'refused the request (nothing listens on that port)';
    case 'error-response':
      return `answered with an error (${attempt.detail ?? 'no code'})`;
    case 'unresolved':
      return 'could not be resolved';
    case 'socket-error':
      return 'could not be reached';
    case 'answered':
      return 'answered';
  }
}

function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}
