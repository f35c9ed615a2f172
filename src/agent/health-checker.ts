import { isDeepStrictEqual } from 'node:util';
import type { HealthResultMsg } from '../contracts/agent-protocol/index.js';
import type { ExecResult, HealthCheckSpec, HealthWait, StartConditionHooks } from './drivers/driver.js';
import { ServiceLoops, type ServiceLoop } from './service-loops.js';

const MAX_TIMEOUT_MS = 5000;
/** Compose's defaults for what a command check leaves out. */
const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_RETRIES = 3;
const DEFAULT_START_INTERVAL_MS = 5000;
/** How often a command check's loop looks whether its next run is due (its interval varies). */
const COMMAND_TICK_MS = 100;
const MAX_ERROR_CHARS = 200;
const MAX_URL_CHARS = 120;

/** Runs a command in a service (the driver's `exec`). */
export type ExecInService = (
  stackId: string,
  name: string,
  argv: string[],
  timeoutMs: number,
) => Promise<ExecResult>;

/** Where a check stands: no verdict yet, or Compose's healthy / unhealthy. */
export type HealthVerdict = 'starting' | 'healthy' | 'unhealthy';

interface Check extends ServiceLoop<HealthCheckSpec> {
  result: HealthResultMsg | null;
  /** Bumped by reset, so a check in flight across a restart does not write a stale answer. */
  generation: number;
  // Command checks only:
  verdict: HealthVerdict;
  /** When the service (re)started as far as the check knows: its start period runs from here. */
  since: number;
  /** Failures in a row that counted (outside the start period). */
  failures: number;
  /** Passed once since `since`: the start period is over. */
  passed: boolean;
  /** When the next run is due (clock ms). */
  nextAt: number;
}

const isCommand = (spec: HealthCheckSpec) => spec.type === 'command';

/**
 * Runs each service's health check at its interval and keeps the latest result.
 *
 * HTTP checks: GET 127.0.0.1:<port><path>; ok for a 2xx or 3xx answer within the timeout.
 *
 * Command checks (docs/drivers.md, "Command health checks"): `test` runs in the service through the
 * driver; exit 0 passes. Compose's rules: the first run is at once; during `start_period_ms`, until
 * a first pass, a failure does not count and runs are `start_interval_ms` apart; after `retries`
 * counted failures in a row the service is unhealthy; one pass makes it healthy. `ok` is the verdict
 * (healthy), not the last run's outcome.
 */
export class HealthChecker {
  private readonly checks = new ServiceLoops<HealthCheckSpec, Check>({
    create: (stackId, name, spec) => ({
      stackId,
      name,
      spec,
      result: isCommand(spec) ? this.starting(spec) : null,
      generation: 0,
      verdict: 'starting',
      since: this.clock(),
      failures: 0,
      passed: false,
      nextAt: 0,
    }),
    run: (check) => (isCommand(check.spec) ? this.runCommand(check) : this.run(check)),
    intervalMs: (spec) => (isCommand(spec) ? COMMAND_TICK_MS : Math.max(200, spec.interval_ms)),
    same: (a, b) =>
      a.path === b.path &&
      a.port === b.port &&
      a.interval_ms === b.interval_ms &&
      (a.type ?? '') === (b.type ?? '') &&
      isDeepStrictEqual(a.test ?? [], b.test ?? []) &&
      (a.timeout_ms ?? 0) === (b.timeout_ms ?? 0) &&
      (a.retries ?? 0) === (b.retries ?? 0) &&
      (a.start_period_ms ?? 0) === (b.start_period_ms ?? 0) &&
      (a.start_interval_ms ?? 0) === (b.start_interval_ms ?? 0),
  });

  constructor(
    /** Runs a command check's test in its service; without it a command check always fails. */
    private readonly exec?: ExecInService,
    /** Milliseconds, for the start period and the intervals of command checks. */
    private readonly clock: () => number = Date.now,
  ) {}

  /** Sets the checks of one stack's services (name -> check); others of the stack stop. */
  setStack(stackId: string, specs: Map<string, HealthCheckSpec>): void {
    this.checks.setStack(stackId, specs);
  }

  /** Sets one service's check (started at once when new or changed), leaving the stack's others. */
  set(stackId: string, name: string, spec: HealthCheckSpec): void {
    this.checks.set(stackId, name, spec);
  }

  /** Forgets the results of services that were just (re)started: their old answers say nothing. */
  reset(stackId: string, names: string[]): void {
    for (const name of names) {
      const check = this.checks.get(stackId, name);
      if (check) {
        check.generation++;
        check.result = isCommand(check.spec) ? this.starting(check.spec) : null;
        check.verdict = 'starting';
        check.since = this.clock();
        check.failures = 0;
        check.passed = false;
        check.nextAt = 0;
      }
    }
  }

  removeStack(stackId: string): void {
    this.checks.removeStack(stackId);
  }

  result(stackId: string, name: string): HealthResultMsg | null {
    return this.checks.get(stackId, name)?.result ?? null;
  }

