import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/config.js';
import { addressKey } from './address-key.js';
import { FixedWindowCounter } from '../common/rate-limiter.js';

/** The two limits of the auth module: failed authentication, and requests per client. */
@Injectable()
export class RateLimitsService {
  /** Failures of one client id from one network: what a guesser of that client's secret runs into. */
  private readonly clientFailures: FixedWindowCounter;
  /** Failures from one network whatever the id: spraying ids, refresh tokens or join tokens. */
  private readonly addressFailures: FixedWindowCounter;
  private readonly requests: FixedWindowCounter | undefined;

  constructor(config: AppConfig) {
    this.clientFailures = new FixedWindowCounter(config.authFailureLimit, config.authFailureWindowMs);
    this.addressFailures = new FixedWindowCounter(config.authFailureAddressLimit, config.authFailureWindowMs);
    this.requests =
      config.rateLimitRequests > 0
        ? new FixedWindowCounter(config.rateLimitRequests, config.rateLimitWindowMs)
        : undefined;
  }

  /**
   * Seconds to wait before authenticating again as `clientId` from `ip`; 0 when allowed. Failures
   * never count against a client id alone, so nobody can lock a client out for callers elsewhere.
   */
  authBlockedFor(clientId: string | undefined, ip: string | undefined): number {
    if (!ip) return 0;
    const network = addressKey(ip);
    return Math.max(
      clientId ? this.clientFailures.retryAfter(pairKey(clientId, network)) : 0,
      this.addressFailures.retryAfter(network),
    );
  }

  recordAuthFailure(clientId: string | undefined, ip: string | undefined): void {
    if (!ip) return;
    const network = addressKey(ip);
    if (clientId) this.clientFailures.hit(pairKey(clientId, network));
    this.addressFailures.hit(network);
  }

  /** Counts a request of `clientId`; seconds to wait when over the limit, else 0. */
  takeRequest(clientId: string): number {
    return this.requests?.hit(clientId) ?? 0;
  }
}

const pairKey = (clientId: string, network: string): string => `${clientId.slice(0, 128)}\n${network}`;
