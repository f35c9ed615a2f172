import { formatDuration } from '../common/duration.js';
import type { ServiceStateMsg } from '../../contracts/agent-protocol/index.js';
import type { ServiceHealthStatus, ServiceHealthView, StackHealthView } from '../../contracts/api/stacks.js';

export interface WorkerReport {
  at: Date;
  /** Stacks the agent holds a desired state for. */
  stackIds: Set<string>;
  services: ServiceStateMsg[];
  /** Per stack, the last job the agent had finished when it looked. */
  lastJobs: Record<string, string>;
}

/**
 * One service as the document's health shape, from its agent's latest report. Running with a
 * passing check (or no check) is healthy; running with a failing check unhealthy; running before
 * the first check starting; a service the agent knows but does not run is stopped, restarting or
 * missing.
 */
export function serviceHealth(
  name: string,
  hasCheck: boolean,
  state: ServiceStateMsg | undefined,
  reportKnowsStack: boolean | null,
  now: Date,
): ServiceHealthView {
  if (!state) {
    return { name, status: reportKnowsStack === null ? 'unknown' : 'missing', uptime: formatDuration(0) };
  }
  const started = state.started_at ? Date.parse(state.started_at) : NaN;
  const uptime =
    state.running && Number.isFinite(started) ? formatDuration(now.getTime() - started) : formatDuration(0);
  let status: ServiceHealthStatus;
  if (!state.running) status = state.status === 'restarting' ? 'restarting' : 'stopped';
  else if (!hasCheck) status = 'healthy';
  else if (!state.health || !state.health.checked_at) status = 'starting';
  else status = state.health.ok ? 'healthy' : 'unhealthy';
  const view: ServiceHealthView = { name, status, uptime };
  if (hasCheck && state.health?.checked_at) {
    view.health_check = {
      url: state.health.url,
      status_code: state.health.status_code,
      latency_ms: state.health.latency_ms,
    };
  }
  return view;
}

/** healthy when every service is; unhealthy when none is; unknown without a report; else degraded. */
export function overallHealth(services: ServiceHealthView[]): StackHealthView['overall'] {
  if (services.length === 0 || services.some((s) => s.status === 'unknown')) return 'unknown';
  const healthy = services.filter((s) => s.status === 'healthy').length;
  if (healthy === services.length) return 'healthy';
  if (healthy === 0) return 'unhealthy';
  return 'degraded';
}

/**
 * A one-shot that did its job: a service with restart `never` that another service waits for with
 * `service_completed_successfully`, reported exited with code 0. It is stopped as it should be:
 * neither drift (missing) nor a degraded stack.
 */
export function completedOneShot(
  service: { name: string; restart: string },
  all: readonly { start_conditions?: Record<string, { condition: string }> }[],
  state: ServiceStateMsg | undefined,
): boolean {
  if (service.restart !== 'never' || !state || state.running || state.status !== 'exited') return false;
  if (state.exit_code !== 0) return false;
  return all.some((s) => s.start_conditions?.[service.name]?.condition === 'service_completed_successfully');
}
