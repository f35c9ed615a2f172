import type { HealthResultMsg } from '../contracts/agent-protocol/index.js';
import type { HealthCheckSpec } from './drivers/driver.js';

const MAX_TIMEOUT_MS = 5000;

interface Check {
  spec: HealthCheckSpec;
  timer: NodeJS.Timeout;
  result: HealthResultMsg | null;
  running: boolean;
  /** Bumped by reset, so a check in flight across a restart does not write a stale answer. */
  generation: number;
}

/**
 * Runs each service's HTTP health check on 127.0.0.1:<port><path> at its interval and keeps the
 * latest result: status code, latency, and ok for a 2xx or 3xx answer within the timeout.
 */
export class HealthChecker {
  private readonly checks = new Map<string, Check>();

  /** Sets the checks of one stack's services (name -> check); others of the stack stop. */
  setStack(stackId: string, specs: Map<string, HealthCheckSpec>): void {
    for (const [key, check] of this.checks) {
      if (!key.startsWith(`${stackId}/`)) continue;
      const name = key.slice(stackId.length + 1);
      const spec = specs.get(name);
      if (!spec || !sameSpec(spec, check.spec)) {
        clearInterval(check.timer);
        this.checks.delete(key);
      }
    }
    for (const [name, spec] of specs) {
      const key = `${stackId}/${name}`;
      if (this.checks.has(key)) continue;
      const check: Check = {
        spec,
        result: null,
        running: false,
        generation: 0,
        timer: setInterval(() => void this.run(check), Math.max(200, spec.interval_ms)),
      };
      check.timer.unref();
      this.checks.set(key, check);
      void this.run(check);
    }
  }

  /** Forgets the results of services that were just (re)started: their old answers say nothing. */
  reset(stackId: string, names: string[]): void {
    for (const name of names) {
      const check = this.checks.get(`${stackId}/${name}`);
      if (check) {
        check.result = null;
        check.generation++;
      }
    }
  }

  removeStack(stackId: string): void {
    this.setStack(stackId, new Map());
  }

  result(stackId: string, name: string): HealthResultMsg | null {
    return this.checks.get(`${stackId}/${name}`)?.result ?? null;
  }

  close(): void {
    for (const check of this.checks.values()) clearInterval(check.timer);
    this.checks.clear();
  }

  private async run(check: Check): Promise<void> {
    if (check.running) return;
    check.running = true;
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
    } finally {
      check.running = false;
    }
  }
}

const sameSpec = (a: HealthCheckSpec, b: HealthCheckSpec) =>
  a.path === b.path && a.port === b.port && a.interval_ms === b.interval_ms;
