import type { Request } from 'express';
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { routeTemplate } from './http-metrics.js';

const app = {
  router: {
    stack: [
      { route: { path: '/api/v1/auth/clients/:clientId', methods: { patch: true, delete: true } } },
      { route: { path: '/v1/orchestrator/settings', methods: { get: true, patch: true } } },
      { route: { path: '{/*splat}', methods: { _all: true } } },
    ],
  },
};
const req = (path: string | undefined, originalUrl = '/', method = 'GET'): Request =>
  ({
    route: path === undefined ? undefined : { path },
    baseUrl: '',
    originalUrl,
    method,
    app,
  }) as unknown as Request;
const status = (statusCode: number) => ({ statusCode }) as ServerResponse;

describe('routeTemplate', () => {
  it('uses the matched template, never the raw path', () => {
    expect(routeTemplate(req('/api/v1/orchestrator/stacks/:id'), status(200))).toBe(
      '/api/v1/orchestrator/stacks/:id',
    );
  });
  it('names a request answered before routing after the route it was sent to', () => {
    expect(routeTemplate(req(undefined, '/api/v1/auth/clients/cli_x?y=1', 'PATCH'), status(400))).toBe(
      '/api/v1/auth/clients/:clientId',
    );
    expect(routeTemplate(req(undefined, '/V1/orchestrator/settings/', 'PATCH'), status(413))).toBe(
      '/v1/orchestrator/settings',
    );
    expect(routeTemplate(req(undefined, '/v1/orchestrator/settings', 'POST'), status(400))).toBe('unmatched');
  });
  it('folds unknown paths into one value', () => {
    expect(routeTemplate(req(undefined, '/nope'), status(404))).toBe('unmatched');
    expect(routeTemplate(req('{/*splat}', '/nope'), status(404))).toBe('unmatched');
    expect(routeTemplate(req(undefined, '/nope/deeper', 'PUT'), status(400))).toBe('unmatched');
  });
});
