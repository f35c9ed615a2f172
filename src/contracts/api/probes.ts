// The probes (`/health/live`, `/health/ready`, `/health/startup`): terminus's result shape.

/** One indicator's state; indicators add their own fields (`responseTime`, `migrations`, ...). */
export interface ProbeIndicator {
  status: 'up' | 'down';
  [detail: string]: unknown;
}

export interface ProbeResult {
  status: 'ok' | 'error' | 'shutting_down';
  /** The indicators that are up. */
  info?: Record<string, ProbeIndicator>;
  /** The indicators that are down. */
  error?: Record<string, ProbeIndicator>;
  /** Every indicator. */
  details: Record<string, ProbeIndicator>;
}
