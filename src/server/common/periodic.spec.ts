import type { Logger } from '@nestjs/common';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { every } from './periodic.js';

/** A logger that keeps what it is given. */
function recorder() {
  const calls: { level: string; fields: Record<string, unknown>; msg: string }[] = [];
  const at = (level: string) => (fields: Record<string, unknown>, msg: string) =>
    calls.push({ level, fields, msg });
  return {
    calls,
    logger: { debug: at('debug'), verbose: at('trace'), warn: at('warn') } as unknown as Logger,
  };
}

describe('every', () => {
  afterEach(() => vi.useRealTimers());

  it('never overlaps a run still going, records each run, and logs a failure without throwing', async () => {
    vi.useFakeTimers();
    const { calls, logger } = recorder();
    let release: () => void = () => undefined;
    let runs = 0;
    const timer = every(logger, 'slow', 10_000, () => {
      runs += 1;
      if (runs === 1) return new Promise<void>((resolve) => (release = resolve));
      if (runs === 2) throw new Error('boom');
      return undefined;
    });
    await vi.advanceTimersByTimeAsync(10_000);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(runs).toBe(1);
    expect(calls.map((c) => c.msg)).toEqual(['scheduled run skipped: the previous run is still going']);
    release();
    await vi.advanceTimersByTimeAsync(10_000);
    await vi.advanceTimersByTimeAsync(10_000);
    clearInterval(timer);
    expect(runs).toBe(3);
    expect(calls.map((c) => `${c.level} ${c.msg}`)).toEqual([
      'debug scheduled run skipped: the previous run is still going',
      'debug scheduled run',
      'warn scheduled run failed',
      'debug scheduled run',
    ]);
    expect(calls[1].fields).toMatchObject({ task: 'slow' });
  });

  it('records tasks that run more often than every 5 s at trace', async () => {
    vi.useFakeTimers();
    const { calls, logger } = recorder();
    const timer = every(logger, 'fast', 250, () => undefined);
    await vi.advanceTimersByTimeAsync(250);
    clearInterval(timer);
    expect(calls).toEqual([
      { level: 'trace', fields: expect.objectContaining({ task: 'fast' }), msg: 'scheduled run' },
    ]);
  });
});
