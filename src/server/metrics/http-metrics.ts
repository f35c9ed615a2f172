import { Injectable } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { Counter, Histogram } from 'prom-client';
import { METRIC, UNMATCHED_ROUTE } from './metric-names.js';

const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Records every answered request, 404s and body-parser refusals included, with bounded labels. */
@Injectable()
export class HttpMetrics {
  constructor(
    @InjectMetric(METRIC.apiRequests) private readonly requests: Counter<string>,
    @InjectMetric(METRIC.apiRequestDuration) private readonly duration: Histogram<string>,
  ) {}

  /** Counts the request when its response finishes; `route` is read then, once routing is done. */
  track(req: IncomingMessage, res: ServerResponse, route: () => string): void {
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const method = req.method ?? 'OTHER';
      const labels = {
        method: KNOWN_METHODS.has(method) ? method : 'OTHER',
        route: route(),
        status: String(res.statusCode),
      };
      this.requests.inc(labels);
      this.duration.observe(labels, seconds);
    });
  }

  /** Express middleware; mounted first so it sees every request that reaches Express. */
  readonly middleware = (req: Request, res: Response, next: NextFunction): void => {
    this.track(req, res, () => routeTemplate(req));
    next();
  };
}

/**
 * The matched route's template (`/api/v1/orchestrator/stacks/:id`), never the raw path. Nest mounts
 * middleware (body parsing) and its not-found handler as `<template>{/*splat}` routes: a body refused
 * before routing keeps its route's template, an unknown path becomes `unmatched`.
 */
export function routeTemplate(req: Request): string {
  const route = req.route as { path?: unknown } | undefined;
  if (typeof route?.path !== 'string') return UNMATCHED_ROUTE;
  const template = `${req.baseUrl}${route.path}`.replace(/\{\/\*splat\}$/, '');
  return template === '' ? UNMATCHED_ROUTE : template;
}
