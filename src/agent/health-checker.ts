import type { HealthResultMsg } from '../contracts/agent-protocol/index.js';
import type { HealthCheckSpec } from './drivers/driver.js';
import { ServiceLoops, type ServiceLoop } from './service-loops.js';

const MAX_TIMEOUT_MS = 5000;

interface Check extends ServiceLoop<HealthCheckSpec> {
  result: HealthResultMsg | null;
  /** Bumped by reset, so a check in flight across a restart does not write a stale answer. */
  generation: number;
}

/**
 * Runs each service's HTTP health check on 127.0.0.1:<port><path> at its interval and keeps the
 * latest result: status code, latency, and ok for a 2xx or 3xx answer within the timeout.
 */
export class HealthChecker {
  private readonly checks = new ServiceLoops<HealthCheckSpec, Check>({
    create: (stackId, name, spec) => ({ stackId, name, spec, result: null, generation: 0 }),
    run: (check) => this.run(check),
    intervalMs: (spec) => Math.max(200, spec.interval_ms),
    same: (a, b) => a.path === b.path && a.port === b.port && a.interval_ms === b.interval_ms,
  });

  /** Sets the checks of one stack's services (name -> check); others of the stack stop. */
  setStack(stackId: string, specs: Map<string, HealthCheckSpec>): void {
    this.checks.setStack(stackId, specs);
  }

  /** Forgets the results of services that were just (re)started: their old answers say nothing. */
  reset(stackId: string, names: string[]): void {
    for (const name of names) {
      const check = this.checks.get(stackId, name);
      if (check) {
        check.result = null;
        check.generation++;
      }
    }
  }

  removeStack(stackId: string): void {
    this.checks.removeStack(stackId);
  }

  result(stackId: string, name: string): HealthResultMsg | null {
    return this.checks.get(stackId, name)?.result ?? null;
  }

  close(): void {
    this.checks.close();
  }

  private async run(check: Check): Promise<void> {
    const generation = check.generation;
    const url = `http://127.0.0.1:${check.spec.port}${check.spec.path}`;
    const started = performance.now();
    try {
      const res = await fetch(url, {
        redirect: 'manual',
        signal: AbortSignal.timeout(Math.min(MAX_TIMEOUT_MS, Math.max(200, check.spec.interval_ms))),
      });
      await res.body?.cancel();
      if (generation !== check.generation) return;
      check.result = {
        url,
        status_code: res.status,
        latency_ms: Math.round(performance.now() - started),
        ok: res.status >= 200 && res.status < 400,
        error: '',
        checked_at: new Date().toISOString(),
      };
    } catch (err) {
      if (generation !== check.generation) return;
      check.result = {
        url,
        status_code: 0,
        latency_ms: Math.round(performance.now() - started),
        ok: false,
        error: (err as Error).message.slice(0, 200),
        checked_at: new Date().toISOString(),
      };
    }
  }
}
