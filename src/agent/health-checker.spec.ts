import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ExecResult, HealthCheckSpec } from './drivers/driver.js';
import { HealthChecker } from './health-checker.js';

const STACK = 'a2c4e6f8-0000-4000-8000-000000000001';

const command = (over: Partial<HealthCheckSpec> = {}): HealthCheckSpec => ({
  path: '',
  port: 0,
  interval_ms: 1000,
  type: 'command',
  test: ['/bin/sh', '-c', 'test -f /tmp/ready'],
  timeout_ms: 2000,
  retries: 2,
  start_period_ms: 0,
  start_interval_ms: 500,
  ...over,
});

/** A fake service: the command passes while `passing` is set; each run is recorded with its time. */
function fakeExec() {
  const state = { passing: false, output: 'not ready\n', runs: [] as number[], hang: false };
  const start = Date.now();
  const exec = vi.fn((_stackId: string, _name: string, _argv: string[], _timeoutMs: number) => {
    state.runs.push(Date.now() - start);
    if (state.hang) return new Promise<ExecResult>(() => undefined);
    return Promise.resolve({ exitCode: state.passing ? 0 : 1, output: state.output });
  });
  return { state, exec };
}

describe('HealthChecker command checks (Compose rules)', () => {
  let checker: HealthChecker;

  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });

  afterEach(() => {
    checker?.close();
    vi.useRealTimers();
  });

  it('runs at once, every start_interval during the start period without counting failures, then counts them to unhealthy', async () => {
    const { state, exec } = fakeExec();
    checker = new HealthChecker(exec);
    checker.set(STACK, 'db', command({ start_period_ms: 3000 }));
    expect(checker.verdict(STACK, 'db')).toBe('starting');
    expect(checker.result(STACK, 'db')).toMatchObject({ ok: false, error: 'starting', status_code: 0 });
    await vi.advanceTimersByTimeAsync(2900);
    // At 0 (at once), then every 500 ms within the start period: failures there do not count.
    expect(state.runs).toEqual([0, 500, 1000, 1500, 2000, 2500]);
    expect(checker.verdict(STACK, 'db')).toBe('starting');
    await vi.advanceTimersByTimeAsync(1000); // t=3900: one counted failure (at 3000), retries 2
    expect(state.runs.slice(6)).toEqual([3000]);
    expect(checker.verdict(STACK, 'db')).toBe('starting');
    expect(checker.result(STACK, 'db')?.error).toBe('starting');
    await vi.advanceTimersByTimeAsync(200); // t=4100: the second counted failure, at the interval
    expect(state.runs.slice(7)).toEqual([4000]);
    expect(checker.verdict(STACK, 'db')).toBe('unhealthy');
    expect(checker.result(STACK, 'db')).toMatchObject({
      url: 'exec: /bin/sh -c test -f /tmp/ready',
      status_code: 0,
      ok: false,
      error: 'not ready',
    });
    expect(exec).toHaveBeenCalledWith(STACK, 'db', ['/bin/sh', '-c', 'test -f /tmp/ready'], 2000);
  });

  it('is healthy at the first pass, even within the start period, and ends the start period there', async () => {
    const { state, exec } = fakeExec();
    checker = new HealthChecker(exec);
    checker.set(STACK, 'db', command({ start_period_ms: 60_000 }));
    await vi.advanceTimersByTimeAsync(1100);
    expect(checker.verdict(STACK, 'db')).toBe('starting');
    state.passing = true;
    await vi.advanceTimersByTimeAsync(500); // the run at 1500
    expect(checker.verdict(STACK, 'db')).toBe('healthy');
    expect(checker.result(STACK, 'db')).toMatchObject({ ok: true, error: '' });
    // Once it passed, failures count even within the start period, and runs are interval apart.
    state.passing = false;
    const before = state.runs.length;
    await vi.advanceTimersByTimeAsync(1000); // one failure: still healthy (retries 2)
    expect(checker.verdict(STACK, 'db')).toBe('healthy');
    await vi.advanceTimersByTimeAsync(1000); // two in a row
    expect(checker.verdict(STACK, 'db')).toBe('unhealthy');
    expect(state.runs.slice(before)).toEqual([2500, 3500]);
  });

  it('recovers with one pass after being unhealthy, and a failure between passes resets the count', async () => {
    const { state, exec } = fakeExec();
    checker = new HealthChecker(exec);
    checker.set(STACK, 'db', command({ retries: 3 }));
    await vi.advanceTimersByTimeAsync(2100); // runs at 0, 1000, 2000: three failures
    expect(checker.verdict(STACK, 'db')).toBe('unhealthy');
    state.passing = true;
    await vi.advanceTimersByTimeAsync(1000);
    expect(checker.verdict(STACK, 'db')).toBe('healthy');
    state.passing = false;
    await vi.advanceTimersByTimeAsync(2000); // two failures
    state.passing = true;
    await vi.advanceTimersByTimeAsync(1000); // a pass: the streak is gone
    state.passing = false;
    await vi.advanceTimersByTimeAsync(2000); // two failures again: still healthy
    expect(checker.verdict(STACK, 'db')).toBe('healthy');
    await vi.advanceTimersByTimeAsync(1000);
    expect(checker.verdict(STACK, 'db')).toBe('unhealthy');
  });

  it('defaults: retries 3 and a 5 s start interval when left out (0)', async () => {
    const { state, exec } = fakeExec();
    checker = new HealthChecker(exec);
    checker.set(STACK, 'db', command({ retries: 0, start_interval_ms: 0, start_period_ms: 12_000 }));
    await vi.advanceTimersByTimeAsync(11_000);
    expect(state.runs).toEqual([0, 5000, 10_000]);
    await vi.advanceTimersByTimeAsync(4000); // the run at 15000 is the first counted failure
    expect(checker.verdict(STACK, 'db')).toBe('starting');
    await vi.advanceTimersByTimeAsync(2100); // 16000, 17000: three counted failures
    expect(state.runs.slice(3)).toEqual([15_000, 16_000, 17_000]);
    expect(checker.verdict(STACK, 'db')).toBe('unhealthy');
  });

  it('reset starts the verdict and the start period over (a restarted service)', async () => {
    const { state, exec } = fakeExec();
    checker = new HealthChecker(exec);
    checker.set(STACK, 'db', command({ start_period_ms: 1000 }));
    await vi.advanceTimersByTimeAsync(3100);
    expect(checker.verdict(STACK, 'db')).toBe('unhealthy');
    const before = state.runs.length;
    checker.reset(STACK, ['db']);
    expect(checker.verdict(STACK, 'db')).toBe('starting');
    expect(checker.result(STACK, 'db')?.error).toBe('starting');
    await vi.advanceTimersByTimeAsync(900);
    // At once after the reset, then start_interval apart again, failures uncounted.
    expect(state.runs.length - before).toBe(2);
    expect(checker.verdict(STACK, 'db')).toBe('starting');
  });

  it('a run past its timeout fails', async () => {
    const { state, exec } = fakeExec();
    state.hang = true;
    checker = new HealthChecker(exec);
    checker.set(STACK, 'db', command({ retries: 1, timeout_ms: 1000 }));
    await vi.advanceTimersByTimeAsync(2100);
    expect(checker.verdict(STACK, 'db')).toBe('unhealthy');
    expect(checker.result(STACK, 'db')?.error).toBe('timed out after 1000 ms');
  });

  it('without a way to run commands a command check fails; an HTTP check is healthy only while ok', async () => {
    checker = new HealthChecker();
    checker.set(STACK, 'db', command({ retries: 1 }));
    await vi.advanceTimersByTimeAsync(100);
    expect(checker.verdict(STACK, 'db')).toBe('unhealthy');
    expect(checker.result(STACK, 'db')?.error).toMatch(/cannot run commands/);
    checker.set(STACK, 'web', { path: '/', port: 1, interval_ms: 1000 });
    expect(checker.verdict(STACK, 'web')).toBe('starting');
    expect(checker.verdict(STACK, 'none')).toBeNull();
  });
});
