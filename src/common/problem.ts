import type { Request, Response } from 'express';
import { STATUS_CODES } from 'node:http';
import type { ProblemFieldError } from './app-error.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** RFC 9457 body with the service's `code` and `request_id` extensions. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  code: string;
  request_id: string;
  errors?: ProblemFieldError[];
}

export interface ProblemInput {
  status: number;
  code: string;
  title?: string;
  detail: string;
  errors?: ProblemFieldError[];
  headers?: Record<string, string>;
}

/** Problem types are URNs named after the stable code, documented in docs/api.md. */
export const problemType = (code: string): string => `urn:stack-orchestrator:problem:${code}`;

/** The request id the request-id middleware assigned (also the X-Request-Id response header). */
export function requestIdOf(req: Request): string {
  return (req as Request & { id?: string }).id ?? '';
}

export function buildProblem(req: Request, input: ProblemInput): Problem {
  const problem: Problem = {
    type: problemType(input.code),
    title: input.title ?? STATUS_CODES[input.status] ?? 'Error',
    status: input.status,
    detail: input.detail,
    instance: req.originalUrl.split('?')[0],
    code: input.code,
    request_id: requestIdOf(req),
  };
  if (input.errors && input.errors.length > 0) problem.errors = input.errors;
  return problem;
}

/** Writes a problem response; used by the global filter and by middleware that runs before routing. */
export function sendProblem(req: Request, res: Response, input: ProblemInput): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  for (const [name, value] of Object.entries(input.headers ?? {})) res.setHeader(name, value);
  res.status(input.status);
  res.setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
  res.setHeader('Cache-Control', 'no-store');
  res.send(JSON.stringify(buildProblem(req, input)));
}
