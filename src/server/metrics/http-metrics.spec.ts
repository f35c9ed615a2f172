import type { Request } from 'express';
import { describe, expect, it } from 'vitest';
import { routeTemplate } from './http-metrics.js';

const req = (path: string | undefined, baseUrl = ''): Request =>
  ({ route: path === undefined ? undefined : { path }, baseUrl }) as unknown as Request;

describe('routeTemplate', () => {
  it('uses the matched template, never the raw path', () => {
    expect(routeTemplate(req('/api/v1/orchestrator/stacks/:id'))).toBe('/api/v1/orchestrator/stacks/:id');
  });
  it('keeps the route of a middleware that answered before the handler', () => {
    expect(routeTemplate(req('/v1/orchestrator/settings{/*splat}'))).toBe('/v1/orchestrator/settings');
  });
  it('folds unknown paths into one value', () => {
    expect(routeTemplate(req(undefined))).toBe('unmatched');
    expect(routeTemplate(req('{/*splat}'))).toBe('unmatched');
  });
});
