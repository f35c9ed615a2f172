import { AppError } from '../../common/app-error.js';

/*
 * One interface for the ways this instance can be made reachable from outside (docs/tunnel-providers.md).
 *
 * A provider makes ONE connection attempt per connect() call and reports how that connection ends.
 * Everything around it belongs to the supervisor, not to providers: the states
 * (stopped|starting|running|reconnecting|stopping|error), when to call connect() again (capped
 * exponential backoff with jitter), the lease that keeps one tunnel across replicas, the status
 * document and the logging of transitions. So a provider never retries, never sleeps between
 * attempts and keeps no state from one connection to the next.
 */

export type TunnelProviderName = 'ssh' | 'cloudflared';

/** How a connection ended: no `error` when close() ended it, otherwise the reason in words. */
export interface TunnelClosed {
  error?: string;
}

export interface TunnelConnection {
  /** Where the HTTP port is reachable from outside; null when the provider cannot tell. */
  readonly publicUrl: string | null;
  /** `host:port` where agents reach the gRPC port through the tunnel; null when it does not carry it. */
  readonly agentEndpoint: string | null;
  /** Settles once, when the link is gone for any reason; never rejects. */
  readonly closed: Promise<TunnelClosed>;
  /** Ends the connection and resolves after its resources are released (idempotent). */
  close(): Promise<void>;
}

export interface TunnelProvider {
  readonly name: TunnelProviderName;
  /** What keeps the settings from working, one sentence per problem naming the variable; [] when fine. */
  checkConfig(): string[];
  /**
   * One attempt: resolves once the tunnel carries traffic. Rejects with TunnelConfigError when
   * checkConfig() has problems, or TunnelConnectError with the reason in words. The signal cancels
   * the attempt only; a connection that was handed out ends with its close().
   */
  connect(signal: AbortSignal): Promise<TunnelConnection>;
}

/** The settings cannot work; start refuses with these problems (409, the request itself was fine). */
export class TunnelConfigError extends AppError {
  constructor(readonly problems: string[]) {
    super(409, 'conflict', 'Tunnel not configured', `The tunnel cannot start: ${problems.join(' ')}`);
    this.name = 'TunnelConfigError';
  }
}

/** One connection attempt failed; the message says why in words and carries no secret. */
export class TunnelConnectError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TunnelConnectError';
  }
}

/** The part of Nest's logger providers use (fields first, like the rest of the code); never sees a secret. */
export interface TunnelLogger {
  log(fields: object, msg: string): void;
  warn(fields: object, msg: string): void;
  debug(fields: object, msg: string): void;
}

export const silentLogger: TunnelLogger = {
  log: () => undefined,
  warn: () => undefined,
  debug: () => undefined,
};

/** The reason a connect() is abandoned when its signal fires. */
export function abortedError(): TunnelConnectError {
  return new TunnelConnectError('the connection attempt was cancelled');
}
