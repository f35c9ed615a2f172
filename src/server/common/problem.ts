import type { Request, Response } from 'express';
import { STATUS_CODES } from 'node:http';
import type { OAuthError, Problem, ProblemFieldError } from '../../contracts/api/problem.js';
import { pathOfUrl } from './paths.js';

/** The body `buildProblem` makes, declared with the other API shapes; re-exported for the server's use. */
export type { Problem } from '../../contracts/api/problem.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export interface ProblemInput {
  /** RFC 6749 error code, for errors of the token endpoint. */
  oauthError?: string;
  status: number;
  code: string;
  title?: string;
  detail: string;
  errors?: ProblemFieldError[];
  /** A stack definition's warnings on a 422 (always present there, possibly empty). */
  warnings?: ProblemFieldError[];
  headers?: Record<string, string>;
}

/** Problem types are URNs named after the stable code, documented in docs/api.md. */
export const problemType = (code: string): string => `urn:stack-orchestrator:problem:${code}`;

/** The request id the request-id middleware assigned (also the X-Request-Id response header). */
export function requestIdOf(req: Request): string {
  return (req as Request & { id?: string }).id ?? '';
}

export function buildProblem(req: Request, input: ProblemInput): Problem {
  return problemFor(input, pathOfUrl(req.originalUrl), requestIdOf(req));
}

/** A problem body for a path and request id: what `buildProblem` makes, where no Express request exists. */
export function problemFor(input: ProblemInput, instance: string, requestId: string): Problem {
  const problem: Problem = {
    type: problemType(input.code),
    title: input.title ?? STATUS_CODES[input.status] ?? 'Error',
    status: input.status,
    detail: input.detail,
    instance,
    code: input.code,
    request_id: requestId,
  };
  if (input.errors && input.errors.length > 0) problem.errors = input.errors;
  if (input.warnings) problem.warnings = input.warnings;
  return problem;
}

/**
 * The routes that answer RFC 6749 error bodies instead of problems (CONTRACT.md): the token
 * endpoint, and the revocation endpoint (RFC 7009 2.2.1 uses the same shape).
 */
export const OAUTH_PATHS: readonly string[] = ['/oauth/token', '/oauth/revoke'];

/** RFC 6749 section 5.2 code for an error that is not already one. */
function oauthErrorFor(status: number): string {
  if (status === 401) return 'invalid_client';
  if (status === 429 || status === 503) return 'temporarily_unavailable';
  if (status >= 500) return 'server_error';
  return 'invalid_request';
}

/**
 * Writes an error response; used by the global filter and by middleware that runs before routing.
 * Problems everywhere, except the token endpoint, which speaks RFC 6749.
 */
export function sendProblem(req: Request, res: Response, input: ProblemInput): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  for (const [name, value] of Object.entries(input.headers ?? {})) res.setHeader(name, value);
  res.status(input.status);
  // originalUrl: inside mounted middleware req.path is relative to the mount point.
  if (OAUTH_PATHS.includes(pathOfUrl(req.originalUrl))) {
    res.setHeader('Pragma', 'no-cache');
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    const body: OAuthError = {
      error: input.oauthError ?? oauthErrorFor(input.status),
      error_description: input.detail,
    };
    res.send(JSON.stringify(body));
    return;
  }
  res.setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
  res.send(JSON.stringify(buildProblem(req, input)));
}
