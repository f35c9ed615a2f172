/**
 * The engine's failures, typed by how the Prometheus HTTP API reports them: `bad_data` (400) for
 * a query that does not parse or type-check (or is nested too deeply), `execution` (422) for one
 * that fails while running (many-to-many matching, too many samples or series, a bad regex in
 * label_replace...), `timeout` (503) when the deadline passes, `canceled` (499, Prometheus's
 * status for it) when the caller gave up (its AbortSignal fired: the client went away).
 */
export type PromqlErrorType = 'bad_data' | 'execution' | 'timeout' | 'canceled';

export abstract class PromqlError extends Error {
  abstract readonly errorType: PromqlErrorType;
}

export class PromqlParseError extends PromqlError {
  readonly errorType = 'bad_data' as const;
  /** Prometheus words it `<line>:<col>: parse error: <message>`. */
  constructor(
    message: string,
    readonly position: { line: number; column: number } = { line: 1, column: 1 },
  ) {
    super(`${position.line}:${position.column}: parse error: ${message}`);
  }
}

/** A query acceptable in general but not for this call (e.g. a range vector for a range query). */
export class PromqlBadQueryError extends PromqlError {
  readonly errorType = 'bad_data' as const;
}

export class PromqlExecutionError extends PromqlError {
  readonly errorType = 'execution' as const;
}

export class PromqlTimeoutError extends PromqlError {
  readonly errorType = 'timeout' as const;
  constructor(where = 'query execution') {
    super(`query timed out in ${where}`);
  }
}

/** The query's AbortSignal fired (Prometheus's ErrQueryCanceled). */
export class PromqlCanceledError extends PromqlError {
  readonly errorType = 'canceled' as const;
  constructor(where = 'query execution') {
    super(`query was canceled in ${where}`);
  }
}

export function tooManySamples(): PromqlExecutionError {
  return new PromqlExecutionError(
    'query processing would load too many samples into memory in query execution',
  );
}
