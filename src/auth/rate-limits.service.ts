import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/config.js';
import { FixedWindowCounter } from './rate-limiter.js';

/** The two limits of the auth module: failed client authentication, and requests per client. */
@Injectable()
export class RateLimitsService {
  readonly authFailures: FixedWindowCounter;
  private readonly requests: FixedWindowCounter | undefined;

  constructor(config: AppConfig) {
    this.authFailures = new FixedWindowCounter(config.authFailureLimit, config.authFailureWindowMs);
    this.requests =
      config.rateLimitRequests > 0
        ? new FixedWindowCounter(config.rateLimitRequests, config.rateLimitWindowMs)
        : undefined;
  }

  /** Seconds to wait before authenticating again as `clientId` or from `ip`; 0 when allowed. */
  authBlockedFor(clientId: string | undefined, ip: string | undefined): number {
    return Math.max(
      clientId ? this.authFailures.retryAfter(`client:${clientId.slice(0, 128)}`) : 0,
      ip ? this.authFailures.retryAfter(`ip:${ip}`) : 0,
    );
  }

  recordAuthFailure(clientId: string | undefined, ip: string | undefined): void {
    if (clientId) this.authFailures.hit(`client:${clientId.slice(0, 128)}`);
    if (ip) this.authFailures.hit(`ip:${ip}`);
  }

  /** Counts a request of `clientId`; seconds to wait when over the limit, else 0. */
  takeRequest(clientId: string): number {
    return this.requests?.hit(clientId) ?? 0;
  }
}