  /**
   * Where the service's check stands, null when it has none: a command check's verdict; an HTTP
   * check is healthy while its last answer was ok and starting otherwise (it is never unhealthy).
   */
  verdict(stackId: string, name: string): HealthVerdict | null {
    const check = this.checks.get(stackId, name);
    if (!check) return null;
    if (isCommand(check.spec)) return check.verdict;
    return check.result?.ok ? 'healthy' : 'starting';
  }

  close(): void {
    this.checks.close();
  }

  private starting(spec: HealthCheckSpec): HealthResultMsg {
    return {
      url: commandLabel(spec.test ?? []),
      status_code: 0,
      latency_ms: 0,
      ok: false,
      error: 'starting',
      checked_at: new Date().toISOString(),
    };
  }

  private async runCommand(check: Check): Promise<void> {
    if (this.clock() < check.nextAt) return;
    const generation = check.generation;
    const spec = check.spec;
    const timeoutMs = spec.timeout_ms || DEFAULT_TIMEOUT_MS;
    const started = performance.now();
    let passed = false;
    let output: string;
    try {
      if (!this.exec) throw new Error('this driver cannot run commands in a service');
      const result = await withTimeout(
        this.exec(check.stackId, check.name, spec.test ?? [], timeoutMs),
        // The driver stops its own run at the timeout; this is in case it does not.
        timeoutMs + 1000,
        `timed out after ${timeoutMs} ms`,
      );
      passed = result.exitCode === 0;
      output = passed ? '' : lastLines(result.output) || `exit code ${result.exitCode}`;
    } catch (err) {
      output = (err as Error).message;
    }
    if (generation !== check.generation) return;
    const now = this.clock();
    this.record(check, passed, now);
    const inStartPeriod = !check.passed && now - check.since < (spec.start_period_ms ?? 0);
    check.nextAt =
      now +
      (inStartPeriod ? spec.start_interval_ms || DEFAULT_START_INTERVAL_MS : Math.max(200, spec.interval_ms));
    check.result = {
      url: commandLabel(spec.test ?? []),
      status_code: 0,
      latency_ms: Math.round(performance.now() - started),
      ok: check.verdict === 'healthy',
      error:
        check.verdict === 'starting'
          ? 'starting'
          : check.verdict === 'healthy'
            ? ''
            : output.slice(-MAX_ERROR_CHARS),
      checked_at: new Date().toISOString(),
    };
  }

  /** One run's outcome in Compose's rules. */
  private record(check: Check, passed: boolean, now: number): void {
    if (passed) {
      check.passed = true;
      check.failures = 0;
      check.verdict = 'healthy';
      return;
    }
    // Before a first pass, failures within the start period do not count.
    if (!check.passed && now - check.since < (check.spec.start_period_ms ?? 0)) return;
    check.failures++;
    if (check.failures >= (check.spec.retries || DEFAULT_RETRIES)) check.verdict = 'unhealthy';
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

/**
 * What the reconcile of a provision needs for start conditions (the job runner's wiring): each
 * service's check starts as soon as the service is ensured (from scratch when it was (re)started;
 * `started` collects those names), and a dependant waits on its dependency's verdict, polled.
 */
export function startConditionHooks(
  health: HealthChecker,
  stackId: string,
  checks: Map<string, HealthCheckSpec>,
  started = new Set<string>(),
  pollMs = 200,
): StartConditionHooks {
  return {
    ensured: (name, action) => {
      const check = checks.get(name);
      if (!check) return;
      if (action !== 'unchanged') health.reset(stackId, [name]);
      health.set(stackId, name, check);
      started.add(name);
    },
    waitHealthy: async (name, signal): Promise<HealthWait> => {
      const check = checks.get(name);
      if (!check) return 'none';
      // A kept dependency was not ensured: its check (and its verdict so far) as it is, or anew.
      health.set(stackId, name, check);
      for (;;) {
        if (signal.aborted) return 'cancelled';
        const verdict = health.verdict(stackId, name);
        if (verdict === 'healthy' || verdict === 'unhealthy') return verdict;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, pollMs);
          function done() {
            clearTimeout(timer);
            signal.removeEventListener('abort', done);
            resolve();
          }
          signal.addEventListener('abort', done, { once: true });
        });
      }
    },
  };
}

/** `exec: <argv>` for the result's url field: the test's words, cut short (never an environment). */
export function commandLabel(argv: string[]): string {
  const label = `exec: ${argv.join(' ')}`;
  return label.length > MAX_URL_CHARS ? `${label.slice(0, MAX_URL_CHARS - 1)}…` : label;
}

/** The last lines of a command's output, at most MAX_ERROR_CHARS of them. */
function lastLines(output: string): string {
  const lines = output
    .split('\n')
    .map((l) => l.trimEnd())
    .filter(Boolean);
  return lines.join('\n').slice(-MAX_ERROR_CHARS);
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
