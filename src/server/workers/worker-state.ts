import type { WorkerMetrics } from '../../contracts/api/workers.js';

/** The worker states of the interface document, part 3. */
export const WORKER_STATES = ['healthy', 'degraded', 'unhealthy', 'unreachable', 'pending'] as const;
export type WorkerState = (typeof WORKER_STATES)[number];

/** What heartbeats carry, stored and shown as the worker's `metrics`. */
export type NodeMetrics = WorkerMetrics;

/** What the agent says about itself with each heartbeat. */
export interface AgentReport {
  metrics: NodeMetrics;
  /** The agent's own checks (driver reachable, data dir writable, ...): name → passing. */
  checks: Record<string, boolean>;
  /** Checks whose failure makes the node unhealthy rather than degraded. */
  criticalChecks: string[];
}

export interface Thresholds {
  /** A metric at or above this percentage makes the worker degraded. */
  degradedPercent: number;
  /** A metric at or above this percentage makes the worker unhealthy. */
  unhealthyPercent: number;
}

export type WorkerEvent =
  { type: 'approved' } | { type: 'heartbeat'; report: AgentReport } | { type: 'missed_heartbeats' };

/**
 * The one place worker states change (docs/workers.md draws the graph):
 * - `pending` leaves only by approval, to `unreachable`: no heartbeat has been received yet, and
 *   the document's word for that is unreachable. Heartbeats of a pending worker change nothing.
 * - a heartbeat sets `healthy | degraded | unhealthy` from the agent's checks and the thresholds;
 *   from `unreachable` this is the way back.
 * - missing 3 heartbeat intervals makes any approved worker `unreachable`.
 */
export function nextState(current: WorkerState, event: WorkerEvent, thresholds: Thresholds): WorkerState {
  switch (event.type) {
    case 'approved':
      return current === 'pending' ? 'unreachable' : current;
    case 'heartbeat':
      return current === 'pending' ? 'pending' : assess(event.report, thresholds);
    case 'missed_heartbeats':
      return current === 'pending' ? 'pending' : 'unreachable';
  }
}

/** Health from one report: critical check failed or a metric past the unhealthy line → unhealthy. */
export function assess(report: AgentReport, thresholds: Thresholds): 'healthy' | 'degraded' | 'unhealthy' {
  const failed = Object.entries(report.checks)
    .filter(([, ok]) => !ok)
    .map(([name]) => name);
  const { cpu_percent, memory_percent, disk_percent } = report.metrics;
  const worst = Math.max(memory_percent, disk_percent);
  if (failed.some((name) => report.criticalChecks.includes(name)) || worst >= thresholds.unhealthyPercent) {
    return 'unhealthy';
  }
  if (failed.length > 0 || Math.max(cpu_percent, worst) >= thresholds.degradedPercent) return 'degraded';
  return 'healthy';
}
