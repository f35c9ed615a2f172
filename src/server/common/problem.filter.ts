import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { isDataException, isDatabaseUnavailable } from '../database/database-errors.js';
import { AppError, ValidationFailedError } from './app-error.js';
import { ProblemInput, sendProblem } from './problem.js';
import { pathOfUrl } from './paths.js';

const CODE_BY_STATUS: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'validation_failed',
  429: 'rate_limited',
  503: 'unavailable',
};

/**
 * The one place errors become responses: RFC 9457 problem+json with `code` and `request_id`.
 * Unexpected errors are logged with their stack and answered as a bare 500 `internal`.
 */
@Catch()
export class ProblemFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const req = ctx.getRequest<Request>();
    const res = ctx.getResponse<Response>();
    sendProblem(req, res, this.toProblem(exception, req));
  }

  private toProblem(exception: unknown, req: Request): ProblemInput {
    if (exception instanceof AppError) {
      return {
        oauthError: exception.oauthError,
        status: exception.status,
        code: exception.code,
        title: exception.title,
        detail: exception.message,
        errors: exception.errors,
        ...(exception instanceof ValidationFailedError && exception.warnings
          ? { warnings: exception.warnings }
          : {}),
        headers: exception.headers,
      };
    }
    if (exception instanceof HttpException && exception.getStatus() < 500) {
      const status = exception.getStatus();
      return {
        status,
        code: CODE_BY_STATUS[status] ?? 'bad_request',
        detail: this.clientDetail(exception, req),
      };
    }
    if (isDataException(exception)) {
      return {
        status: 400,
        code: 'bad_request',
        detail: 'A value in the request is not valid for its field.',
      };
    }
    if (isDatabaseUnavailable(exception)) {
      this.logger.warn(
        { err: exception, method: req.method, path: pathOfUrl(req.originalUrl) },
        'database unavailable',
      );
      return {
        status: 503,
        code: 'unavailable',
        detail: 'The service cannot reach its database right now; retry shortly.',
        headers: { 'Retry-After': '5' },
      };
    }
    this.logger.error(
      { err: exception, method: req.method, path: pathOfUrl(req.originalUrl) },
      'unhandled error',
    );
    return {
      status: 500,
      code: 'internal',
      detail: 'An internal error occurred; quote the request id to an operator.',
    };
  }

  /** Nest's own messages for 4xx are safe, but "Cannot GET /x" reads better as a sentence. */
  private clientDetail(exception: HttpException, req: Request): string {
    if (exception.getStatus() === 404) return `No route matches ${req.method} ${pathOfUrl(req.originalUrl)}.`;
    const response = exception.getResponse();
    if (typeof response === 'string') return response;
    const message = (response as { message?: unknown }).message;
    if (Array.isArray(message)) return message.join('; ');
    return typeof message === 'string' ? message : exception.message;
  }
}
