import type { Logger } from '@nestjs/common';

/** Tasks that run more often than this are recorded at trace, not debug: they would drown it. */
const FREQUENT_MS = 5000;

/**
 * Runs `run` every `intervalMs` (an unref'd timer: it never keeps the process alive). A run never
 * overlaps the previous one; each run writes a debug record with its duration (trace for frequent
 * tasks); a failure is logged as a warning and never escapes. Returns the timer for clearInterval.
 */
export function every(logger: Logger, task: string, intervalMs: number, run: () => unknown): NodeJS.Timeout {
  let running = false;
  const record = (fields: object, msg: string): void =>
    intervalMs < FREQUENT_MS ? logger.verbose(fields, msg) : logger.debug(fields, msg);
  const timer = setInterval(() => {
    if (running) {
      record({ task }, 'scheduled run skipped: the previous run is still going');
      return;
    }
    running = true;
    const started = performance.now();
    void Promise.resolve()
      .then(run)
      .then(
        () => record({ task, duration_ms: Math.round(performance.now() - started) }, 'scheduled run'),
        (err: unknown) => logger.warn({ err, task }, 'scheduled run failed'),
      )
      .finally(() => {
        running = false;
      });
  }, intervalMs);
  timer.unref();
  return timer;
}

/**
 * `every`, with a first run sooner: `first` after `firstMs` (capped at `intervalMs`; a failure is
 * logged as a warning), then `run` every `intervalMs`. Returns both timers for clearTimeout.
 */
export function firstThenEvery(
  logger: Logger,
  task: string,
  firstMs: number,
  intervalMs: number,
  first: () => Promise<unknown>,
  run: () => unknown = first,
): NodeJS.Timeout[] {
  const timer = setTimeout(
    () => void first().catch((err: unknown) => logger.warn({ err, task }, 'scheduled run failed')),
    Math.min(firstMs, intervalMs),
  );
  timer.unref();
  return [timer, every(logger, task, intervalMs, run)];
}
