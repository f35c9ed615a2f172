import type { ProblemFieldError } from '../../contracts/api/problem.js';

/**
 * The base of every coded error a feature throws (each feature's `<f>.errors.ts` subclasses or
 * builds these). The global filter turns them into problem+json; the agent gateway maps the same
 * codes to gRPC status codes.
 */
export class AppError extends Error {
  /** Set on errors of the OAuth token endpoint, which answers RFC 6749 bodies instead of problems. */
  oauthError?: string;

  constructor(
    readonly status: number,
    readonly code: string,
    readonly title: string,
    detail: string,
    readonly errors?: ProblemFieldError[],
    readonly headers?: Record<string, string>,
  ) {
    super(detail);
    this.name = 'AppError';
  }
}

export class ValidationFailedError extends AppError {
  constructor(
    errors: ProblemFieldError[],
    detail = 'The request did not pass validation.',
    /** A stack definition's warnings, answered beside its errors (`warnings[]`). */
    readonly warnings?: ProblemFieldError[],
  ) {
    super(422, 'validation_failed', 'Validation failed', detail, errors);
  }
}

export class NotFoundError extends AppError {
  constructor(detail = 'The requested resource does not exist.') {
    super(404, 'not_found', 'Not Found', detail);
  }
}

export class ConflictError extends AppError {
  constructor(detail: string) {
    super(409, 'conflict', 'Conflict', detail);
  }
}

export class MethodNotAllowedError extends AppError {
  constructor(detail: string, allow = 'POST') {
    super(405, 'method_not_allowed', 'Method Not Allowed', detail, undefined, { Allow: allow });
  }
}
