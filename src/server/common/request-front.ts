import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { logRequest } from '../logging/logging.js';
import { routeTemplate, type HttpMetrics } from '../metrics/http-metrics.js';
import { RequestContext } from './request-context.js';
import { assignRequestId } from './request-id.middleware.js';
import { setSecurityHeaders } from './security-headers.js';

/**
 * The first middleware of every request that reaches Express, before any other: the request id,
 * the security headers and the request context; and once the response is done (or the client went
 * away), the request metrics and the request's log record. One router layer and one listener on
 * the response for all of it: each layer Express walks and each listener costs every request
 * (docs/benchmarks.md, "Authenticated requests").
 */
export function requestFront(metrics: HttpMetrics, logger: () => Logger) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = performance.now();
    const requestId = assignRequestId(req, res);
    setSecurityHeaders(res);
    // 'close' follows 'finish' (a tick later) and also ends a response the client abandoned.
    res.on('close', () => {
      const ms = performance.now() - started;
      const finished = res.writableFinished;
      if (finished) metrics.record(req, res, routeTemplate(req, res), ms / 1000);
      logRequest(logger(), req, res, ms, !finished);
    });
    RequestContext.run(req, requestId, next);
  };
}
