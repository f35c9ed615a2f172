import { Injectable } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request } from 'express';
import type { Counter, Histogram } from 'prom-client';
import { METRIC, UNMATCHED_ROUTE } from './metric-names.js';
import { pathOfUrl } from '../common/paths.js';

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
    const started = performance.now();
    res.once('finish', () => this.record(req, res, route(), (performance.now() - started) / 1000));
  }

  /** Counts one answered request (the request front calls this when the response is done). */
  record(req: IncomingMessage, res: ServerResponse, route: string, seconds: number): void {
    const method = req.method ?? 'OTHER';
    const labels = {
      method: KNOWN_METHODS.has(method) ? method : 'OTHER',
      route,
      status: String(res.statusCode),
    };
    this.requests.inc(labels);
    this.duration.observe(labels, seconds);
  }
}

/**
 * The matched route's template (`/api/v1/orchestrator/stacks/:id`), never the raw path. Nest mounts
 * its not-found handler as a `{/*splat}` route: an unknown path becomes `unmatched`. A request
 * answered before routing (a body the body parser refused) is named after the route its method and
 * path would have reached, found among the application's routes, or `unmatched`.
 */
export function routeTemplate(req: Request, res: ServerResponse): string {
  const route = req.route as { path?: unknown } | undefined;
  if (typeof route?.path === 'string') {
    const template = `${req.baseUrl}${route.path}`.replace(/\{\/\*splat\}$/, '');
    return template === '' ? UNMATCHED_ROUTE : template;
  }
  // Only a refusal before routing is looked up: not a 404, nor the console's files.
  if (res.statusCode < 400 || res.statusCode === 404) return UNMATCHED_ROUTE;
  return routeTable(req.app).find(req.method, pathOfUrl(req.originalUrl)) ?? UNMATCHED_ROUTE;
}

interface RouteEntry {
  methods: ReadonlySet<string>;
  pattern: RegExp;
  template: string;
}

interface RouterStack {
  router?: { stack?: { route?: { path?: unknown; methods?: Record<string, boolean> } }[] };
}

/** The application's routes in Express's order, as templates and patterns; built on first use. */
class RouteTable {
  private entries: RouteEntry[] | undefined;

  constructor(private readonly app: RouterStack) {}

  find(method: string, path: string): string | undefined {
    this.entries ??= this.build();
    const m = method.toLowerCase();
    return this.entries.find((e) => (e.methods.has(m) || e.methods.has('_all')) && e.pattern.test(path))
      ?.template;
  }

  private build(): RouteEntry[] {
    const entries: RouteEntry[] = [];
    for (const layer of this.app.router?.stack ?? []) {
      const path = layer.route?.path;
      // Plain `:name` segments only: the not-found handler's `{/*splat}` must not name anything.
      if (typeof path !== 'string' || /[{}*()?]/.test(path)) continue;
      const source = path
        .split('/')
        .map((segment) =>
          segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
        )
        .join('/');
      entries.push({
        methods: new Set(Object.keys(layer.route?.methods ?? {})),
        pattern: new RegExp(`^${source}/?$`, 'i'), // Express matches paths case-insensitively
        template: path,
      });
    }
    return entries;
  }
}

const tables = new WeakMap<RouterStack, RouteTable>();

function routeTable(app: RouterStack): RouteTable {
  let table = tables.get(app);
  if (!table) tables.set(app, (table = new RouteTable(app)));
  return table;
}
